"""Verification of a round's drafts: the speculative-sampling acceptance rule.

Convention, used everywhere in specviz (as in transformers; gpt-fast swaps the names):
    p = the target's (warped) distribution,  q = the draft's (warped) distribution.
For drafts x_1..x_k with x_i ~ q_i, and target distributions p_1..p_{k+1} from one pass
(Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2):
    accept x_i with probability min(1, p_i(x_i) / q_i(x_i))   (draw u_i ~ U[0,1), accept if u_i < that)
    at the first rejection i, output y ~ norm(max(0, p_i - q_i)) and stop the round;
    if all k are accepted, output a bonus y ~ p_{k+1}.
Each output token is then distributed exactly as the target would sample it.
Greedy (temperature 0): accept x_i iff it is the argmax of the target's logits; the
correction or bonus is the target's argmax. A prompt-lookup draft has one-hot q, for
which the same rule accepts with probability p_i(x_i) and resamples from p_i without x_i.

All of it runs on the models' device with no data-dependent branch; the host reads the
result once per round (the packed `.tolist()` at the end of `verify`), the only device-to-host
sync of a round.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .config import SpecConfig
from .rules import get_rule
from .sampling import choose, warp

TOP_RESIDUAL = 5  # entries of the residual distribution reported for the teaching view
TOP_PICTURE = 8   # most likely tokens of p and of q reported per judged position (the p-and-q picture)


@dataclass
class Verdict:
    n_accepted: int                # drafts accepted, 0..k
    next_token: int                # the correction (n < k) or the bonus (n == k)
    next_prob: float               # its probability under the distribution it was drawn from
    next_p: float                  # its target probability p_{n+1}
    drafts: list[int]              # the drafted token ids (read back in the same transfer)
    p: list[float]                 # p_i(x_i) for each draft
    q: list[float]                 # q_i(x_i) for each draft
    accept_prob: list[float]       # min(1, p/q), or 1/0 for an argmax match/mismatch
    u: list[float] | None          # the uniform draws; None when greedy
    top: list[tuple[int, float]]   # most likely entries of the distribution next_token came from
    # Per row i = 0..k (the k judged positions, then the bonus row): the union of the TOP_PICTURE most
    # likely tokens of p_i and of q_i as (id, p_i(id), q_i(id)), most likely under p first; the bonus
    # row has no q (None). And overlap_i = sum_x min(p_i(x), q_i(x)) over the whole vocabulary: the
    # chance the exact rule keeps a draft x ~ q_i (1 - total variation), so 1 - overlap_i is the mass
    # of the residual max(0, p_i - q_i) a correction is drawn from.
    pictures: list[list[tuple[int, float, float | None]]] = None
    overlap: list[float] = None


def verify(drafts: torch.Tensor, q_probs: torch.Tensor, target_logits: torch.Tensor,
           cfg: SpecConfig, gen: torch.Generator) -> Verdict:
    """drafts (k,), q_probs (k, V) and target_logits (k+1, V) -> the round's Verdict."""
    k = drafts.numel()
    rows = torch.arange(k, device=drafts.device)
    p = warp(target_logits, cfg)                      # (k+1, V)
    p_x = p[rows, drafts]                             # p_i(x_i)
    q_x = q_probs[rows, drafts]                       # q_i(x_i)
    if cfg.forced_acceptance is not None:
        # Benchmarking only (not lossless): accept with a fixed probability; corrections come from p.
        accept_prob = torch.full((k,), cfg.forced_acceptance, device=drafts.device)
        u = torch.rand(k, generator=gen, device=drafts.device)
        ok = u < accept_prob
        next_dist = p
        candidates = choose(target_logits, p, cfg, gen)
    elif cfg.greedy:
        ok = target_logits[:k].argmax(-1) == drafts   # argmax match
        accept_prob = ok.float()
        u = None
        next_dist = p                                 # correction/bonus: argmax of p_{n+1}
        candidates = choose(target_logits, p, cfg, gen)
    else:
        # The rule the config names (rules.py): "exact" keeps x with min(1, p/q) and corrects from
        # norm(max(0, p - q)); the others trade exactness for acceptance.
        rule = get_rule(cfg.rule)
        accept_prob = rule.accept_prob(p[:k], q_probs, drafts)
        correction = rule.correction(p[:k], q_probs, drafts)
        u = torch.rand(k, generator=gen, device=drafts.device)
        ok = u < accept_prob
        next_dist = torch.cat([correction, p[k:]])   # row i < k: residual (or the rule's correction); row k: p_{k+1}
        candidates = choose(target_logits, next_dist, cfg, gen)  # one draw per row, used: row n
    # n = number of leading accepts (the first rejection ends the round). It stays on the device:
    # indexing with a tensor would be an implicit .item(), i.e. a device-to-host sync on CUDA.
    n = (torch.cumprod(ok.long(), dim=0).sum() if k else torch.zeros((), dtype=torch.long, device=drafts.device)).view(1)
    next_token = candidates.index_select(0, n)                  # (1,) the correction or the bonus
    row = next_dist.index_select(0, n)[0]                       # the distribution it was drawn from
    p_next = p.index_select(0, n)[0].gather(0, next_token)      # its target probability p_{n+1}
    top_probs, top_ids = torch.topk(row, min(TOP_RESIDUAL, row.numel()))
    picture = _picture(p, q_probs, candidates)
    packed = torch.cat([
        n.double(), next_token.double(), row.gather(0, next_token).double(), p_next.double(),
        drafts.double(), p_x.double(), q_x.double(), accept_prob.double(),
        (u.double() if u is not None else p_x.new_zeros(0, dtype=torch.float64)),
        top_ids.double(), top_probs.double(), picture,
    ])
    values = packed.tolist()        # the round's one device-to-host read
    n_top = top_ids.numel()
    verdict, rest = _unpack(values, k, greedy=u is None, n_top=n_top)
    verdict.pictures, verdict.overlap = _unpack_picture(rest, k, min(TOP_PICTURE, p.size(-1)),
                                                        verdict)
    return verdict


