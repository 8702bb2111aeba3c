"""The GPU decode path: static KV caches and decode steps replayed as CUDA graphs, no compiling.

`GraphCachedModel` implements `ModelWithCache` (cached_model.py). Its cache is preallocated
at a pooled capacity (fixed shapes and addresses, as transformers' `StaticCache` and gpt-fast's
`KVCache`); unlike `StaticCache`, which advances a counter in each layer, the positions a step
writes come from outside, gpt-fast's `input_pos`: one static buffer the step reads. The step
is the model's own forward, given explicitly what it would otherwise derive from the cache on
the host: position ids, and a 4-D additive mask built on the device from those positions
(key j is seen by the query at position p iff j <= p), so nothing in it reads a device value
on the host and the whole step can be captured. Prefills (the first feed) and feeds of more than
MAX_GRAPH_TOKENS run eagerly over the filled positions only; every later feed of n tokens keeping
`keep` logits replays the graph of (n, keep): 1 for draft and plain steps, 2 for a draft catching
up, k + 1 for a verify pass. Every shape a run plans (`shapes`) is captured before its first step
(`prepare`), all at once, inside the decoding slot that runs it (graph_capture.py's gate keeps every
other lane's step and every device synchronize in the process away meanwhile); a shape met later is
captured at its first feed. Each shape's replays are checked against the eager step, logits and the
K/V entries written, until one passes at a position other than its capture's (graph_capture.py); a
mismatch makes the model decode eagerly from then on (its cache rebuilt from the tokens fed, which
the bundle keeps). Rolling back is moving the length: entries past it are masked, then overwritten.

On CUDA the step is the lean step (lean_step.py: stacked weights, 11 ops a layer, 13 for a verify
pass, instead of about 38) for a Llama or Qwen2 model, with the same inputs, mask and cache;
elsewhere, or with SPECVIZ_GPU_STEP=transformers, the model's own forward.

Caches, with their graphs, are pooled per (model, capacity, vocabulary, step), lent to one run at a
time, and kept only while they can replay: the pool holds its models weakly, drops a model's
bundles when it is forgotten (a pair evicted) or collected, when its weights moved (their device
addresses, which a graph has baked in, changed: ZeroGPU), and beyond a few bundles in all. A cache's
keys and values are allocated when its bundle is made, on the thread's current (default) stream,
never inside a capture's warm-up on the capture stream (where freed blocks would stay stranded);
bundles lent and free together stay within a share of the device's memory (free ones are dropped
first, under the device gate; a run that still does not fit decodes eagerly).
Exactness: the same forward with the same keys and values; attention spans the whole
capacity with the masked entries at -inf weight, which rounds like the eager path in fp32
(tests/test_cuda_graphs.py checks greedy identity with generate()).
"""
from __future__ import annotations

import functools
import itertools
import threading
import weakref
from dataclasses import dataclass

import torch
from transformers import StaticCache
from transformers.cache_utils import Cache, StaticLayer

from .graph_capture import GATE, Capturer, GraphSet, capturer_for, failure
from .lean_step import kv_buffers, lean_step_weights, step as lean_step
from .lean_step import unsupported as lean_unsupported, wanted as lean_wanted
from .static_model import capacity_for
from .transfer import to_device
from .tree_pass import move_kv

MAX_GRAPH_TOKENS = 33       # feeds of more tokens (k is at most 32, plus one) run eagerly, as prefills do
ATTENTION = ("sdpa", "eager")   # implementations that take a 4-D additive mask as given
MAX_POOLED = 6              # free bundles kept in all (a 7B-shaped bf16 bundle at 16k positions is ~0.94 GB)
PER_SHAPE = 2               # ... and per (model, capacity, vocabulary, step): a race's two lanes of one model
MEMORY_SHARE = 0.5          # a new cache takes at most this share of the device memory free when it is made


class NoRoom(RuntimeError):
    """No device memory for another graph cache, even with every free one dropped: decode eagerly."""


def shape_tokens(key) -> int:
    """Tokens a step shape feeds: (tokens, keep), or ("tree", tokens, keep)."""
    return key[1] if key[0] == "tree" else key[0]


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


