"""Verification of a token tree: walk down from the root, judging each node's children in rank order.

p and q as everywhere (acceptance.py): p = the target's warped distribution at a node, q = the
distribution the draft drew a child from. At the current node (first the root) with children
x_1..x_w, drawn without replacement (tree_drafter.py: x_j ~ q_j, q_j = q with x_1..x_{j-1} removed):

    greedy     keep the child equal to argmax p (at most one: siblings are distinct); none: emit argmax p.
    sampling   recursive rejection sampling (Jeon et al. 2024, "Recursive Speculative Decoding"):
               r <- p; for j = 1..w: keep x_j with probability min(1, r(x_j) / q_j(x_j)), else
               r <- norm(max(0, r - q_j)); if every child is rejected, emit y ~ r.
A kept child becomes the current node and its children are judged next; at a node without
children (a leaf, or the tree's last depth) the target adds a bonus y ~ p there.

Why the output keeps the target's law (docs/trees.md has it at length): at one node, whatever the
earlier siblings were, x_j ~ q_j given them, so step j emits token t with probability
min(r(t), q_j(t)) and passes on with probability 1 - sum_t min(r, q_j) = sum_t max(0, r - q_j), to a
residual r' with (1 - sum min) r' = r - min(r, q_j). Hence "emit from r" = "judge x_j against r, else
emit from r'", and by induction over j (the last step emits from r itself) the token emitted at the
node has law p. The kept child's subtree was drawn from the draft's distribution at that child, so
the same holds one depth down: every position has the target's conditional law, as in a chain.
SpecInfer (Miao et al. 2024) uses the same recursion for children drawn independently from q;
without replacement the q_j change from sibling to sibling, which the residual divides by.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .acceptance import TOP_RESIDUAL
from .config import SpecConfig
from .rules import residual
from .sampling import choose, warp
from .tree_drafter import TreeProposal


@dataclass
class Judged:
    node: int                # the judged node
    accepted: bool
    p: float                 # the target's p(x) at its parent (before any residual)
    q: float                 # q_j(x): the probability of x under the distribution it was drawn from
    accept_prob: float       # min(1, r(x) / q_j(x)) with r the residual so far; greedy: 1 or 0
    u: float | None          # the uniform draw; None when greedy


@dataclass
class TreeVerdict:
    path: list[int]                     # accepted nodes, root to leaf
    judged: list[Judged]                # every judgement, in the order made
    parent: int                         # the node the next token follows (-1: the root)
    next_token: int                     # the correction (every child there rejected) or the bonus
    next_prob: float                    # its probability under the distribution it came from
    next_p: float                       # its target probability p there
    corrected: bool                     # True: a correction after rejections; False: a bonus
    top: list[tuple[int, float]] = field(default_factory=list)   # that distribution's most likely entries
    tokens: list[int] = field(default_factory=list)     # every node's token, as read for the walk
    q_own: list[float] = field(default_factory=list)    # every node's q_j(x), as read for the walk


def verify_tree(tree: TreeProposal, logits: torch.Tensor, cfg: SpecConfig, gen: torch.Generator) -> TreeVerdict:
    """logits (n + 1, V): row 0 the target at the root, row i + 1 at node i -> the round's TreeVerdict.

    What the walk needs is read from the device once per quantity, not once per node (on a GPU each
    read waits for the device): every node's own p and q, the target's argmax at every row (greedy),
    and one uniform per node, drawn up front (sampling: the i-th judgement takes the i-th, so each
    is used once and is independent of everything judged before it). Only r(x) after a rejection,
    which depends on the rejections before it, is read as the walk goes."""
    p = warp(logits, cfg)
    n = tree.size
    tokens = tree.tokens.tolist()
    if n:
        rows = torch.tensor([parent + 1 for parent in tree.parents], device=p.device)
        q_own = tree.q.gather(1, tree.tokens.view(-1, 1)).view(-1).tolist()      # q_j(x) of each node
        p_own = p[rows, tree.tokens].tolist()                                  # p(x) at each node's parent
    else:
        q_own, p_own = [], []
    argmax = logits.argmax(-1).tolist() if cfg.greedy else None
    uniforms = torch.rand(n, generator=gen, device=p.device).tolist() if n and not cfg.greedy else []
    path, judged, node = [], [], -1
    while True:
        row = node + 1
        kids = tree.children(node)
        r = p[row]
        fresh = True                      # r is still p at this node: r(x) = p(x), already read
        kept = None
        for kid in kids:
            x, q_x = tokens[kid], q_own[kid]
            if cfg.greedy:
                ok = x == argmax[row]
                a, u = float(ok), None
            else:
                r_x = p_own[kid] if fresh else float(r[x])
                a = min(1.0, r_x / q_x)
                u = uniforms[len(judged)]
                ok = u < a
            judged.append(Judged(kid, ok, p_own[kid], q_x, a, u))
            if ok:
                kept = kid
                break
            if not cfg.greedy:
                r, fresh = residual(r, tree.q[kid]), False
        if kept is None:
            break
        path.append(kept)
        node = kept
    # Every child of `node` rejected (or it has none): the correction comes from the residual r,
    # the bonus from p itself (r is p when nothing was judged there).
    token = int(choose(logits[row: row + 1], r.view(1, -1), cfg, gen)[0])
    top_probs, top_ids = torch.topk(r, min(TOP_RESIDUAL, r.numel()))
    return TreeVerdict(path=path, judged=judged, parent=node, next_token=token, next_prob=float(r[token]),
                       next_p=float(p[row, token]), corrected=bool(kids),
                       top=list(zip(top_ids.tolist(), top_probs.tolist())), tokens=tokens, q_own=q_own)
