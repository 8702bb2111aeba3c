"""The GPU decode path: static KV caches and decode steps replayed as CUDA graphs, no compiling.

`GraphCachedModel` implements `ModelWithCache` (cached_model.py). Its cache is preallocated
at a pooled capacity (fixed shapes and addresses, as transformers' `StaticCache` and gpt-fast's
`KVCache`); unlike `StaticCache`, which advances a counter in each layer, the positions a step
writes come from outside, gpt-fast's `input_pos`: one static buffer the step reads. The step
is the model's own forward, given explicitly what it would otherwise derive from the cache on
the host: position ids, and a 4-D additive mask built on the device from those positions
(key j is seen by the query at position p iff j <= p), so nothing in it reads a device value
on the host and the whole step can be captured. Prefills (the first feed) run eagerly; every
later feed of n tokens keeping `keep` logits replays the graph of (n, keep), captured on
first use (graph_capture.py): 1 for draft and plain steps, 2 for a draft catching up, k + 1
for a verify pass. Rolling back is moving the length: entries past it are masked, then overwritten.

Caches, with their graphs, are pooled per (model, capacity, vocabulary) and lent to one run at a time:
a pair captures once per loaded pair and lane shape, and later runs replay (capture_s = 0).
Exactness: the same forward with the same keys and values; attention spans the whole
capacity with the masked entries at -inf weight, which rounds like the eager path in fp32
(tests/test_cuda_graphs.py checks greedy identity with generate()).
"""
from __future__ import annotations

import functools
import threading
import weakref
from collections import defaultdict
from dataclasses import dataclass

import torch
from transformers import StaticCache
from transformers.cache_utils import Cache, StaticLayer

from .graph_capture import Capturer, GraphSet, capturer_for
from .static_model import capacity_for

MAX_GRAPH_TOKENS = 33       # feeds of more tokens (k is at most 32, plus one) run eagerly, as prefills do
ATTENTION = ("sdpa", "eager")   # implementations that take a 4-D additive mask as given


def unsupported(model) -> str | None:
    """Why `model` cannot take this path (None: it can)."""
    if getattr(model.config, "_attn_implementation", "eager") not in ATTENTION:
        return f"attention implementation {model.config._attn_implementation} (needs sdpa or eager)"
    devices = {str(d) for d in (getattr(model, "hf_device_map", None) or {}).values()}
    if len(devices) > 1:
        return "the model is spread over several devices"
    layers = StaticCache(config=model.config, max_cache_len=8).layers     # lazy: allocates nothing
    if any(type(layer) is not StaticLayer for layer in layers):
        return "sliding-window or non-attention layers"
    return None


class _Slot:
    """Where the current step writes: the positions tensor all layers read (shared)."""
    positions: torch.Tensor | None = None
    length: int = 0


class _PositionedLayer(StaticLayer):
    """A StaticLayer that writes keys and values at the slot's positions instead of its own counter."""

    def __init__(self, max_cache_len: int, slot: _Slot):
        super().__init__(max_cache_len=max_cache_len)
        self.slot = slot

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        self.keys.index_copy_(2, self.slot.positions, key_states)        # (1, heads, capacity, dim)
        self.values.index_copy_(2, self.slot.positions, value_states)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.slot.length


@dataclass
class _Buffers:
    """One step shape's static inputs: token ids (n,), their positions (n,), offsets 0..n-1."""
    tokens: torch.Tensor
    positions: torch.Tensor
    offsets: torch.Tensor


class _Bundle:
    """A static cache, the graphs captured over it (their addresses are the cache's) and the step
    they capture: a function of the bundle alone, since a later run replays what an earlier one captured."""

    def __init__(self, model, vocab_size: int, capacity: int, capturer: Capturer):
        self.model, self.vocab_size = model, vocab_size
        self.device = model.get_input_embeddings().weight.device
        self.dtype = model.get_input_embeddings().weight.dtype
        self.slot = _Slot()
        self.cache = Cache(layers=[_PositionedLayer(capacity, self.slot) for _ in range(model.config.num_hidden_layers)])
        self.kv_index = torch.arange(capacity, device=self.device)          # (capacity,)
        self.graphs = GraphSet(capturer, self.device)

    def step(self, tokens: torch.Tensor, positions: torch.Tensor, keep: int) -> torch.Tensor:
        """The forward a graph captures: reads tokens (n,) and positions (n,) only through tensors."""
        self.slot.positions = positions
        seen = self.kv_index[None, :] <= positions[:, None]                # (n, capacity): key j seen by query i
        mask = torch.zeros(seen.shape, dtype=self.dtype, device=self.device)
        mask = mask.masked_fill(~seen, torch.finfo(self.dtype).min)[None, None]   # (1, 1, n, capacity)
        # cache_position too, from the same tensor: left out, transformers derives it from the cache's
        # length on the host, a number a CUDA graph would freeze at its capture.
        out = self.model(input_ids=tokens.view(1, -1), position_ids=positions.view(1, -1), attention_mask=mask,
                         cache_position=positions, past_key_values=self.cache, use_cache=True, logits_to_keep=keep)
        return out.logits[0, :, : self.vocab_size].float()                 # (keep, V)


