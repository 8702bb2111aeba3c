"""The draft model as drafter: it proposes a tree of the round's widths, depth by depth (a chain is all
widths one), keeping its own KV cache across rounds.

Each depth draws the frontier nodes' children from q (warped like the target's p) as the shape says
(shapes.py), then feeds them in one pass so the next depth can be drawn: one draft pass a depth,
whatever the width (EAGLE and SpecInfer draft trees the same way). While the tree is still a chain
(one node a depth so far), that pass is the ordinary causal step on whatever path the run takes (the
lean CPU step, CUDA graphs, torch.compile); past the first branch it is a masked pass in which each
node sees the context and its ancestors (runtime/tree_pass.py). The last depth is never fed. After the
verdict `update` keeps the accepted path's fed nodes in the cache and drops the rest; after an
all-accepted round the cache lacks the last draft and the bonus, which the next `propose` feeds first.

With `confidence_stop` > 0 a node the draft itself gave less than that probability (its softmax before
temperature and truncation) gets no children: the target would most likely reject what follows.
transformers calls this `assistant_confidence_threshold` (for a chain: stop drafting); Agrawal et al.
2024 (AdaEDL) and Huang et al. 2024 (SpecDec++) study such stopping rules. It keeps the output exact:
whether a node is expanded depends only on tokens already drafted, never on the children's draws, so
every judged child is still a fresh sample from its q. It reads the device once a depth, as the
dynamic tree's budget does; a static tree without it reads nothing while drafting.
"""
from __future__ import annotations

import math
from dataclasses import replace

import torch

from ...runtime.cached_model import cached_model, step_shapes, uncached
from ...runtime.tree_pass import ancestry, keep_path, visibility
from .proposal import Proposal
from .sampling import warp
from .shapes import candidates, shape_of


class ModelDrafter:
    reads_target_features = False

    def __init__(self, model, vocab_size: int, cfg, gen: torch.Generator, positions: int = 0):
        self.lm = cached_model(model, vocab_size, cfg.fast, positions, graphs=cfg.cuda_graphs, draft=True,
                               shapes=step_shapes(cfg, "draft"))
        # Its own sampling settings: the run's, or the run's at the draft's own temperature. The
        # q it returns is the distribution it sampled from, so the acceptance rule stays exact.
        self.cfg = cfg if cfg.draft_temperature is None else replace(cfg, temperature=cfg.draft_temperature)
        self.gen = gen
        self.shape = shape_of(cfg)
        self.budget = getattr(cfg, "tree_budget", 0) or None
        self.doubt = math.log(cfg.confidence_stop) if cfg.confidence_stop > 0 else None
        self.context_len = 0
        self.fed = 0                   # nodes of the last proposal in the cache: 0..fed-1, at context + index

    @property
    def forwards(self) -> int:
        return self.lm.forwards

    def propose(self, ids: list[int], widths: tuple[int, ...]) -> Proposal:
        self.context_len, self.fed = len(ids), 0
        logits = self.lm.feed(uncached(self.lm, ids), keep=1)       # (1, V) at the root
        tokens, qs, parents = [], [], []
        frontier, scores, left = [-1], [1.0], self.budget
        for depth, width in enumerate(widths, start=1):
            q = warp(logits, self.cfg)                              # (f, V): each frontier node's q
            toks, rows = candidates(logits, q, width, self.cfg, self.gen)   # (f, w), (f, w, V)
            counts = self.shape.allot(scores, width, left)
            picked = [(f, j) for f, count in enumerate(counts) for j in range(count)]
            if not picked:
                break
            flat = torch.tensor([f * toks.size(1) + j for f, j in picked]) if len(picked) < toks.numel() else None
            new_tokens = toks.reshape(-1) if flat is None else toks.reshape(-1).index_select(0, flat)
            new_qs = rows.reshape(-1, rows.size(-1)) if flat is None else rows.reshape(-1, rows.size(-1)).index_select(0, flat)
            start = len(parents)
            parents += [frontier[f] for f, _ in picked]
            tokens.append(new_tokens)
            qs.append(new_qs)
            if depth == len(widths):
                break
            # Which new nodes get children: all, or (confidence stop, budget) as read from the device.
            grow, scores = self._grow(logits, q, toks, picked, scores, new_tokens)
            if left is not None:
                left -= len(picked)
            if not grow or left == 0:
                break
            logits = self._feed_depth(ids, depth, parents, start, new_tokens)
            frontier = [start + i for i in grow]
            if len(grow) < len(picked):
                logits = logits.index_select(0, torch.tensor(grow, device=logits.device))
            scores = [scores[i] for i in grow]
        if not parents:
            return Proposal(torch.zeros(0, dtype=torch.long, device=self.lm.device),
                            torch.zeros(0, self.lm.vocab_size, device=self.lm.device))
        chain = len(parents) == len(tokens) and all(p == i - 1 for i, p in enumerate(parents))
        return Proposal(torch.cat(tokens), torch.cat(qs), None if chain else parents)

    def _grow(self, logits, q, toks, picked, scores, new_tokens) -> tuple[list[int], list[float]]:
        """The new nodes (indices into `picked`) that get children, and every new node's path score.
        Nothing is read unless the confidence stop or the budget needs it (once a depth)."""
        reads = []
        if self.doubt is not None:          # the draft's own log-probability of each new node, before warping
            own = logits.float().log_softmax(-1)
            reads.append(own.gather(1, toks).reshape(-1))
        if self.shape.reads_scores:
            reads.append(q.gather(1, toks).reshape(-1))
        if not reads:
            return list(range(len(picked))), [1.0] * len(picked)
        values = torch.cat(reads).tolist()
        width = toks.size(1)
        at = [f * width + j for f, j in picked]
        sure = values[: toks.numel()] if self.doubt is not None else None
        own_q = values[-toks.numel():] if self.shape.reads_scores else None
        grow = [i for i, k in enumerate(at) if sure is None or sure[k] >= self.doubt]
        new_scores = [scores[f] * (own_q[k] if own_q is not None else 1.0) for (f, _), k in zip(picked, at)]
        return grow, new_scores

    def _feed_depth(self, ids: list[int], depth: int, parents: list[int], start: int,
                    new_tokens: torch.Tensor) -> torch.Tensor:
        """Feed this depth's nodes (start..): the chain's causal step while the tree is a chain so far,
        else one masked pass (each node sees the context, its ancestors and itself)."""
        self.fed = len(parents)
        if start == depth - 1 and len(parents) == depth:            # one node a depth so far: a chain
            return self.lm.feed(new_tokens, keep=1)
        anc = ancestry(parents)[start:]
        positions = torch.full((len(parents) - start,), len(ids) - 1 + depth, dtype=torch.long)
        return self.lm.feed_masked(new_tokens, positions, visibility(self.context_len, 0, anc),
                                   keep=len(parents) - start)

    def update(self, path: list[int], features: torch.Tensor | None = None, start: int = 0) -> None:
        """Keep the accepted path's fed nodes in the cache after the context; drop the other nodes."""
        keep_path(self.lm, self.context_len, [node for node in path if node < self.fed])

    def release(self) -> None:
        self.lm.release()
