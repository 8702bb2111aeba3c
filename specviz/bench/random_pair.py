"""Random-weight model pairs shaped like real ones, for timing the engine at scale.

The cost of a forward pass does not depend on the weights, so a Qwen2.5-0.5B-shaped draft
and a Qwen2.5-7B-shaped target with random weights, run with forced acceptance, show how
the engine performs on real-size architectures without downloading anything. The shapes
are the published configs' numbers. Outputs are meaningless: timing only.
"""
from __future__ import annotations

import torch
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from ..models.loading import make_pair, pick_device, pick_dtype

SHAPES = {  # hidden, layers, heads, kv heads, intermediate, vocab
    "qwen2.5-0.5b": (896, 24, 14, 2, 4864, 151936),
    "qwen2.5-7b": (3584, 28, 28, 4, 18944, 152064),
    "tiny-draft": (64, 1, 4, 2, 128, 512),
    "tiny-target": (64, 4, 4, 2, 128, 512),
}
PAIRS = {"qwen2.5-0.5b:7b": ("qwen2.5-7b", "qwen2.5-0.5b"), "tiny": ("tiny-target", "tiny-draft")}


def _model(shape: str, device, dtype):
    hidden, layers, heads, kv, inter, vocab = SHAPES[shape]
    cfg = Qwen2Config(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
                      intermediate_size=inter, vocab_size=vocab, max_position_embeddings=4096,
                      tie_word_embeddings=shape == "qwen2.5-0.5b", eos_token_id=None, bos_token_id=None)
    with torch.device(device):
        model = Qwen2ForCausalLM(cfg).to(dtype)
    model.generation_config.eos_token_id = None
    return model.eval()


def _tokenizer(vocab: int) -> PreTrainedTokenizerFast:
    words = {f"w{i}": i for i in range(vocab)}
    tok = Tokenizer(models.WordLevel(words, unk_token="w0"))
    from tokenizers import pre_tokenizers
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="w0")


def random_pair(name: str, device: str = "auto"):
    dev = pick_device(device)
    dtype = pick_dtype("auto", dev)
    target_shape, draft_shape = PAIRS[name]
    torch.manual_seed(0)
    target, draft = _model(target_shape, dev, dtype), _model(draft_shape, dev, dtype)
    vocab = min(SHAPES[target_shape][5], SHAPES[draft_shape][5])
    return make_pair(target, draft, _tokenizer(vocab), vocab, f"random {target_shape}", f"random {draft_shape}")
