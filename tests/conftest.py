"""Tiny models built inside the tests (no network): a BPE tokenizer trained on a little
stdlib text, a 2-layer Llama target, and drafts that agree with it partly (a one-layer
cut of the target), not at all (independent random weights), or fully (the target).
Weights use a large init scale so logits are well separated: greedy ties would otherwise
depend on float rounding rather than on the engine.
"""
from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from specviz.training.corpus import split_corpus  # noqa: E402
from specviz.models.loading import load_pair  # noqa: E402
from specviz.training.tokenizer_train import train_tokenizer  # noqa: E402

hf_logging.disable_progress_bar()
torch.set_num_threads(1)

PROMPTS = ["def add(a, b):\n    return", "import os\nimport sys\n\n\nclass", "for i in range(10):\n    print(i)\nfor i in"]


def tiny_config(tokenizer, layers: int, width: int = 48) -> LlamaConfig:
    return LlamaConfig(vocab_size=len(tokenizer), hidden_size=width, intermediate_size=2 * width,
                       num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=4,
                       max_position_embeddings=256, tie_word_embeddings=True, initializer_range=0.3,
                       bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                       pad_token_id=tokenizer.pad_token_id)


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("tiny")
    texts, _ = split_corpus(max_files=12)
    tokenizer = train_tokenizer(texts, vocab_size=320)
    torch.manual_seed(0)
    target = LlamaForCausalLM(tiny_config(tokenizer, layers=2))
    cut = LlamaForCausalLM(tiny_config(tokenizer, layers=1))
    state = {k: v for k, v in target.state_dict().items() if not k.startswith("model.layers.1.")}
    cut.load_state_dict(state)            # the target's first layer, embeddings and head
    torch.manual_seed(1)
    rand = LlamaForCausalLM(tiny_config(tokenizer, layers=1))
    dirs = {}
    for name, model in {"target": target, "cut": cut, "random": rand}.items():
        dirs[name] = str(root / name)
        model.save_pretrained(dirs[name])
        tokenizer.save_pretrained(dirs[name])
    return dirs


@pytest.fixture(scope="session")
def pair(tiny_dirs):
    """Target + a draft that agrees with it part of the time."""
    return load_pair(tiny_dirs["target"], tiny_dirs["cut"], device="cpu")


@pytest.fixture(scope="session")
def pair_random(tiny_dirs):
    return load_pair(tiny_dirs["target"], tiny_dirs["random"], device="cpu")


@pytest.fixture(scope="session")
def pair_self(tiny_dirs):
    return load_pair(tiny_dirs["target"], tiny_dirs["target"], device="cpu")
