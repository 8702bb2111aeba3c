"""What every drafter proposes: a token tree, of which a chain is the width-one case.

A proposal is n nodes in feeding order (parents before children, siblings in rank order): node i is
token `tokens[i]`, drawn from the distribution `q[i]`, a child of `parents[i]` (-1: the round's root,
the last committed token). A chain of k drafts is parents [-1, 0, 1, ..., k - 2]: every node the
only child of the one before (SpecInfer, Miao et al. 2024, treats sequences and trees alike the same
way). `depths[i]` is 1 for a child of the root; `choices[i]` is the node's rank among its siblings
(0 = the draft's first choice). The target's pass (runtime/tree_pass.py) and the judge
(acceptance.py) read the structure from here; a chain keeps the causal mask and the chain's
contiguous cache, so nothing of the tree is paid for on a chain.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Proposal:
    tokens: torch.Tensor        # (n,) long, on the pair's device
    q: torch.Tensor             # (n, V) float32: row i is the distribution node i was drawn from
    parents: list[int] = None   # parent of each node (-1: the root); None: a chain (filled in)
    depths: list[int] = None    # 1 = a child of the root
    choices: list[int] = None   # rank among its siblings (0 = the draft's first choice)
    _kids: dict | None = field(default=None, repr=False, compare=False)
    _chain: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self):
        n = self.tokens.numel()
        self._chain = self.parents is None or self.parents == list(range(-1, n - 1))
        if self.parents is None:                          # a chain: each node the child of the one before
            self.parents = list(range(-1, n - 1))
            self.depths = list(range(1, n + 1))
            self.choices = [0] * n
        if self.depths is None or self.choices is None:
            self.depths, self.choices = depths_and_choices(self.parents)
        if not (len(self.parents) == len(self.depths) == len(self.choices) == n == self.q.shape[0]):
            raise ValueError(f"a proposal's tokens ({n}), q rows ({self.q.shape[0]}), parents, depths and choices "
                             f"must be as many")

    @property
    def size(self) -> int:
        return len(self.parents)

    @property
    def is_chain(self) -> bool:
        """Every node the only child of the node before it: the causal pass and the chain's cache."""
        return self._chain

    def children(self, node: int) -> list[int]:
        """Children of `node` (-1: the root), in rank order."""
        if self._kids is None:
            kids: dict[int, list[int]] = {}
            for i, parent in enumerate(self.parents):
                kids.setdefault(parent, []).append(i)
            self._kids = kids
        return self._kids.get(node, [])

    def subtree(self, node: int) -> int:
        """Nodes under `node`, itself excluded."""
        return sum(1 + self.subtree(child) for child in self.children(node))


def depths_and_choices(parents: list[int]) -> tuple[list[int], list[int]]:
    """Each node's depth (1 under the root) and rank among its siblings, from the parents alone."""
    depths, choices, seen = [], [], {}
    for parent in parents:
        depths.append(1 if parent < 0 else depths[parent] + 1)
        choices.append(seen.get(parent, 0))
        seen[parent] = choices[-1] + 1
    return depths, choices


def empty(vocab_size: int, device) -> Proposal:
    """No drafts (one token left to emit, or nothing to propose): the round is a plain target step."""
    return Proposal(torch.zeros(0, dtype=torch.long, device=device), torch.zeros(0, vocab_size, device=device))
