"""The fast path (static KV cache + compiled decode steps) gives the default path's output.

Compiling is slow on a CPU (tens of seconds per step shape even for the tiny models), so
these tests share one set of shapes: k = 3, 24 new tokens, two prompts.
"""
import pytest
import torch

from specviz import SpecConfig, decode_baseline, speculate
from specviz.runtime import static_model

from .helpers import PROMPTS, last

pytestmark = pytest.mark.slow    # torch.compile: tens of seconds per step shape on a CPU

N = 24


def test_fast_path_greedy_equals_default_path(pair):
    rejected = 0
    for prompt in PROMPTS[:2]:
        reference = last(decode_baseline(pair, prompt, SpecConfig(max_new_tokens=N))).token_ids
        fast_plain = last(decode_baseline(pair, prompt, SpecConfig(max_new_tokens=N, fast=True)))
        fast_spec = last(speculate(pair, prompt, SpecConfig(k=3, max_new_tokens=N, fast=True)))
        assert fast_plain.token_ids == reference
        assert fast_spec.token_ids == reference
        rejected += fast_spec.stats.tally.rejected
    assert rejected > 0            # rollbacks of the static cache were exercised


def test_fast_path_reuses_caches_and_compiled_steps(pair):
    cfg = SpecConfig(k=3, max_new_tokens=N, fast=True)
    first = last(speculate(pair, PROMPTS[0], cfg))
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    pooled = {key: len(free) for key, free in static_model.POOL._free.items()}
    again = last(speculate(pair, PROMPTS[0], cfg))
    assert again.token_ids == first.token_ids
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs     # nothing recompiled
    assert {key: len(free) for key, free in static_model.POOL._free.items()} == pooled   # caches came back


def test_closing_a_fast_lane_early_returns_its_caches(pair):
    cfg = SpecConfig(k=3, max_new_tokens=N, fast=True)
    last(speculate(pair, PROMPTS[0], cfg))              # compiled and pooled already
    free = sum(len(f) for f in static_model.POOL._free.values())
    lane = speculate(pair, PROMPTS[0], cfg)
    next(lane)
    assert sum(len(f) for f in static_model.POOL._free.values()) == free - 2   # target and draft lent
    lane.close()
    assert sum(len(f) for f in static_model.POOL._free.values()) == free


def test_capacities_are_pooled_powers_of_two():
    assert static_model.capacity_for(1) == static_model.MIN_CAPACITY
    assert static_model.capacity_for(257) == 512
    assert static_model.capacity_for(4096) == 4096


def test_pooled_static_cache_survives_a_copying_device_move(pair):
    """On CUDA the cache's `cumulative_length` is moved with `.to(device)` inside inference mode,
    which copies it into an inference tensor; the next run that borrows the pooled cache resets it.
    On CPU `.to("cpu")` returns the same tensor, so the copy is made here by hand (as on CUDA)."""
    ids = torch.tensor(pair.tokenizer(PROMPTS[0])["input_ids"])
    first = static_model.StaticCachedModel(pair.target, pair.vocab_size, positions=64)
    with torch.inference_mode():
        first.feed(ids, keep=1)                       # a prefill: eager, initializes every layer
        for layer in first.cache.layers:              # what `.to("cuda")` does inside inference mode
            layer.cumulative_length = layer.cumulative_length.clone()
    first.release()
    second = static_model.StaticCachedModel(pair.target, pair.vocab_size, positions=64)   # borrows and resets it
    try:
        assert second.length == 0
        assert all(int(layer.cumulative_length) == 0 for layer in second.cache.layers if layer.is_initialized)
        second.crop(0)
        with torch.inference_mode():
            second.feed(ids, keep=1)
        second.crop(2)                                 # a rollback outside inference mode, as a consumer may do
        assert all(int(layer.cumulative_length) == 2 for layer in second.cache.layers)
    finally:
        second.release()
