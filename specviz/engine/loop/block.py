"""Block verification: a chain's drafts judged jointly (Sun, Mendlovic, Leviathan, Aharoni, Beirami,
Ro, Suresh, "Block Verification Accelerates Speculative Decoding", ICLR 2025, Algorithm 2).

The token-wise rule (acceptance.py) keeps draft i with min(1, p/q) and stops at its first rejection.
Block verification looks at the whole block x_1..x_k at once: it keeps, for every draft, target and k,
at least as many drafts in expectation, and its output is still distributed exactly as the target's.
With p_i = p(.|x_<i) the target and q_i = q(.|x_<i) the draft (both warped alike) at position i:

    weights   w_0 = 1,  w_i = min(1, w_{i-1} p_i(x_i) / q_i(x_i))     the target mass the prefix x_<=i
                                                                     still has left over the draft's
    residual  r_i = norm(max(0, w_i p_{i+1} - q_{i+1}))   (i < k)    what follows a kept prefix of i
              r_k = p_{k+1}                                          (the bonus after all k)
    test      h_i = S_i / (S_i + 1 - w_i),  S_i = sum max(0, w_i p_{i+1} - q_{i+1})   (1 <= i < k)
              h_k = w_k
    draw      eta_1..eta_k ~ U[0, 1); keep the LONGEST prefix whose test passes, tau = max{i: eta_i < h_i}
              (0 if none): read from the end of the block backwards, prefix i is kept with probability
              h_i given that no longer prefix was; then one token from r_tau.

At k = 1 this is the token-wise rule (h_1 = w_1 = min(1, p/q), r_0 = norm(max(0, p - q))). At
temperature 0 (p and q one-hot) w_i is 1 while the drafts match the argmax and 0 after, so tau is the
longest matching prefix: the engine's argmax match. With a one-hot draft (prompt lookup) the law of
tau is the token-wise rule's (P(tau >= i) = prod p(x_j) either way: no rule can keep more of a
deterministic draft), so the gain is for sampled drafts. A token tree has no block form here: the
weights follow one path, and the joint test over siblings' recursive residuals is not derived (config
refuses it). Everything runs on the models' device with no data-dependent branch.
"""
from __future__ import annotations

import torch

__all__ = ["block_weights", "block_test", "kept_prefix"]


def block_weights(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """w_1..w_k from p_i(x_i) and q_i(x_i) (each (k,)): w_i = min(1, w_{i-1} p_i(x_i) / q_i(x_i)), w_0 = 1.
    q_i(x_i) > 0 since x_i was drawn from q_i. A short loop over k of device ops (no host read)."""
    ratio = p_x / q_x
    w, out = torch.ones((), dtype=p_x.dtype, device=p_x.device), []
    for i in range(p_x.numel()):
        w = torch.clamp(w * ratio[i], max=1.0)      # the mass left can only shrink, and caps at 1
        out.append(w)
    return torch.stack(out) if out else p_x.new_zeros(0)


def block_test(p: torch.Tensor, q: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """p (k + 1, V) target rows (row i after x_1..x_i), q (k, V) draft rows, x (k,) drafts ->
    (h (k,): the joint test of prefixes 1..k, residual (k + 1, V): row i the distribution after a
    kept prefix of i, weights (k,): w_1..w_k)."""
    k = x.numel()
    p_x = p[:k].gather(1, x.view(-1, 1)).view(-1)
    q_x = q.gather(1, x.view(-1, 1)).view(-1)
    w = block_weights(p_x, q_x)
    # The weight of each prefix length 0..k-1, the one its row of the residual scales p by (w_0 = 1).
    w_rows = torch.cat([w.new_ones(1), w[:-1]]).unsqueeze(-1)                    # (k, 1)
    excess = torch.clamp(w_rows * p[:k] - q, min=0.0)                            # max(0, w_i p_{i+1} - q_{i+1})
    mass = excess.sum(-1)                                                        # S_0..S_{k-1}
    # Row i < k: norm(excess). A row with no excess is never drawn from (w_i = 1 and no excess make
    # every later w equal 1, so a longer prefix is kept for sure; i = 0 can only be reached when some
    # excess exists); it falls back to p there.
    res = torch.where(mass.unsqueeze(-1) > 0, excess / mass.clamp_min(1e-30).unsqueeze(-1), p[:k])
    residual = torch.cat([res, p[k:]])                                           # row k: the bonus, p_{k+1}
    # h_i = S_i / (S_i + 1 - w_i) for 1 <= i < k (S_i is row i's excess mass, w_i = w[i - 1]); h_k = w_k.
    # 0 / 0 (w_i = 1, no excess) is 1: as above, a longer prefix is then kept anyway.
    s, left = mass[1:], 1.0 - w[:-1]
    denom = s + left
    h_inner = torch.where(denom > 0, s / denom.clamp_min(1e-30), torch.ones_like(s))
    h = torch.cat([h_inner, w[-1:]])
    return h, residual, w


def kept_prefix(h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """tau = max{i : u_i < h_i} (0 if none), as a 0-d tensor: the longest prefix whose joint test passed
    (checked from the end backwards, the first pass decides)."""
    lengths = torch.arange(1, h.numel() + 1, device=h.device)
    return torch.where(u < h, lengths, torch.zeros_like(lengths)).max() if h.numel() else lengths.new_zeros(())
