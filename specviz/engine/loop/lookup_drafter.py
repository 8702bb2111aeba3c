"""Prompt lookup as drafter (Saxena 2023, "prompt lookup decoding"): no model. It finds earlier
occurrences of the sequence's last n tokens (n = lookup_ngram down to 1) in prompt + output and
proposes what followed them. A chain (widths all one) is the continuation of the most recent
occurrence of the longest n-gram that has one; a tree's first width w gives up to w branches: the
continuations of the most recent occurrences that differ in their first token (longest n-gram first,
shorter ones filling the rest), each a chain as deep as the tree, all of them within the tree's node
budget when it has one. Its q is one-hot: each node is
certain given the context, so the judge's rule (acceptance.py) keeps a node with probability r(x),
the residual of its earlier siblings at x, and the output keeps the target's law.
"""
from __future__ import annotations

import torch

from .proposal import Proposal


class PromptLookupDrafter:
    reads_target_features = False
    lm = None                           # no model

    def __init__(self, vocab_size: int, device: torch.device, max_ngram: int, budget: int = 0):
        self.vocab_size, self.device, self.max_ngram = vocab_size, device, max_ngram
        self.budget = budget                # a tree's node budget (0: none): the branches are cut to it
        # index[n][ngram][next token] = latest start of that n-gram followed by that token (latest last).
        self.index: list[dict[tuple, dict[int, int]]] = [dict() for _ in range(max_ngram + 1)]
        self.indexed = [0] * (max_ngram + 1)

    @property
    def forwards(self) -> int:
        return 0

    def _refresh(self, ids: list[int]) -> None:
        for n in range(1, self.max_ngram + 1):
            for start in range(self.indexed[n], len(ids) - n):
                follow = self.index[n].setdefault(tuple(ids[start:start + n]), {})
                follow.pop(ids[start + n], None)          # re-inserted last: the latest occurrence
                follow[ids[start + n]] = start
            self.indexed[n] = max(self.indexed[n], len(ids) - n)

    def branches(self, ids: list[int], width: int, depth: int) -> list[list[int]]:
        """Up to `width` continuations (each up to `depth` tokens) with distinct first tokens."""
        self._refresh(ids)
        found: dict[int, list[int]] = {}
        for n in range(min(self.max_ngram, len(ids) - 1), 0, -1):
            follow = self.index[n].get(tuple(ids[-n:]), {})
            for first, start in sorted(follow.items(), key=lambda e: -e[1]):      # most recent first
                if len(found) < width and first not in found:
                    found[first] = ids[start + n: start + n + depth]
            if len(found) >= width:
                break
        return list(found.values())

    def propose(self, ids: list[int], widths: tuple[int, ...]) -> Proposal:
        chains = self.branches(ids, widths[0], len(widths)) if widths else []
        follow, parents = [], []
        for chain in chains:                   # each branch a chain under the root, in feeding order
            if self.budget:
                chain = chain[: self.budget - len(follow)]
            if chain:
                parents += [-1] + list(range(len(follow), len(follow) + len(chain) - 1))
                follow += chain
        tokens = torch.tensor(follow, dtype=torch.long, device=self.device)
        q = torch.zeros(len(follow), self.vocab_size, device=self.device)
        q[torch.arange(len(follow), device=self.device), tokens] = 1.0   # one-hot: q(x) = 1
        return Proposal(tokens, q, parents)

    def update(self, path: list[int], features: torch.Tensor | None = None, start: int = 0) -> None:
        pass

    def release(self) -> None:
        pass