class BundlePool:
    """Bundles kept per (model, (capacity, vocabulary)); `forget(model)` (or the model's garbage collection)
    invalidates their graphs and lets their memory go."""

    def __init__(self):
        self._free: dict[tuple[int, tuple], list[_Bundle]] = defaultdict(list)
        self._watched: set[int] = set()
        self._lock = threading.Lock()

    def acquire(self, model, shape: tuple, make) -> _Bundle:
        with self._lock:
            free = self._free[(id(model), shape)]
            if free:
                return free.pop()
            if id(model) not in self._watched:
                self._watched.add(id(model))
                weakref.finalize(model, self._forget_id, id(model))
        return make()

    def release(self, model, shape: tuple, bundle: _Bundle) -> None:
        with self._lock:
            if bundle.graphs.valid:
                self._free[(id(model), shape)].append(bundle)

    def forget(self, model) -> None:
        self._forget_id(id(model))

    def _forget_id(self, model_id: int) -> None:
        with self._lock:
            for key in [key for key in self._free if key[0] == model_id]:
                for bundle in self._free.pop(key):
                    bundle.graphs.invalidate()
            self._watched.discard(model_id)


POOL = BundlePool()


class GraphCachedModel:
    """ModelWithCache over a pooled static cache; decode steps replayed as captured graphs.
    `capturer` (default: CUDA graphs on CUDA, eager elsewhere) applies to a new cache only: a
    pooled one keeps its own, with the graphs it captured."""

    def __init__(self, model, vocab_size: int, positions: int, capturer: Capturer | None = None):
        self.model, self.vocab_size = model, vocab_size
        self.device = model.get_input_embeddings().weight.device
        self.capacity = capacity_for(positions)
        self.bundle = POOL.acquire(model, (self.capacity, vocab_size),
                                   lambda: _Bundle(model, vocab_size, self.capacity, capturer or capturer_for(self.device)))
        self.graphs = self.bundle.graphs
        self._captures0, self._capture_s0 = self.graphs.captures, self.graphs.capture_s
        self._length = 0
        self.forwards = 0

    @property
    def length(self) -> int:
        return self._length

    @property
    def decode_path(self) -> str:
        return self.graphs.path

    @property
    def captures(self) -> int:
        """Graphs this run captured (0 when its pooled cache came with them)."""
        return self.graphs.captures - self._captures0

    @property
    def capture_s(self) -> float:
        """Seconds this run spent capturing."""
        return self.graphs.capture_s - self._capture_s0

    @torch.inference_mode()
    def feed(self, tokens: torch.Tensor, keep: int) -> torch.Tensor:
        """Run tokens (n,) after the cached ones; the last `keep` positions' logits (keep, V) fp32."""
        n, start = tokens.numel(), self._length
        if start + n > self.capacity:
            raise RuntimeError(f"static cache overflow: {start} + {n} > {self.capacity} positions")
        self.bundle.slot.length = start
        tokens = tokens.view(-1).to(self.device)
        if start == 0 or n > MAX_GRAPH_TOKENS:
            logits = self.bundle.step(tokens, torch.arange(start, start + n, device=self.device), keep)
        else:
            key = (n, keep)
            buf = self.graphs.buffers_for(key, self._buffers)
            buf.tokens.copy_(tokens)
            torch.add(buf.offsets, start, out=buf.positions)
            # The step is the bundle's, not this object's: a later run with this cache replays it.
            step = functools.partial(self.bundle.step, buf.tokens, buf.positions, keep)
            logits = self.graphs.run(key, step).clone()
        self._length = start + n
        self.forwards += 1
        return logits

    def _buffers(self, key) -> _Buffers:
        n, _ = key
        offsets = torch.arange(n, device=self.device)
        return _Buffers(torch.zeros(n, dtype=torch.long, device=self.device), offsets.clone(), offsets)

    def crop(self, length: int) -> None:
        """Keep the first `length` tokens: later entries are masked by position, then overwritten."""
        self._length = min(self._length, length)

    def release(self) -> None:
        """Lend the cache, with its graphs, to the next run."""
        if self.bundle is not None:
            POOL.release(self.model, (self.capacity, self.vocab_size), self.bundle)
            self.bundle = None
