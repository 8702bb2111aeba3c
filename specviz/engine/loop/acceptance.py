"""The one judge of a round's proposal: the speculative-sampling rule, on a token tree (a chain is its
width-one case).

Convention, used everywhere in specviz (as in transformers; gpt-fast swaps the names):
    p = the target's (warped) distribution,  q = the draft's (warped) distribution.
A chain x_1..x_k, x_i ~ q_i, with p_1..p_{k+1} from one pass (Leviathan et al. 2023, Algorithm 1;
Chen et al. 2023, Algorithm 2): accept x_i with probability min(1, p_i(x_i) / q_i(x_i)) (u_i ~ U[0,1),
accept if u_i < that); at the first rejection output y ~ norm(max(0, p_i - q_i)); after k accepted, a
bonus y ~ p_{k+1}. Each output token is then distributed exactly as the target would sample it.

A tree generalizes it by recursive rejection sampling (SpecInfer, Miao et al. 2024; Jeon et al. 2024
for siblings drawn without replacement): at a node with children x_1..x_w in rank order, x_j drawn
from q_j (the draft's q with x_1..x_{j-1} removed, model_drafter.py),
    r <- p;  for j = 1..w: keep x_j with probability min(1, r(x_j) / q_j(x_j)), else r <- norm(max(0, r - q_j));
    if every child is rejected, emit y ~ r; a kept child becomes the node judged next; a leaf: bonus y ~ p.
Why the law stays p at one node: given the earlier siblings, step j emits t with probability
min(r(t), q_j(t)) and passes on with probability sum_t max(0, r - q_j) to a residual r' with
(1 - sum min) r' = r - min(r, q_j); so "emit from r" = "judge x_j against r, else emit from r'", and by
induction over j the node emits with law p (docs/trees.md; tests/test_tree_distribution.py enumerates
it). With one child a node is a chain's position: r = p, the chain's rule. Every rule of rules.py has
this tree form (judge against the residual so far, pass on its `correction`). Greedy (temperature 0)
keeps the child equal to the target's argmax, else emits the argmax. A candidate the draft gave no
mass (top-k or top-p left fewer tokens than the width) is never judged and changes no residual.

All of it runs on the models' device with no data-dependent branch: the residual after each rank of
siblings is computed for every node at once (one pass per rank), one uniform per node is drawn, one
candidate per row (the correction or bonus that row would emit).

A rule whose test is joint (the block rule, block.py) judges a chain as a whole instead: one uniform
per draft, the longest prefix whose joint test passes is kept, and each row's candidate comes from the
block's residual there; its verdict reports each draft's joint test h_i as accept_prob, and its weight.

The host reads the result once per round (the packed `.tolist()`), the only device-to-host sync of a
round, and then walks the tree.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .block import block_test, kept_prefix
from .config import SpecConfig
from .picture import Pictures, TOP_PICTURE, pack_pictures
from .proposal import Proposal
from .rules import get_rule
from .sampling import choose, warp

TOP_RESIDUAL = 5  # entries of the residual distribution reported for the teaching view
__all__ = ["TOP_PICTURE", "TOP_RESIDUAL", "Verdict", "judge", "sibling_residuals", "verify"]


@dataclass
class Verdict:
    path: list[int]                # accepted nodes, root to leaf (a chain: 0..n-1)
    judged: list[int]              # every judged node, in the order judged
    parent: int                    # the node the next token follows (-1: the root)
    corrected: bool                # True: a correction after rejections there; False: a bonus
    next_token: int                # the correction or the bonus
    next_prob: float               # its probability under the distribution it was drawn from
    next_p: float                  # its target probability p there
    top: list[tuple[int, float]]   # most likely entries of that distribution
    tokens: list[int]              # every node's token (read back in the same transfer)
    ok: list[bool]                 # every node's judgement (meaningful where judged)
    p: list[float]                 # p(x) at each node's parent (before any residual)
    q: list[float]                 # q_j(x): x under the distribution it was drawn from
    accept_prob: list[float]       # min(1, r(x) / q_j(x)) with r the residual so far; greedy: 1 or 0
    u: list[float] | None          # the uniform draws; None when greedy
    # The block rule (block.py): each draft's weight w_i; accept_prob is then the joint test h_i of the
    # prefix ending there, and the path the longest prefix with u_i < h_i. None under other rules.
    weights: list[float] | None = None
    pictures: Pictures = field(default=None, repr=False)   # the p-and-q picture of every node and row

    @property
    def n_accepted(self) -> int:
        return len(self.path)


def judge(proposal: Proposal, logits: torch.Tensor, cfg: SpecConfig, gen: torch.Generator,
          read=None) -> Verdict:
    """logits (n + 1, V): row 0 the target at the root, row i + 1 after node i -> the round's Verdict.
    `read` makes the one host read (the lane's phase marks' `read`, which times around it); default `tolist`."""
    x, q, n = proposal.tokens, proposal.q, proposal.size
    device = x.device
    p = warp(logits, cfg)                                          # (n + 1, V)
    # The row each node is judged at: its parent's (a chain's node i at row i: no gather).
    chain = proposal.is_chain
    rows = None if chain else torch.tensor([parent + 1 for parent in proposal.parents], device=device)
    p_at = p[:n] if chain else p.index_select(0, rows)            # (n, V)
    p_x = p_at.gather(1, x.view(-1, 1)).view(-1)                  # p(x) at its parent
    q_x = q.gather(1, x.view(-1, 1)).view(-1)                     # q_j(x)
    weights = None
    if cfg.forced_acceptance is not None:
        # Benchmarking only (not lossless): accept with a fixed probability; corrections come from p.
        accept_prob = torch.full((n,), cfg.forced_acceptance, device=device)
        u = torch.rand(n, generator=gen, device=device)
        ok, next_dist = u < accept_prob, p
    elif cfg.greedy:
        ok = (logits[:n] if chain else logits.index_select(0, rows)).argmax(-1) == x   # the argmax match
        accept_prob, u, next_dist = ok.float(), None, p          # correction or bonus: the argmax of p
    elif chain and get_rule(cfg.rule).joint:
        # Block verification: every prefix's joint test h_i, the block's residuals, tau = max{i: u_i < h_i};
        # a chain's walk keeps nodes 0..tau-1 and draws the next token from row tau.
        accept_prob, next_dist, weights = block_test(p, q, x)
        u = torch.rand(n, generator=gen, device=device)
        ok = torch.arange(n, device=device) < kept_prefix(accept_prob, u)
    else:
        accept_prob, next_dist = sibling_residuals(get_rule(cfg.rule), p, q, x, proposal, rows)
        u = torch.rand(n, generator=gen, device=device)
        ok = u < accept_prob
    candidates = choose(logits, next_dist, cfg, gen)               # (n + 1,): what each row would emit
    top_probs, top_ids = torch.topk(next_dist, min(TOP_RESIDUAL, next_dist.size(-1)), dim=-1)
    packed = torch.cat([
        x.double(), ok.double(), p_x.double(), q_x.double(), accept_prob.double(),
        (u.double() if u is not None else p_x.new_zeros(0, dtype=torch.float64)),
        candidates.double(), next_dist.gather(1, candidates.view(-1, 1)).view(-1).double(),
        p.gather(1, candidates.view(-1, 1)).view(-1).double(), top_ids.double().view(-1), top_probs.double().view(-1),
        (weights.double() if weights is not None else p_x.new_zeros(0, dtype=torch.float64)),
        pack_pictures(p, q, p_at, rows, candidates),
    ])
    values = read(packed) if read is not None else packed.tolist()
    return _walk(proposal, values, greedy=u is None, n_top=top_ids.size(-1),      # the round's one
                 vocab=p.size(-1), block=weights is not None)                             # device-to-host read


def sibling_residuals(rule, p: torch.Tensor, q: torch.Tensor, x: torch.Tensor, proposal: Proposal,
               rows: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Every node's acceptance probability under the rule against the residual r its earlier siblings
    left, and each row's last residual (the distribution a correction there is drawn from; p at a leaf).
    One pass per sibling rank: the nodes of rank j are judged against r, then r <- the rule's
    correction (the exact rule: norm(max(0, r - q_j))). A candidate with q_j(x) = 0 (no mass left in
    the draft) gets probability 0 and leaves r as it was."""
    n = proposal.size
    if rows is None:                    # a chain: one child a row, judged against p itself
        return rule.accept_prob(p[:n], q, x), torch.cat([rule.correction(p[:n], q, x), p[n:]])
    r, accept_prob = p.clone(), torch.empty(n, dtype=p.dtype, device=p.device)
    for j in range(max(proposal.choices) + 1):
        nodes = torch.tensor([i for i, c in enumerate(proposal.choices) if c == j], device=p.device)   # one a row
        at = rows.index_select(0, nodes)
        r_j, q_j, x_j = r.index_select(0, at), q.index_select(0, nodes), x.index_select(0, nodes)
        real = q_j.gather(1, x_j.view(-1, 1)).view(-1) > 0
        accept_prob[nodes] = torch.where(real, rule.accept_prob(r_j, q_j, x_j), 0.0)
        r[at] = torch.where(real.view(-1, 1), rule.correction(r_j, q_j, x_j), r_j)
    return accept_prob, r


