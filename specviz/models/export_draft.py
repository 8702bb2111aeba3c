"""Write a borrowed-weights draft as a plain Llama folder that any engine (vLLM, transformers) loads.

The shipped SmolLM2 draft (borrowed_draft.py) carries only its own layers: at load time it shares the
target's embedding and copies the target's output rows for its 8,192 most frequent tokens, and its
logits are -inf everywhere else. A serving engine knows nothing of that class, so `export_draft`
writes an ordinary `LlamaForCausalLM`: the draft's layers and final norm, the target's embedding, and
an output head tied to that embedding over the whole vocabulary.

How the exported draft's logits differ: on the head's 8,192 tokens they are the same numbers (the
target's head is tied to its embedding, so the copied rows are embedding rows); outside them they are
finite instead of -inf. Its q therefore puts some mass on tokens the shipped draft never proposes, and
q on the subset is the shipped q scaled down by the subset's share of the softmax. Both drafts keep the
target's distribution exactly under the acceptance rule; only how often the target agrees changes
(measured in benchmarks/vllm-remote.md).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from ..errors import LoadError
from .borrowed_draft import BorrowedDraftForCausalLM

# Tokenizer and template files copied beside the weights, so the folder serves on its own.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
                   "generation_config.json")


def plain_llama(draft: BorrowedDraftForCausalLM) -> LlamaForCausalLM:
    """A LlamaForCausalLM with the (already borrowed) draft's layers and the target's tied embedding."""
    if not getattr(draft, "borrowed", False):
        raise LoadError("the draft has not borrowed its target's tensors yet: load it with load_pair")
    config = LlamaConfig(**{k: v for k, v in draft.config.to_dict().items()
                            if k not in ("head_size", "target_id", "target_embedding_norm", "model_type",
                                         "architectures", "auto_map", "transformers_version")})
    config.tie_word_embeddings = True
    config.architectures = ["LlamaForCausalLM"]
    plain = LlamaForCausalLM(config).to(torch.float32)
    own = {k: v for k, v in draft.state_dict().items() if not k.startswith("lm_head.")}
    missing, unexpected = plain.load_state_dict(own, strict=False)
    # The tied head is the embedding itself; nothing else may be left out.
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise LoadError(f"the draft's tensors do not fit a plain Llama: missing {missing}, unexpected {unexpected}")
    plain.tie_weights()
    return plain.eval()


def export_draft(draft: BorrowedDraftForCausalLM, tokenizer_folder: str | Path, out: str | Path) -> Path:
    """Save the draft as a plain Llama folder at `out` (weights, config, the target's tokenizer files)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plain_llama(draft).save_pretrained(out)
    for name in TOKENIZER_FILES:
        source = Path(tokenizer_folder, name)
        if source.exists():
            shutil.copyfile(source, out / name)
    return out