def _picture(p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """What the p-and-q picture of every row needs, flat: p (k+1, V), q (k, V) and each row's drawn
    candidate (k+1,) -> the top ids of p (k+1 rows) and of q (k rows), p and q at both, each judged
    row's overlap sum min(p, q), and p and q at the candidates (the correction or bonus is one)."""
    k, n = q.size(0), min(TOP_PICTURE, p.size(-1))
    cand = candidates.view(-1, 1)
    p_ids = torch.topk(p, n, dim=-1).indices                    # (k+1, n)
    parts = [p_ids, p.gather(1, p_ids), p.gather(1, cand)]
    if k:
        q_ids = torch.topk(q, n, dim=-1).indices                # (k, n)
        parts += [q.gather(1, p_ids[:k]), q_ids, p[:k].gather(1, q_ids), q.gather(1, q_ids),
                  torch.minimum(p[:k], q).sum(-1, keepdim=True), q.gather(1, cand[:k])]
    return torch.cat([t.double().reshape(-1) for t in parts])


def _unpack_picture(values: list[float], k: int, n: int, verdict: Verdict):
    """The flat `_picture` values -> per row the merged (id, p, q) list, and the k overlaps. Each judged
    row also holds its draft, and row n (the first rejection, or the bonus row) the token emitted there."""
    def take(count):
        nonlocal values
        out, values = values[:count], values[count:]
        return out
    p_ids, p_at_p, p_at_cand = take((k + 1) * n), take((k + 1) * n), take(k + 1)
    q_at_p, q_ids, p_at_q, q_at_q, overlap, q_at_cand = (take(k * n), take(k * n), take(k * n), take(k * n),
                                                         take(k), take(k))
    pictures = []
    for i in range(k + 1):
        row: dict[int, tuple[float, float | None]] = {}
        for j in range(i * n, (i + 1) * n):
            row[int(p_ids[j])] = (p_at_p[j], q_at_p[j] if i < k else None)
            if i < k:
                row.setdefault(int(q_ids[j]), (p_at_q[j], q_at_q[j]))
        if i < k:
            row.setdefault(verdict.drafts[i], (verdict.p[i], verdict.q[i]))
        if i == verdict.n_accepted:
            row.setdefault(verdict.next_token, (p_at_cand[i], q_at_cand[i] if i < k else None))
        pictures.append(sorted(((t, pr, qr) for t, (pr, qr) in row.items()), key=lambda e: (-e[1], -(e[2] or 0.0))))
    return pictures, overlap


def _unpack(values: list[float], k: int, greedy: bool, n_top: int) -> tuple[Verdict, list[float]]:
    """The verdict's part of the round's one read, and the values after it (the picture's)."""
    head, rest = values[:4], values[4:]
    drafts, rest = [int(d) for d in rest[:k]], rest[k:]     # ids < 2^53 are exact in float64
    p_x, q_x, acc, rest = rest[:k], rest[k:2 * k], rest[2 * k:3 * k], rest[3 * k:]
    u = None if greedy else rest[:k]
    rest = rest if greedy else rest[k:]
    top = [(int(i), pr) for i, pr in zip(rest[:n_top], rest[n_top:2 * n_top])]
    return (Verdict(n_accepted=int(head[0]), next_token=int(head[1]), next_prob=head[2], next_p=head[3],
                    drafts=drafts, p=p_x, q=q_x, accept_prob=acc, u=u, top=top), rest[2 * n_top:])
