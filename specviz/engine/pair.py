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
