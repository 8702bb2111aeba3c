"""Tree shapes: how many children each frontier node gets at a depth, and how its candidates are drawn.

The widths per depth (`SpecConfig.tree`, a chain is all ones) bound the children of every node at
that depth. A shape decides, before any child is drawn and from their ancestors only, how many each
frontier node gets, so every child is still a fresh draw from its q (what keeps the judge exact):

- static    every node its depth's width (SpecInfer's token trees, Miao et al. 2024).
- budget    EAGLE-2's dynamic tree (Li et al. 2024): at most `tree_budget` nodes, given depth by depth
            to the nodes the draft is surest of (highest path score, the product of the draft's
            probabilities of the path's tokens), each at most the width. It reads the frontier's
            scores from the device once a depth (a data-dependent draft, as the confidence stop).
            EAGLE-2's final reranking, which drops drafted nodes by their own probability, is left
            out: a node kept or dropped by its own draw would no longer be a fresh draw from q.

A node's children are drawn from q *without replacement*, in order (`candidates`): the first from q,
the second from q with the first removed and renormalized, and so on; greedy takes the top w tokens;
sampling uses the Gumbel-top-k trick, whose order is exactly that sequential draw (Kool et al. 2019).
Width one is the chain's single draw, `choose`. Each child records the distribution it was drawn from,
what the judge divides by (acceptance.py). A new shape is a class here and its entry in SHAPES.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .sampling import choose


def candidates(logits: torch.Tensor, q: torch.Tensor, width: int, cfg, gen: torch.Generator
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """For each row of (f, V): `width` distinct tokens in draw order and the distribution each was drawn
    from (q without the earlier ones, renormalized; all zeros once q has no mass left: such a
    candidate is never judged). Returns tokens (f, w) and rows (f, w, V)."""
    if width == 1:                                        # the chain's draw: one token from q
        return choose(logits, q, cfg, gen).view(-1, 1), q.unsqueeze(1)
    width = min(width, q.size(-1))
    if cfg.greedy:
        tokens = logits.topk(width, dim=-1).indices
    else:
        # Gumbel-top-k: the order of log q + Gumbel noise is a sequential draw without replacement.
        u = torch.rand(q.shape, generator=gen, device=q.device).clamp_min(1e-20)
        tokens = (q.log() - (-u.log()).log()).topk(width, dim=-1).indices
    taken = torch.zeros_like(q)
    rows = []
    for j in range(width):
        row = (q * (taken == 0)).clamp_min(0)
        mass = row.sum(-1, keepdim=True)
        rows.append(torch.where(mass > 0, row / mass.clamp_min(1e-30), row))
        taken.scatter_(-1, tokens[:, j: j + 1], 1.0)
    return tokens, torch.stack(rows, dim=1)                # (f, w), (f, w, V)


@dataclass(frozen=True)
class Static:
    """Every frontier node gets its depth's width."""
    name = "static"
    reads_scores = False

    def allot(self, scores: list[float], width: int, left: int | None) -> list[int]:
        return [width] * len(scores)


@dataclass(frozen=True)
class Budget:
    """`width` to the surest nodes first until the nodes left (`left`) are spent (EAGLE-2)."""
    name = "budget"
    reads_scores = True

    def allot(self, scores: list[float], width: int, left: int | None) -> list[int]:
        return allot(scores, width, left)


def allot(scores: list[float], width: int, budget: int | None) -> list[int]:
    """Children per frontier node: `width` each (no budget), or `width` to the surest nodes first
    (highest path score) until the budget is spent."""
    if budget is None:
        return [width] * len(scores)
    counts = [0] * len(scores)
    for f in sorted(range(len(scores)), key=lambda i: -scores[i]):
        counts[f] = min(width, budget)
        budget -= counts[f]
    return counts


SHAPES = {shape.name: shape for shape in (Static(), Budget())}


def shape_of(cfg):
    """The shape a run drafts with: the budget's when `tree_budget` is set, else the static one."""
    return SHAPES["budget" if getattr(cfg, "tree_budget", 0) else "static"]