def _walk(proposal: Proposal, values: list[float], greedy: bool, n_top: int, vocab: int,
          block: bool = False) -> Verdict:
    """The read values -> the Verdict: from the root, judge each node's children in rank order; the
    first kept becomes the node judged next; when none is kept (or there are none) the row's
    candidate is the correction (or the bonus)."""
    n, rows = proposal.size, proposal.size + 1
    at = 0

    def take(count):
        nonlocal at
        at += count
        return values[at - count: at]
    tokens = [int(t) for t in take(n)]                 # ids < 2^53 are exact in float64
    ok, p_x, q_x, acc = [v > 0 for v in take(n)], take(n), take(n), take(n)
    u = None if greedy else take(n)
    cand, cand_prob, cand_p = [int(t) for t in take(rows)], take(rows), take(rows)
    top_ids, top_probs = take(rows * n_top), take(rows * n_top)
    weights = take(n) if block else None
    path, judged, node, corrected = [], [], -1, False
    while True:
        kept, corrected = None, False
        for kid in proposal.children(node):
            if q_x[kid] <= 0:                          # no mass under the draft: a candidate in name only
                continue
            judged.append(kid)
            if ok[kid]:
                kept = kid
                break
            corrected = True
        if kept is None:
            break
        path.append(kept)
        node = kept
    row = node + 1
    top = [(int(i), pr) for i, pr in zip(top_ids[row * n_top:(row + 1) * n_top], top_probs[row * n_top:(row + 1) * n_top])]
    return Verdict(path=path, judged=judged, parent=node, corrected=corrected, next_token=cand[row],
                   next_prob=cand_prob[row], next_p=cand_p[row], top=top, tokens=tokens, ok=ok, p=p_x, q=q_x,
                   accept_prob=acc, u=u, weights=weights,
                   pictures=Pictures(values, at, proposal, min(TOP_PICTURE, vocab), cand))


def verify(drafts: torch.Tensor, q_probs: torch.Tensor, target_logits: torch.Tensor,
           cfg: SpecConfig, gen: torch.Generator) -> Verdict:
    """A chain's verdict: drafts (k,), q_probs (k, V) and target_logits (k + 1, V) (tests, analyses)."""
    return judge(Proposal(drafts, q_probs), target_logits, cfg, gen)
