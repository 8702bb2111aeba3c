"""The tree drafter: the draft model proposes a token tree of a static shape, depth by depth.

The shape is the candidates per depth (`SpecConfig.tree`, e.g. (2, 2, 1, 1)): the root (the last
committed token) gets w1 children, each of them w2, and so on. A node's children are drawn from the
draft's distribution q at that node *without replacement*, in order: the first child from q, the
second from q with the first removed and renormalized, and so on. Greedy takes the draft's top w
tokens (the same order, deterministic); sampling uses the Gumbel-top-k trick, whose order is exactly
that sequential draw without replacement (Kool et al. 2019). Each node records the distribution it was
drawn from (q with its earlier siblings removed), which is what recursive rejection sampling divides
by (tree_accept.py). A candidate the draft gave no mass (top-k or top-p left fewer tokens than the
width) is dropped with its subtree.

With a node budget (`SpecConfig.tree_budget`, EAGLE-2's dynamic tree, Li et al. 2024) the shape
gives the widths at most, and each depth's children go first to the nodes the draft is surest of
(`allot`); EAGLE-2's final reranking, which drops drafted nodes by their own probability, is left
out: a node kept or dropped by its own draw would no longer be a fresh draw from q.

The draft keeps its own KV cache (eager, `CachedModel`): one pass per depth feeds that depth's nodes
with the tree mask (runtime/tree_pass.py), so drafting a depth-D tree costs D draft passes whatever
the width. After the verdict `update` keeps the accepted path in the cache (its nodes of depth < D:
the last depth is never fed) and crops the rest; the next `propose` feeds what the cache lacks.
EAGLE (Li et al. 2024) and SpecInfer (Miao et al. 2024) draft trees the same way, one pass a depth.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ...runtime.cached_model import CachedModel, uncached
from ...runtime.tree_pass import ancestry, keep_path, masked_feed, visibility
from .config import SpecConfig
from .sampling import warp


@dataclass
class TreeProposal:
    tokens: torch.Tensor       # (n,) long: the nodes in feeding order (by depth, siblings in rank order)
    q: torch.Tensor            # (n, V): row i is the distribution node i was drawn from
    parents: list[int]         # parent node of each node; -1 = the root (the last committed token)
    depths: list[int]          # 1 = a child of the root
    choices: list[int]         # rank among its siblings: 0 = the draft's first choice, 1 = its second, ...

    @property
    def size(self) -> int:
        return len(self.parents)

    def children(self, node: int) -> list[int]:
        """Children of `node` (-1: the root), in rank order."""
        return [i for i, parent in enumerate(self.parents) if parent == node]

    def subtree(self, node: int) -> int:
        """Nodes under `node`, itself excluded."""
        return sum(1 + self.subtree(child) for child in self.children(node))


def empty_tree(vocab_size: int, device: torch.device) -> TreeProposal:
    """No drafts: the round is a plain target step."""
    return TreeProposal(torch.zeros(0, dtype=torch.long, device=device), torch.zeros(0, vocab_size, device=device),
                        [], [], [])


def candidates(logits: torch.Tensor, q: torch.Tensor, width: int, cfg: SpecConfig,
               gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For each row of (f, V): `width` distinct tokens in draw order, the distribution each was drawn
    from (q without the earlier ones, renormalized) and whether it is a real draw (q gave it mass).
    Returns tokens (f, w), rows (f, w, V) and ok (f, w)."""
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
    rows = torch.stack(rows, dim=1)                                        # (f, w, V)
    ok = rows.gather(-1, tokens.unsqueeze(-1)).squeeze(-1) > 0
    if cfg.greedy:
        ok = torch.ones_like(ok)         # greedy judges by argmax, not by q: every top-w token is a candidate
    return tokens, rows, ok


def allot(scores: list[float], width: int, budget: int | None) -> list[int]:
    """Children per frontier node: `width` each (the static shape), or, under a node budget, `width` to
    the surest nodes first (highest path score: the product of the draft's probabilities of the path's
    tokens) until the budget is spent. Decided before the children are drawn, from their ancestors only,
    so every child is still a fresh draw from its q (what keeps recursive rejection sampling exact)."""
    if budget is None:
        return [width] * len(scores)
    counts = [0] * len(scores)
    for f in sorted(range(len(scores)), key=lambda i: -scores[i]):
        counts[f] = min(width, budget)
        budget -= counts[f]
    return counts


class TreeDrafter:
    reads_target_features = False

    def __init__(self, model, vocab_size: int, cfg: SpecConfig, gen: torch.Generator):
        self.lm = CachedModel(model, vocab_size)
        self.cfg = cfg if cfg.draft_temperature is None else replace(cfg, temperature=cfg.draft_temperature)
        self.gen = gen
        self.budget = cfg.tree_budget      # 0: the static shape; else nodes at most, spent by confidence
        self.context_len = 0
        self.fed: list[int] = []          # nodes of the last proposal fed to the draft (slot = context + index)

    @property
    def forwards(self) -> int:
        return self.lm.forwards

    @torch.inference_mode()
    def propose(self, ids: list[int], widths: tuple[int, ...]) -> TreeProposal:
        self.context_len, self.fed = len(ids), []
        logits = self.lm.feed(uncached(self.lm, ids), keep=1)              # (1, V) at the root
        tokens, qs, parents, depths, choices = [], [], [], [], []
        frontier, scores, budget = [-1], [1.0], self.budget or None
        for depth, width in enumerate(widths, start=1):
            q = warp(logits, self.cfg)
            toks, rows, ok = candidates(logits, q, width, self.cfg, self.gen)
            own = rows[:, 0].gather(-1, toks)                              # q(x) under the parent's full q
            keep, own = ok.tolist(), own.tolist()                          # one read a depth
            counts = allot(scores, width, budget)
            start, next_scores = len(parents), []
            for f, parent in enumerate(frontier):
                for j, real in enumerate(keep[f][: counts[f]]):
                    if real:
                        next_scores.append(scores[f] * own[f][j])
                        tokens.append(toks[f, j])
                        qs.append(rows[f, j])
                        parents.append(parent)
                        depths.append(depth)
                        choices.append(j)
            frontier, scores = list(range(start, len(parents))), next_scores
            if budget is not None:
                budget -= len(frontier)
            if depth == len(widths) or not frontier or budget == 0:
                break
            # Feed this depth's nodes: each sees the context, its ancestors (cached) and itself.
            anc = ancestry(parents)[start:]
            new = torch.stack(tokens[start:])
            positions = torch.tensor([len(ids) - 1 + depth] * len(frontier))
            logits = masked_feed(self.lm, new, positions, visibility(self.context_len, 0, anc), keep=len(frontier))
            self.fed.extend(frontier)
        if not parents:
            return TreeProposal(torch.zeros(0, dtype=torch.long, device=self.lm.device),
                                torch.zeros(0, self.lm.vocab_size, device=self.lm.device), [], [], [])
        return TreeProposal(torch.stack(tokens), torch.stack(qs), parents, depths, choices)

    def update(self, path: list[int]) -> None:
        """Keep the accepted path's fed nodes in the cache after the context; drop the other nodes."""
        fed = set(self.fed)
        keep_path(self.lm, self.context_len, [node for node in path if node in fed])

    def release(self) -> None:
        self.lm.release()
