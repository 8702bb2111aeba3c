"""A draft that borrows its target's embedding and output rows: only its own layers are shipped.

For a 49k-token target (SmolLM2) a conventional small draft is mostly embedding and output head:
28 M of SmolLM2-135M's parameters are its (tied) embedding matrix, and a full-vocabulary head
alone would cost a draft step as much as 7 of the target's 30 layers. So, as Medusa and EAGLE
heads do, this draft uses the target's own embedding module (shared, not copied) and, as FR-Spec
(Zhao et al. 2025) does, an output head over only the `head_size` most frequent tokens of the
target's own outputs: the target's embedding rows for those tokens, copied at load time.

Outside that subset the draft's logits are -inf, so q = 0 there: the draft never proposes those
tokens, and the acceptance rule stays exact (at a rejection the residual norm(max(0, p - q))
gives their target mass back). What ships: a few Llama decoder layers, the final norm and the
subset's token ids. The class registers itself with transformers' Auto classes, so the folder
loads with `AutoModelForCausalLM.from_pretrained` (no remote code); `borrow_from(target)` then
attaches the target's tensors, and `load_pair` does that for you.
"""
from __future__ import annotations

import torch
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from ..errors import LoadError


class BorrowedDraftConfig(LlamaConfig):
    model_type = "specviz_borrowed_draft"

    def __init__(self, head_size: int = 8192, target_id: str | None = None, target_embedding_norm: float | None = None,
                 **kwargs):
        super().__init__(**kwargs)
        self.head_size = head_size                      # tokens the draft can propose
        self.target_id = target_id                      # the target it was distilled from (a hub id)
        self.target_embedding_norm = target_embedding_norm  # Frobenius norm of that target's embedding matrix


class SubsetHead(nn.Module):
    """Logits over the whole vocabulary from a projection onto `token_ids` only; -inf elsewhere."""

    def __init__(self, hidden_size: int, head_size: int, vocab_size: int):
        super().__init__()
        self.proj = nn.Linear(hidden_size, head_size, bias=False)   # rows borrowed from the target
        self.register_buffer("token_ids", torch.arange(head_size), persistent=True)
        self.out_features = vocab_size

    def subset_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., hidden) -> (..., head_size): logits of the subset's tokens, in `token_ids` order."""
        return self.proj(hidden)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        sub = self.subset_logits(hidden)
        full = sub.new_full((*sub.shape[:-1], self.out_features), float("-inf"))
        return full.index_copy_(-1, self.token_ids, sub)


class BorrowedDraftForCausalLM(LlamaForCausalLM):
    config_class = BorrowedDraftConfig
    # Not in the saved folder: attached from the target by borrow_from().
    _keys_to_ignore_on_load_missing = [r"model\.embed_tokens\.weight", r"lm_head\.proj\.weight"]
    BORROWED_KEYS = ("model.embed_tokens.weight", "lm_head.proj.weight")

    def __init__(self, config: BorrowedDraftConfig):
        super().__init__(config)
        self.lm_head = SubsetHead(config.hidden_size, config.head_size, config.vocab_size)
        self.borrowed = False

    def borrow_from(self, target) -> "BorrowedDraftForCausalLM":
        """Share the target's embedding module and copy its output rows for the head's tokens."""
        embedding = target.get_input_embeddings()
        rows, width = embedding.weight.shape
        if width != self.config.hidden_size or rows < self.config.vocab_size:
            raise LoadError(f"this draft was made for a target of width {self.config.hidden_size} and "
                            f"{self.config.vocab_size} tokens, not {width} and {rows}")
        expected = self.config.target_embedding_norm
        if expected and abs(float(embedding.weight.detach().float().norm()) / expected - 1) > 0.05:
            raise LoadError(f"this draft was distilled from {self.config.target_id}; the target given has "
                            f"different embeddings")
        self.model.embed_tokens = embedding
        head = target.get_output_embeddings().weight
        with torch.no_grad():
            rows = head.index_select(0, self.lm_head.token_ids.to(head.device))
            self.lm_head.proj.weight = nn.Parameter(rows.to(self.dtype).contiguous(), requires_grad=False)
        self.borrowed = True
        return self

    def forward(self, *args, **kwargs):
        if not self.borrowed:
            raise LoadError("a borrowed-weights draft needs its target: call borrow_from(target) (load_pair does)")
        return super().forward(*args, **kwargs)

    def own_state_dict(self) -> dict:
        """What the draft ships: everything but the borrowed tensors."""
        return {k: v for k, v in self.state_dict().items() if k not in self.BORROWED_KEYS}


AutoConfig.register(BorrowedDraftConfig.model_type, BorrowedDraftConfig)
AutoModelForCausalLM.register(BorrowedDraftConfig, BorrowedDraftForCausalLM)
