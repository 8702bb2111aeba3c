"""Drafters: who proposes the round's tokens, and the one registry of them.

As in transformers' candidate generators, a drafter is `propose(ids, widths)` and `update(path)`;
`release()` ends its run. Every drafter proposes a tree (proposal.py): `widths` are the candidates per
depth the round asks for, a chain of k being k ones, and `path` the accepted nodes (a chain's: its
first n). Every drafter says whether it reads the target's hidden states (`reads_target_features`):
the round then keeps them on its verify pass and hands them to `update`.

- model           the draft LM (model_drafter.py): a chain on every decode path, any tree shape on
                  every one but torch.compile's (config.py TREE_REFUSES).
- prompt_lookup   n-gram matches in the prompt and output (lookup_drafter.py): a chain, or as many
                  branches as the tree's first width.
A draft that reads the target's features (feature_drafter.py) runs in the model drafter's place when
the pair's draft is such a model; it drafts chains. A new drafter is one module and its entry here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import torch

from ...runtime.cached_model import ModelWithCache
from .feature_drafter import FeatureDrafter
from .lookup_drafter import PromptLookupDrafter
from .model_drafter import ModelDrafter
from .proposal import Proposal


class Drafter(Protocol):
    reads_target_features: bool         # update() needs the target's final hidden states (a feature draft)
    lm: ModelWithCache | None           # the draft model's cache path, reported in Done.stats (None: no such path)

    @property
    def forwards(self) -> int: ...      # draft-model forward passes so far (0 without a model)

    def propose(self, ids: list[int], widths: tuple[int, ...]) -> Proposal: ...

    # path: the accepted nodes, root first. features: the target's final hidden states of the tokens
    # its last pass fed, starting at sequence position `start` (only drafters with
    # `reads_target_features` use them).
    def update(self, path: list[int], features: torch.Tensor | None = None, start: int = 0) -> None: ...

    def release(self) -> None: ...


def _model_drafter(pair, cfg, gen: torch.Generator, positions: int) -> Drafter:
    if pair.draft_reads_features:
        return FeatureDrafter(pair.draft, pair.vocab_size, cfg, gen)
    return ModelDrafter(pair.draft, pair.vocab_size, cfg, gen, positions)


def _lookup_drafter(pair, cfg, gen: torch.Generator, positions: int) -> Drafter:
    return PromptLookupDrafter(pair.vocab_size, pair.device, cfg.lookup_ngram, cfg.tree_budget)


@dataclass(frozen=True)
class DrafterKind:
    """One registered drafter: the name a config gives, the words the page and a run's text use,
    whether it needs the pair's draft model, how a run builds it: build(pair, cfg, gen, positions), and
    whether its tree is branches only: up to the first width of chains under the root, each as deep as
    the tree (prompt lookup), rather than every node of the shape."""
    name: str
    label: str
    uses_draft_model: bool
    build: Callable[..., Drafter]
    branches_only: bool = False


MODEL, PROMPT_LOOKUP = "model", "prompt_lookup"
# The one list of drafters: config validation, the page's radio, the CLI's choices, a run's text
# and the bench all read it. The first is the default.
DRAFTERS = {kind.name: kind for kind in (
    DrafterKind(MODEL, "draft model", True, _model_drafter),
    DrafterKind(PROMPT_LOOKUP, "prompt lookup", False, _lookup_drafter, branches_only=True),
)}
DEFAULT_DRAFTER = MODEL


def uses_draft_model(name: str) -> bool:
    """Whether the drafter of that name runs the pair's draft model (an unknown name: False)."""
    kind = DRAFTERS.get(name)
    return kind is not None and kind.uses_draft_model


def make_drafter(pair, cfg, gen: torch.Generator, positions: int) -> Drafter:
    """The drafter cfg.drafter names (cfg: the run's SpecConfig, validated against DRAFTERS)."""
    return DRAFTERS[cfg.drafter].build(pair, cfg, gen, positions)