def eager_reason(model) -> str | None:
    """Why `model` decodes eagerly although it could take this path: a capture failed in this
    process, or one of its replays differed from the eager step (None: it replays)."""
    if failure() is not None:
        return f"graph capture failed: {failure()}"
    return POOL.distrusted(model)


def kv_heads_and_dim(config) -> tuple[int, int]:
    """A layer's key/value heads and head dimension, as the model's attention shapes its cache."""
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    return heads, getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def cache_bytes(model, capacity: int) -> int:
    """Device memory a static cache of `capacity` positions takes: keys and values of every layer."""
    heads, dim = kv_heads_and_dim(model.config)
    size = model.get_input_embeddings().weight.element_size()
    return 2 * model.config.num_hidden_layers * heads * capacity * dim * size


def weights_of(model) -> tuple:
    """Where the model's weights and buffers live on the device: a captured graph reads these
    addresses, so a bundle captured over other addresses must not replay."""
    return tuple(t.data_ptr() for t in itertools.chain(model.parameters(), model.buffers()))


class _Slot:
    """Where the current step writes: the positions tensor all layers read (shared), and how many
    cache entries attention spans (the capacity for a graph step; the filled ones for an eager feed)."""
    positions: torch.Tensor | None = None
    length: int = 0
    span: int = 0


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
        if self.slot.span < self.max_cache_len:
            return self.keys[:, :, : self.slot.span], self.values[:, :, : self.slot.span]
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.slot.length


@dataclass
class _Buffers:
    """One step shape's static inputs: token ids (n,), their positions (n,), offsets 0..n-1."""
    tokens: torch.Tensor
    positions: torch.Tensor
    offsets: torch.Tensor
    rope: torch.Tensor | None = None      # a tree step's rotary positions (n,)
    within: torch.Tensor | None = None    # a tree step's visibility among the fed nodes (n, n) bool


