"""The fast path: a static KV cache and compiled decode steps (CUDA graphs on CUDA).

The default path (cached_model.py) runs each forward eagerly, so a step of a small model
costs mostly kernel launches and Python, not arithmetic. Here the cache is preallocated
(transformers' `StaticCache`: fixed shapes, fixed addresses), and the forward of a few
tokens after the prompt (a draft step, a catch-up, a verify pass, a plain step) runs
through `torch.compile`; on CUDA in "reduce-overhead" mode, which replays
the step as a CUDA graph (transformers' `generate` compiles its static-cache decoding the
same way). Prefills (the first forward) run eagerly.

Exactness: the cache holds the same keys/values; attention spans the whole preallocated
length, with positions past the sequence masked out (causal mask over position ids).
Rolling back is setting the write position (`cumulative_length`) back: stale entries past
it are masked and then overwritten. Compiled kernels may round differently from eager
ones, which the tests bound (greedy output equal to the default path's).

Compiled graphs are keyed by shapes, so caches come from a pool of a few fixed capacities
and are reused across runs (a fresh cache per run would also defeat CUDA graphs, whose
inputs must keep their addresses). Each distinct (tokens, kept logits, capacity) compiles
once, on first use: tens of seconds per step shape on a CPU, seconds on a GPU. Opt in with SpecConfig(fast=True).
"""
from __future__ import annotations

import threading
from collections import defaultdict

import torch
from transformers import StaticCache

from ..errors import ConfigError

MIN_CAPACITY = 256          # cache positions; capacities are powers of two from here
MAX_COMPILED_TOKENS = 33    # forwards of more tokens than this (k is at most 32, plus one) run eagerly
RECOMPILE_LIMIT = 64        # distinct step shapes per model: tokens 1..k+1 times a few capacities


def capacity_for(tokens: int) -> int:
    """The smallest pooled capacity holding `tokens` positions."""
    capacity = MIN_CAPACITY
    while capacity < tokens:
        capacity *= 2
    return capacity


class CachePool:
    """Static caches kept per (model, capacity) and lent to one run at a time."""

    def __init__(self):
        self._free: dict[tuple[int, int], list[StaticCache]] = defaultdict(list)
        self._lock = threading.Lock()

    def acquire(self, model, capacity: int) -> StaticCache:
        with self._lock:
            free = self._free[(id(model), capacity)]
            if free:
                return free.pop()
        return StaticCache(config=model.config, max_cache_len=capacity)

    def release(self, model, capacity: int, cache: StaticCache) -> None:
        with self._lock:
            self._free[(id(model), capacity)].append(cache)


POOL = CachePool()


def compiled_forward(model):
    """The model's call compiled once per model (kept on the model object), as transformers'
    own `get_compiled_call` does: `__call__` keeps any hooks, and without fullgraph a model
    with a graph break still runs (in pieces) rather than failing mid-run."""
    step = getattr(model, "_specviz_compiled_forward", None)
    if step is None:
        dynamo = torch._dynamo.config
        dynamo.recompile_limit = max(dynamo.recompile_limit, RECOMPILE_LIMIT)
        dynamo.accumulated_recompile_limit = max(dynamo.accumulated_recompile_limit, 4 * RECOMPILE_LIMIT)
        device = model.get_input_embeddings().weight.device
        mode = "reduce-overhead" if device.type == "cuda" else "default"
        step = torch.compile(model.__call__, mode=mode, fullgraph=False, dynamic=False)
        model._specviz_compiled_forward = step
    return step


class StaticCachedModel:
    """Same interface as CachedModel: `feed`, `crop`, `length`, `forwards`; plus `release`."""
    decode_path = "torch.compile"

    def __init__(self, model, vocab_size: int, positions: int):
        self.model = model
        self.vocab_size = vocab_size
        self.device = model.get_input_embeddings().weight.device
        self.capacity = capacity_for(positions)
        self.cache = POOL.acquire(model, self.capacity)
        if any(layer.is_sliding for layer in self.cache.layers):
            POOL.release(model, self.capacity, self.cache)
            raise ConfigError("the fast path does not support sliding-window attention: run without fast")
        self.step = compiled_forward(model)
        self._length = 0
        self.forwards = 0
        self.cache_reset()

    def cache_reset(self) -> None:
        # Inference mode: on CUDA the layer moved `cumulative_length` to the device inside the
        # engine's inference mode, which made it an inference tensor; writing one in place is
        # only allowed inside inference mode (on CPU the move returned the same, normal tensor).
        with torch.inference_mode():
            for layer in self.cache.layers:
                if layer.is_initialized:
                    layer.cumulative_length.zero_()

    @property
    def length(self) -> int:
        return self._length

    def feed(self, tokens: torch.Tensor, keep: int) -> torch.Tensor:
        m = tokens.numel()
        if self._length + m > self.capacity:
            raise RuntimeError(f"static cache overflow: {self._length} + {m} > {self.capacity} positions")
        decode_step = self._length > 0 and m <= MAX_COMPILED_TOKENS
        forward = self.step if decode_step else self.model
        out = forward(input_ids=tokens.view(1, -1).to(self.device), past_key_values=self.cache,
                      use_cache=True, logits_to_keep=keep)
        self._length += m
        self.forwards += 1
        # Copy: a replayed CUDA graph writes its next output into the same memory.
        return out.logits[0, :, : self.vocab_size].float().clone()

    def crop(self, length: int) -> None:
        """Move the write position back to `length`; entries past it are masked, then overwritten."""
        if length < self._length:
            with torch.inference_mode():              # see cache_reset
                for layer in self.cache.layers:
                    layer.cumulative_length.fill_(length)
            self._length = length

    def release(self) -> None:
        """Give the cache back to the pool (the run is over)."""
        if self.cache is not None:
            POOL.release(self.model, self.capacity, self.cache)
            self.cache = None
