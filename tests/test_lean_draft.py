"""The lean CPU draft step (runtime/lean_draft.py): transformers' logits, its cache, its choices.

The draft never decides what the output is (the target and the acceptance rule do), so what is
checked here is that the lean step computes the draft's own model: its fp32 logits equal
transformers' forward to float rounding through prompts, single steps, multi-token feeds, crops
and buffer growth, for a plain Llama draft and for a borrowed draft with a subset head; its int8
weights stay close; and the races that run it stay exact.
"""
from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specviz.runtime import lean_draft
from specviz.runtime.cached_model import CachedModel, cached_model
from specviz.engine.loop.config import SpecConfig
from specviz.runtime.lean_draft import LeanCachedModel, LeanWeights, unsupported
from specviz import speculate
from specviz.training.distill import make_draft
from specviz.training.feature_unroll import from_borrowed

from .helpers import last, reference


def _walk(hf, lean, vocab: int, seed: int = 0) -> tuple[float, float]:
    """Feed both the same sequence of feeds and crops; (largest |logit difference|, argmax agreement)."""
    gen = torch.Generator().manual_seed(seed)
    worst, agree, count = 0.0, 0, 0
    feeds = [40] + [1, 1, 3, 2, 1, 4, 1, 1, 2] * 3 + [230]        # the last one grows past 256 positions
    for i, m in enumerate(feeds):
        tokens = torch.randint(3, vocab, (m,), generator=gen)
        a, b = hf.feed(tokens, keep=m), lean.feed(tokens, keep=m)
        assert a.shape == b.shape and a.dtype == b.dtype == torch.float32
        finite = torch.isfinite(a)
        assert torch.equal(finite, torch.isfinite(b))               # the same tokens are impossible (-inf)
        worst = max(worst, (a[finite] - b[finite]).abs().max().item())
        agree += (a.argmax(-1) == b.argmax(-1)).sum().item()
        count += m
        if i % 4 == 3:                                              # a rejection: drop the last 2 positions
            hf.crop(hf.length - 2)
            lean.crop(lean.length - 2)
        assert hf.length == lean.length
    return worst, agree / count


def _borrowed(pair):
    """A borrowed draft of the tiny target: its first layer, a head over half its tokens."""
    torch.manual_seed(3)
    head = list(range(0, pair.vocab_size, 2))
    return make_draft(pair.target, [0], head, "test/target").eval()


@torch.inference_mode()
def test_fp32_lean_step_is_transformers_forward(pair):
    for model in (pair.draft, _borrowed(pair)):
        assert unsupported(model) is None
        hf = CachedModel(model, pair.vocab_size)
        lean = LeanCachedModel(LeanWeights(model, "fp32"), pair.vocab_size)
        worst, agree = _walk(hf, lean, pair.vocab_size)
        assert worst < 1e-3 and agree == 1.0, (type(model).__name__, worst, agree)
        assert lean.forwards == hf.forwards


@torch.inference_mode()
def test_int8_lean_step_stays_close(pair):
    model = pair.draft
    hf = CachedModel(model, pair.vocab_size)
    lean = LeanCachedModel(LeanWeights(model, "int8"), pair.vocab_size)
    worst, agree = _walk(hf, lean, pair.vocab_size)
    scale = model.lm_head.weight.abs().max().item() * model.model.norm.weight.abs().max().item()
    assert agree > 0.9, agree                         # int8 rows + bf16 activations: a close copy, not the same bits
    assert 0 < worst < 0.1 * scale * model.config.hidden_size ** 0.5