class _Bundle:
    """A static cache, the graphs captured over it (their addresses are the cache's and the
    weights') and the step they capture: a function of the bundle alone, since a later run replays
    what an earlier one captured. It holds its model weakly (the pool must not keep a model alive)
    and the tokens fed so far (`history`), from which a distrusted cache is rebuilt."""

    def __init__(self, model, vocab_size: int, capacity: int, capturer: Capturer, lean: bool = False):
        self._model = weakref.ref(model)
        self.vocab_size, self.capacity = vocab_size, capacity
        self.device = model.get_input_embeddings().weight.device
        self.dtype = model.get_input_embeddings().weight.dtype
        # The lean step (lean_step.py) and whether it runs its CUDA form (residuals in the matmuls, the
        # rotary as a batched matmul, query heads folded): its keys and values are one tensor a layer,
        # the layers' views into it.
        # Built before the weights' addresses are read: it re-points q/k/v and gate/up to stacked rows.
        self.lean = lean_step_weights(model) if lean else None
        self.fused = self.device.type == "cuda"
        self.weights = weights_of(model)
        self.epoch = self.generation = 0
        self.slot = _Slot()
        self.cache = Cache(layers=[_PositionedLayer(capacity, self.slot) for _ in range(model.config.num_hidden_layers)])
        self.kv: list[torch.Tensor] | None = None
        self._allocate(model.config)
        self.kv_index = torch.arange(capacity, device=self.device)          # (capacity,)
        self.history = torch.zeros(capacity, dtype=torch.long, device=self.device)
        self.graphs = GraphSet(capturer, self.device, self.dtype)

    def _allocate(self, config) -> None:
        """The keys and values of every layer, (1, kv heads, capacity, head dim), allocated now on the
        current stream (StaticLayer would allocate them at its first update: inside a capture's warm-up)."""
        heads, dim = kv_heads_and_dim(config)
        stub = torch.empty(1, heads, 0, dim, dtype=self.dtype, device=self.device)
        if self.lean is not None:
            self.kv = kv_buffers(self.lean, self.capacity, self.dtype, self.device)
        for i, layer in enumerate(self.cache.layers):
            layer.lazy_initialization(stub, stub)
            if self.kv is not None:       # (1, heads, capacity, dim) views of the layer's one tensor
                layer.keys, layer.values = self.kv[i][0:1], self.kv[i][1:2]

    @property
    def nbytes(self) -> int:
        """Device memory of the cache's keys and values."""
        return sum(t.numel() * t.element_size() for layer in self.cache.layers for t in (layer.keys, layer.values)
                   if t is not None)

    def give_up(self) -> bool:
        """This cache is never used again: its graphs invalidated, its keys and values and token history
        freed now rather than whenever the last reference goes. True when it had graphs."""
        captured = self.graphs.invalidate()
        for layer in self.cache.layers:
            layer.keys = layer.values = None
        self.kv = None
        self.history = None
        return captured

    def written(self, end: int) -> list[torch.Tensor]:
        """Every layer's keys and values over the first `end` positions (views): what a step may write."""
        return [t[:, :, :end] for layer in self.cache.layers for t in (layer.keys, layer.values)]

    @property
    def model(self):
        return self._model()

    def step(self, tokens: torch.Tensor, positions: torch.Tensor, keep: int, span: int | None = None,
             rope: torch.Tensor | None = None, within: torch.Tensor | None = None,
             seen: torch.Tensor | None = None) -> torch.Tensor:
        """The forward a graph captures: reads tokens (n,) and positions (n,) only through tensors.
        `span`: attend over the first `span` cache entries only (an eager feed: a mask of n x span,
        not n x capacity); a graph step spans the capacity, a shape fixed at capture. A token tree's
        pass (tree_pass.py) writes at `positions` but sits at the rotary positions `rope` (n,) and
        sees the entries before its first slot whole and the fed ones where `within` (n, n) says;
        or, fed eagerly, exactly where `seen` (n, span) says."""
        model = self.model
        if model is None:
            raise RuntimeError("the model of this cache was garbage-collected")
        self.slot.positions = positions
        self.slot.span = span = self.capacity if span is None else span
        if seen is None and within is None:
            seen = self.kv_index[None, :span] <= positions[:, None]         # (n, span): key j seen by query i
        elif seen is None:
            rel = self.kv_index[:span] - positions[:1]                        # (span,): slot - first fed slot
            fed = (rel >= 0) & (rel < positions.numel())
            seen = (rel < 0)[None, :] | (fed[None, :] & within.index_select(1, rel.clamp(0, positions.numel() - 1)))
        mask = torch.zeros(seen.shape, dtype=self.dtype, device=self.device)
        mask = mask.masked_fill(~seen, torch.finfo(self.dtype).min)               # (n, span)
        if self.lean is not None:
            logits = lean_step(self.lean, self.kv, tokens.view(-1), positions, positions if rope is None else rope,
                               mask, keep, span, fused=self.fused)
            return logits[:, : self.vocab_size].float()                        # (keep, V)
        # cache_position too, from the same tensor: left out, transformers derives it from the cache's
        # length on the host, a number a CUDA graph would freeze at its capture.
        out = model(input_ids=tokens.view(1, -1), position_ids=(positions if rope is None else rope).view(1, -1),
                    attention_mask=mask[None, None], cache_position=positions, past_key_values=self.cache, use_cache=True,
                    logits_to_keep=keep)
        return out.logits[0, :, : self.vocab_size].float()                 # (keep, V)


