"""The engine's KV caches hold exactly what transformers' concatenating cache holds.

A sequence of forwards with rollbacks (as speculative rounds do) is run through a plain
DynamicCache and through each of the engine's caches; logits must match bit for bit for
the in-place buffer (the same values, only stored differently).
"""
from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM, DynamicCache

from specviz.runtime import kv_buffer
from specviz.runtime.cached_model import CachedModel

# (tokens fed, cache length to crop back to afterwards or None): prefill, drafts, a rejection
# that drops three positions, an all-accepted round, and enough steps to outgrow the buffer.
SCHEDULE = [(7, None), (1, None), (5, 10), (3, None), (1, 11), (6, None), (2, 15)] + [(1, None)] * 12


def run_schedule(model, cache) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    outs = []
    with torch.inference_mode():
        for n, crop_to in SCHEDULE:
            ids = torch.randint(0, model.config.vocab_size, (1, n), generator=g)
            outs.append(model(input_ids=ids, past_key_values=cache, use_cache=True).logits)
            if crop_to is not None:
                cache.crop(crop_to - cache.get_seq_length())
    return outs


def test_buffered_cache_matches_dynamic_cache_bit_for_bit(tiny_dirs, monkeypatch):
    monkeypatch.setattr(kv_buffer, "FIRST_CAPACITY", 8)    # force several doublings
    model = AutoModelForCausalLM.from_pretrained(tiny_dirs["target"], dtype=torch.float32).eval()
    reference = run_schedule(model, DynamicCache(config=model.config))
    cache = kv_buffer.buffered_cache(model.config)
    buffered = run_schedule(model, cache)
    assert all(torch.equal(a, b) for a, b in zip(reference, buffered))
    layer = cache.layers[0]
    assert isinstance(layer, kv_buffer.BufferedLayer)
    assert layer._k_buf.shape[-2] == 32 >= cache.get_seq_length() == 27    # grew 8 -> 16 -> 32


def test_cached_model_crop_then_feed_equals_fresh_prefix(tiny_dirs):
    model = AutoModelForCausalLM.from_pretrained(tiny_dirs["target"], dtype=torch.float32).eval()
    ids = torch.arange(3, 23)
    with torch.inference_mode():
        lm = CachedModel(model, model.config.vocab_size)
        lm.feed(ids[:12], keep=1)
        lm.feed(ids[12:18], keep=6)       # six drafts; keep only two of them
        lm.crop(14)
        rolled = lm.feed(ids[14:20], keep=6)
        fresh = CachedModel(model, model.config.vocab_size)
        straight = fresh.feed(ids[:20], keep=6)
    assert lm.length == fresh.length == 20
    torch.testing.assert_close(rolled, straight, rtol=1e-5, atol=1e-5)