def test_unsupported_drafts_say_why(pair):
    cfg = LlamaConfig(**{**pair.draft.config.to_dict(), "attention_bias": True})
    assert "biases" in unsupported(LlamaForCausalLM(cfg))
    rope = LlamaConfig(**{**pair.draft.config.to_dict(),
                          "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}})
    assert "RoPE" in unsupported(LlamaForCausalLM(rope))
    assert "fp32" in unsupported(LlamaForCausalLM(pair.draft.config).to(torch.bfloat16))
    feature = from_borrowed(_borrowed(pair), steps=2)
    assert "hidden states" in unsupported(feature)
    assert unsupported(pair.draft) is None and unsupported(_borrowed(pair)) is None


@pytest.mark.parametrize("choice, path", [("transformers", CachedModel), ("fp32", LeanCachedModel),
                                          ("int8", LeanCachedModel)])
def test_the_choice_can_be_forced(pair, monkeypatch, choice, path):
    monkeypatch.setenv(lean_draft.ENV, choice)
    monkeypatch.setattr(lean_draft, "_built", type(lean_draft._built)())
    lm = cached_model(pair.draft, pair.vocab_size, draft=True)
    assert type(lm) is path
    if path is LeanCachedModel:
        assert lm.w.format == choice and choice in lm.decode_path
    assert type(cached_model(pair.target, pair.vocab_size)) is CachedModel     # the target never runs lean


def test_auto_choice_is_measured_once(pair, monkeypatch):
    monkeypatch.delenv(lean_draft.ENV, raising=False)
    monkeypatch.setattr(lean_draft, "_built", type(lean_draft._built)())
    monkeypatch.setattr(lean_draft, "_timed", {})
    first = lean_draft.lean_weights(pair.draft)
    assert first.format in ("fp32", "int8")
    assert set(first.step_ms) == {"fp32", "int8"} and all(ms > 0 for ms in first.step_ms.values())
    assert first.format_by == "chosen by timing on this machine"
    assert lean_draft.lean_weights(pair.draft) is first                       # cached per model


@pytest.mark.parametrize("choice", ["fp32", "int8"])
def test_races_with_a_lean_draft_stay_exact(pair, monkeypatch, choice):
    """Greedy output equals generate() token for token, whichever weights the draft runs on."""
    monkeypatch.setenv(lean_draft.ENV, choice)
    monkeypatch.setattr(lean_draft, "_built", type(lean_draft._built)())
    prompt = "def read(path):\n"
    done = last(speculate(pair, prompt, SpecConfig(k=4, max_new_tokens=40)))
    assert done.token_ids == reference(pair, prompt, 40)
    assert done.stats.draft_path == f"lean eager, {choice} weights"
    assert done.stats.draft_format_by == f"set by {lean_draft.ENV}={choice}"     # not "chosen by timing"


def test_the_bench_breakdown_times_lean_draft_steps(pair):
    """The bench's round breakdown counts the lean step as the draft's forward, and puts it back."""
    from specviz.bench.runner import phase_breakdown
    feed = LeanCachedModel.feed
    ids = pair.tokenizer("def read(path):\n")["input_ids"]
    out = phase_breakdown(pair, ids, SpecConfig(k=3, max_new_tokens=24))
    assert out["share"]["draft forward"] > 0.05
    assert LeanCachedModel.feed is feed


def _small_llama(width: int, vocab: int = 20) -> LlamaForCausalLM:
    torch.manual_seed(5)
    return LlamaForCausalLM(LlamaConfig(vocab_size=vocab, hidden_size=width, intermediate_size=2 * width,
                                        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                        max_position_embeddings=64)).eval()


def test_the_choice_is_timed_once_per_shape(monkeypatch):
    """Two loads of one draft (a second app in the process, a pair evicted and loaded again) run the same
    weights: timed again, a noisy machine could pick the other format where the two are close, and a seeded
    sampled race would then differ (the draft's q does not change the output's law, but it changes which
    samples are drawn). The timing is a property of the shapes, so it is taken once per shape."""
    monkeypatch.delenv(lean_draft.ENV, raising=False)
    monkeypatch.setattr(lean_draft, "_built", type(lean_draft._built)())
    monkeypatch.setattr(lean_draft, "_timed", {})
    calls = []

    def timed(candidates, repeats=15):                  # int8 clearly faster at first, then the reverse
        calls.append(len(candidates))
        return [1e-3, 5e-4] if len(calls) == 1 else [5e-4, 1e-3]
    monkeypatch.setattr(lean_draft, "_timed_steps", timed)
    first, again, other = _small_llama(32), _small_llama(32), _small_llama(48)
    assert lean_draft.lean_weights(first).format == "int8"
    second = lean_draft.lean_weights(again)
    assert second is not lean_draft.lean_weights(first) and second.format == "int8" and calls == [2]
    assert second.step_ms == {"fp32": 1.0, "int8": 0.5} and second.format_by == "chosen by timing on this machine"
    assert lean_draft.lean_weights(other).format == "fp32" and calls == [2, 2]     # another shape: timed anew
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1 if threads != 1 else 2)
        assert lean_draft.lean_weights(_small_llama(32)).format == "fp32" and calls == [2, 2, 2]   # other threads
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("choice", ["auto", "int8"])
def test_int8_only_where_the_kernel_fits(monkeypatch, choice):
    """torch's CPU int8 kernel needs input widths that are multiples of 16 (others give wrong numbers or
    crash): such a draft keeps fp32 even when int8 is asked for. A vocabulary under 32 tokens times fine."""
    monkeypatch.setenv(lean_draft.ENV, choice)
    monkeypatch.setattr(lean_draft, "_built", type(lean_draft._built)())
    odd, even = _small_llama(40), _small_llama(32)
    assert lean_draft.lean_weights(odd).format == "fp32"
    assert "cannot run this draft" in lean_draft.lean_weights(odd).format_by      # neither timed nor as asked
    weights = lean_draft.lean_weights(even)
    assert weights is not None and (choice == "auto" or weights.format == "int8")


def test_what_the_loop_would_get_wrong_is_refused(pair):
    model = _small_llama(32)
    model.config.num_hidden_layers = 2                       # more than the model has
    assert "fewer layers" in unsupported(model)
    from specviz.models.borrowed_draft import BorrowedDraftForCausalLM
    loose = BorrowedDraftForCausalLM(_borrowed(pair).config)   # never given its target's tensors
    assert "borrow_from" in unsupported(loose)
    assert "fp32" in unsupported(_small_llama(32).to(torch.float64))
