"""ModelPair: the narrow interface the engine needs from loaded models.

The loader (specviz.models.loading) builds it; tests build it from tiny local models.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class ModelPair:
    target: torch.nn.Module
    draft: torch.nn.Module | None   # None: only prompt lookup can draft
    tokenizer: object               # a transformers tokenizer shared by both models
    vocab_size: int                 # rows both models share (padding rows beyond it are ignored)
    device: torch.device            # where inputs go and random draws are made
    max_positions: int              # longest sequence the models accept (prompt + output)
    eos_token_ids: frozenset[int] = field(default_factory=frozenset)
    target_name: str = "target"
    draft_name: str = "draft"

    @property
    def max_prompt_tokens(self) -> int:
        """The longest prompt the models take: one position is left for the output."""
        return self.max_positions - 1

    @property
    def draft_reads_features(self) -> bool:
        """The draft reads the target's hidden states (EAGLE-style, models/feature_draft.py): it runs
        as a FeatureDrafter, never on the fast path nor as transformers' assistant. The model class
        declares it (`reads_target_features = True`); any other model, or no draft, does not."""
        return bool(getattr(self.draft, "reads_target_features", False))