class BundlePool:
    """Free bundles per (model, (capacity, vocabulary, lean step)), most recently released last, at most
    MAX_POOLED in all and PER_SHAPE per key. A new cache is made only where it takes at most
    `room(device)` (on CUDA, MEMORY_SHARE of what the device has free; unbounded off CUDA), free ones
    dropped first to make room: so the caches lent and free stay bounded by the device's memory.
    Models are held weakly: `forget(model)` (a pair evicted) or the model's garbage collection drops its free
    bundles (their graphs invalidated) and keeps its lent ones from coming back; a model whose replay
    failed its check, or whose capture raised, is `distrusted`. A bundle's graphs are given up under
    the device gate (never while a capture runs) and outside the pool's lock. An RLock: a model
    collected while the lock is held runs its finalizer in the same thread."""

    def __init__(self, cap: int = MAX_POOLED, per_shape: int = PER_SHAPE):
        self.cap, self.per_shape = cap, per_shape
        self.room = _device_room                  # bytes a new cache may take on a device (None: no bound)
        self._free: list[tuple[tuple, _Bundle]] = []
        self._lent: dict[int, int] = {}           # id(bundle) -> bytes, for the bundles lent now
        self._generation = 0                      # bumped by clear(): bundles made before it never return
        self._dropping: list[_Bundle] = []        # taken off the free list, to be given up by drain()
        self._epochs: dict[int, int] = {}
        self._distrust: dict[int, str] = {}
        self._watched: set[int] = set()
        self._lock = threading.RLock()

    def acquire(self, model, shape: tuple, make, plan=(), nbytes: int = 0, device=None) -> _Bundle:
        """A free bundle of this model and shape whose weights are where the model's are now, the one
        that has the most of `plan`'s shapes captured (a lane gets back the bundle it captured into);
        else `make()`, once the caches lent and free leave room for its `nbytes` (free ones dropped,
        oldest first, and their memory given back before `make` runs): `NoRoom` when they cannot."""
        key, weights = (id(model), shape), weights_of(model)
        try:
            with self._lock:
                self._watch(model)
                self._drop([e for e in self._free if e[0] == key and e[1].weights != weights])   # old addresses
                mine = [e for e in self._free if e[0] == key]
                if mine:
                    entry = max(reversed(mine), key=lambda e: sum(s in e[1].graphs.replays for s in plan))
                    self._free.remove(entry)
                    self._lent[id(entry[1])] = entry[1].nbytes
                    return entry[1]
                epoch, generation = self._epochs.get(id(model), 0), self._generation
                room = self.room(device) if device is not None else None
                if room is not None:
                    while self._free and nbytes > room:
                        room += self._free[0][1].nbytes      # dropping it gives its cache's memory back
                        self._drop([self._free[0]])
                    if nbytes > room:
                        raise NoRoom(f"no device memory for another graph cache ({nbytes / 2**20:.0f} MiB; "
                                     f"{self.lent_bytes() / 2**20:.0f} MiB lent to other runs)")
        finally:
            self.drain()
        bundle = make()
        bundle.epoch, bundle.generation = epoch, generation
        with self._lock:
            self._lent[id(bundle)] = bundle.nbytes
        return bundle

    def release(self, model, shape: tuple, bundle: _Bundle) -> None:
        key = (id(model), shape)
        with self._lock:
            self._lent.pop(id(bundle), None)
            if (not bundle.graphs.valid or bundle.epoch != self._epochs.get(id(model), 0) or bundle.model is None
                    or bundle.generation != self._generation
                    or id(model) in self._distrust or bundle.graphs.closed is not None):
                self._dropping.append(bundle)
            else:
                self._free.append((key, bundle))
                same = [e for e in self._free if e[0] == key]
                self._drop(same[: max(0, len(same) - self.per_shape)])
                self._drop(self._free[: max(0, len(self._free) - self.cap)])
        self.drain()

    def bundles(self, model) -> list[_Bundle]:
        """This model's free bundles, oldest first."""
        with self._lock:
            return [b for (mid, _), b in self._free if mid == id(model)]

    def lent_bytes(self) -> int:
        with self._lock:
            return sum(self._lent.values())

    def forget(self, model) -> None:
        """Drop the model's free bundles; those lent now are dropped when they come back."""
        with self._lock:
            self._epochs[id(model)] = self._epochs.get(id(model), 0) + 1
            self._drop([e for e in self._free if e[0][0] == id(model)])
        self.drain()

    def clear(self) -> None:
        """Drop every free bundle and keep every lent one from coming back (a ZeroGPU call starts
        with nothing captured in an earlier call)."""
        with self._lock:
            self._generation += 1
            self._drop(list(self._free))
        self.drain()

    def distrust(self, model, why: str) -> None:
        with self._lock:
            self._watch(model)
            self._distrust.setdefault(id(model), why)
            self._drop([e for e in self._free if e[0][0] == id(model)])
        self.drain()

    def distrusted(self, model) -> str | None:
        return self._distrust.get(id(model))

    def clear_distrust(self, model) -> None:
        """Trust the model's graphs again (tests; a process never does it itself)."""
        with self._lock:
            self._distrust.pop(id(model), None)

    def _watch(self, model) -> None:
        if id(model) not in self._watched:
            self._watched.add(id(model))
            weakref.finalize(model, self._collected, id(model))

    def _collected(self, model_id: int) -> None:
        """The model's finalizer: its free bundles are queued to be given up by the next caller of the
        pool (never here: a finalizer may run in a thread that holds the pool's lock, or waits at the
        device gate, and giving up takes the gate)."""
        with self._lock:
            self._drop([e for e in self._free if e[0][0] == model_id])
            self._epochs.pop(model_id, None)
            self._distrust.pop(model_id, None)
            self._watched.discard(model_id)

    def _drop(self, entries) -> None:
        """Take entries off the free list and queue their bundles to be given up (the lock is held)."""
        for entry in list(entries):
            if entry in self._free:     # a finalizer run meanwhile (same thread, the lock is reentrant) may have
                self._free.remove(entry)
                self._dropping.append(entry[1])

    def drain(self) -> None:
        """Give up the queued bundles, outside the pool's lock and under the device gate: after a capture
        underway in another thread, or once this thread's own capture ends. Their graphs are invalidated
        and their keys and values freed at once, so the memory is back before a new cache is made."""
        with self._lock:
            bundles, self._dropping = self._dropping, []
        if not bundles:
            return

        def give_up():
            with GATE.shared():
                captured = [bundle for bundle in bundles if bundle.give_up()]
                # A dropped cache's graph pool (and its keys and values) stays reserved until the
                # allocator's cache is emptied: once for all, under the gate (it synchronizes the device).
                if any(bundle.device.type == "cuda" for bundle in captured):
                    torch.cuda.empty_cache()
        GATE.after_capture(give_up)


def _device_room(device) -> int | None:
    """Bytes a new cache may take on `device`: MEMORY_SHARE of what is free there (the device's free
    memory plus what PyTorch holds reserved but unused), so that caches lent and free never crowd
    out the runs' own work; None (no bound) off CUDA."""
    if device is None or device.type != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info(device)
    spare = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return int(MEMORY_SHARE * (free + spare))


POOL = BundlePool()


def forget_pair(pair) -> None:
    """Let a pair's graphs and static caches go (the pair left the app's cache)."""
    for model in (getattr(pair, "target", None), getattr(pair, "draft", None)):
        if model is not None:
            POOL.forget(model)


class GraphCachedModel:
    """ModelWithCache over a pooled static cache; decode steps replayed as captured graphs.
    `shapes`: the (tokens, kept logits) feeds this run will make, captured together at its first feed
    (a shape outside them is captured when first fed). `capturer` (default: CUDA graphs on CUDA, the
    eager stand-in elsewhere) applies to a new cache only: a pooled one keeps its own. `lean`: step
    through lean_step.py instead of transformers' forward (None: SPECVIZ_GPU_STEP decides, lean on
    CUDA by default; a model outside its family always takes transformers' forward)."""

    def __init__(self, model, vocab_size: int, positions: int, capturer: Capturer | None = None, shapes=(),
                 lean: bool | None = None):
        self.model, self.vocab_size = model, vocab_size
        self.device = model.get_input_embeddings().weight.device
        self.capacity = capacity_for(positions)
        self.shapes = tuple(s for s in dict.fromkeys(shapes) if shape_tokens(s) <= MAX_GRAPH_TOKENS)
        self.lean_step = (lean_wanted(self.device) if lean is None else lean) and lean_unsupported(model) is None
        if self.lean_step:
            lean_step_weights(model)        # re-points the model's weights before the pool reads their addresses
        self._key = (self.capacity, vocab_size, self.lean_step)
        self.bundle = POOL.acquire(model, self._key,
                                   lambda: _Bundle(model, vocab_size, self.capacity, capturer or capturer_for(self.device),
                                                   lean=self.lean_step),
                                   plan=self.shapes, nbytes=cache_bytes(model, self.capacity), device=self.device)
        self.graphs = self.bundle.graphs
        self._captures0, self._capture_s0 = self.graphs.captures, self.graphs.capture_s
        self._planned = False
        self._length = 0
        self.forwards = 0
        self.check_delta: float | None = None     # the largest |delta| this run's replay checks found

    @property
    def length(self) -> int:
        return self._length

    @property
    def decode_path(self) -> str:
        """The path this model's graph-eligible feeds take ("CUDA graphs", "eager replay", or "eager (why)"
        once it closed). Prefills, feeds of more than MAX_GRAPH_TOKENS and a draft's tree feeds past its
        first branch (`feed_masked` without the whole context) run eagerly under either name."""
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
    def prepare(self) -> None:
        """Capture every planned shape this cache lacks, once, before the first feed runs: a lane calls
        it before its first step, outside the step's shared hold on the device gate (inside it, capturing
        is not possible: the shapes would then run eagerly)."""
        if not self._planned:
            self._planned = True
            plan = {key: self._step_for(key) for key in self.shapes}
            # Captured at positions 0..n-1 with nothing cached (what `at=None` stands for): no graph
            # feed replays there (a first feed is an eager prefill), so every first replay is checked
            # at another state than its capture's, whatever an earlier run left in these buffers.
            for key in plan:
                buf = self.graphs.buffers[key]
                buf.positions.copy_(buf.offsets)
                if buf.within is not None:          # a tree step captured as the chain of its size
                    buf.rope.copy_(buf.offsets)
                    buf.within.copy_(torch.ones_like(buf.within).tril())
            self.bundle.slot.length = 0
            self.graphs.capture(plan)
            self._report()

    def _report(self) -> None:
        """A model whose capture raised, or whose replay failed its check, is distrusted in the pool."""
        if self.graphs.distrusted is not None:
            POOL.distrust(self.model, self.graphs.distrusted)

    def _begin(self, tokens: torch.Tensor) -> tuple[int, int, torch.Tensor]:
        """A feed's start: room checked, planned shapes captured, the write position set and the tokens
        kept in the history. Returns (n, start, tokens on the device)."""
        n, start = tokens.numel(), self._length
        if start + n > self.capacity:
            raise RuntimeError(f"static cache overflow: {start} + {n} > {self.capacity} positions")
        self.prepare()
        self.bundle.slot.length = start
        tokens = tokens.view(-1).to(self.device)
        self.bundle.history[start: start + n].copy_(tokens)
        return n, start, tokens

    @torch.inference_mode()
    def feed(self, tokens: torch.Tensor, keep: int) -> torch.Tensor:
        """Run tokens (n,) after the cached ones; the last `keep` positions' logits (keep, V) fp32."""
        n, start, tokens = self._begin(tokens)
        bundle = self.bundle
        if start == 0 or n > MAX_GRAPH_TOKENS or self.graphs.eager_reason is not None:
            logits = self._eager(start, start + n, keep)
        else:
            key = (n, keep)
            step = self._step_for(key)
            buf = self.graphs.buffers[key]
            buf.tokens.copy_(tokens)
            torch.add(buf.offsets, start, out=buf.positions)
            logits = self._replay(key, step, start, n, lambda: self._eager(0, start + n, keep))
        self._length = start + n
        self.forwards += 1
        return logits

    def _eager(self, start: int, end: int, keep: int) -> torch.Tensor:
        """The step run eagerly over the fed tokens start..end-1, attending to the first `end` entries."""
        positions = torch.arange(start, end, device=self.device)
        return self.bundle.step(self.bundle.history[start:end], positions, keep, span=end)

    @torch.inference_mode()
    def feed_masked(self, tokens: torch.Tensor, positions: torch.Tensor, visible: torch.Tensor,
                    keep: int, whole_context: bool = False) -> torch.Tensor:
        """A token tree's pass (tree_pass.py): tokens (n,) written at the next n slots, at the rotary
        `positions`, row i seeing the entries where visible[i] (n, cached + n). A target's verify pass
        sees the whole cache (`whole_context`) and the fed nodes by the tree mask: that replays the graph of
        ("tree", n, keep), its mask rebuilt on the device from a static (n, n) buffer, captured and
        checked as a chain's shapes are. Anything else (a draft's feed of one depth, which sees only
        its ancestors among the cached nodes; a prefill; more than MAX_GRAPH_TOKENS) runs eagerly."""
        n, start, tokens = self._begin(tokens)
        bundle = self.bundle
        rope = to_device(positions.view(-1), self.device)
        visible = to_device(visible, self.device)
        if start == 0 or n > MAX_GRAPH_TOKENS or self.graphs.eager_reason is not None or not whole_context:
            slots = torch.arange(start, start + n, device=self.device)
            logits = bundle.step(bundle.history[start: start + n], slots, keep, span=start + n, rope=rope,
                                 seen=visible.to(self.device))
        else:
            key = ("tree", n, keep)
            step = self._step_for(key)
            buf = self.graphs.buffers[key]
            buf.tokens.copy_(tokens)
            torch.add(buf.offsets, start, out=buf.positions)
            buf.rope.copy_(rope)
            buf.within.copy_(visible[:, start:])
            logits = self._replay(key, step, start, n, lambda: self._eager_tree(start, n, keep, rope, visible))
        self._length = start + n
        self.forwards += 1
        return logits

    def _eager_tree(self, start: int, n: int, keep: int, rope: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        """A distrusted replay's way back: the context rebuilt causally from the history, then the tree."""
        if start:
            self._eager(0, start, 1)
        slots = torch.arange(start, start + n, device=self.device)
        return self.bundle.step(self.bundle.history[start: start + n], slots, keep, span=start + n, rope=rope,
                                seen=visible.to(self.device))

    def _replay(self, key, step, start: int, n: int, rebuild) -> torch.Tensor:
        """Replay key's graph (captured and checked by the graph set), noting the check's delta."""
        checks = self.graphs.checks
        logits = self.graphs.run(key, step, rebuild=rebuild, at=start,
                                 state=lambda: self.bundle.written(start + n)).clone()
        if self.graphs.checks > checks:
            delta = self.graphs.last_delta
            self.check_delta = delta if self.check_delta is None else max(self.check_delta, delta)
        self._report()
        return logits

    def _step_for(self, key) -> functools.partial:
        # The step is the bundle's, not this object's: a later run with this cache replays it.
        buf = self.graphs.buffers_for(key, self._buffers)
        if key[0] == "tree":
            return functools.partial(self.bundle.step, buf.tokens, buf.positions, key[2], rope=buf.rope,
                                     within=buf.within)
        return functools.partial(self.bundle.step, buf.tokens, buf.positions, key[1])

    def _buffers(self, key) -> _Buffers:
        n = key[1] if key[0] == "tree" else key[0]
        offsets = torch.arange(n, device=self.device)
        buffers = _Buffers(torch.zeros(n, dtype=torch.long, device=self.device), offsets.clone(), offsets)
        if key[0] == "tree":            # captured as a chain (causal, positions = slots); refilled every feed
            buffers.rope = offsets.clone()
            buffers.within = torch.ones(n, n, dtype=torch.bool, device=self.device).tril()
        return buffers

    def move_slots(self, base: int, slots: list[int]) -> None:
        """Keep the entries (and their tokens in the history) at base + s at base, base + 1, ..."""
        pairs = [t for layer in self.bundle.cache.layers for t in (layer.keys, layer.values)]
        move_kv(pairs, base, slots)
        source = to_device(torch.tensor([base + s for s in slots]), self.device)
        self.bundle.history[base: base + len(slots)] = self.bundle.history.index_select(0, source)

    def crop(self, length: int) -> None:
        """Keep the first `length` tokens: later entries are masked by position, then overwritten."""
        self._length = min(self._length, length)

    def release(self) -> None:
        """Lend the cache, with its graphs, to the next run."""
        if self.bundle is not None:
            POOL.release(self.model, self._key, self.bundle)
            self.bundle = None
