"""A CPU draft step without transformers' per-call machinery, optionally on int8 weights.

Why: a draft step is small (SmolLM2's draft: 2 decoder layers and an 8,192-row head, ~12 M
weights), so on a CPU much of its time is not arithmetic: transformers' forward spends more than
half of a step building masks and rotary tables, on cache bookkeeping and on module dispatch
(`scripts/draft_step_profile.py` shows the split). And right after a target pass (~0.5 GB of
weights streamed) the draft's fp32 weights are out of cache, so the round's first step pays again.

So a draft that is a plain Llama decoder (no biases, default RoPE, SiLU, full attention) runs
here as a short loop over fused weights: q/k/v as one matrix, gate/up as one, a preallocated
KV buffer per layer and a rotary table computed once. The math is Llama's, term for term:

    h = x + W_o · attn(rope(W_q · rms(x)), rope(W_k · rms(x)), W_v · rms(x))
    x' = h + W_down · (silu(W_gate · rms(h)) * (W_up · rms(h)))
    logits = W_head · rms(x_last)          (a borrowed draft's head covers its token subset only;
                                            the other tokens get -inf, so q = 0 there)

Its logits agree with transformers' to ~2e-5 (summation order; tests/test_lean_draft.py).

Weights: each matrix either fp32 (MKL-packed where available, as runtime/packed_linear.py) or
int8 with one scale per output row, multiplied with the activations rounded to bf16
(`torch.ops.aten._weight_int8pack_mm`). A quarter of the bytes: what matters when the step
starts with the weights out of cache; on the SmolLM2 draft it costs about a thousandth of
held-out greedy agreement. Which of the two runs is
timed once per draft shape, thread count and process (a second load of the same draft reuses it, so
a seeded sampled race does not change with a re-timing on a noisy machine), on warm steps, the
first time it is needed: int8 only
where it is clearly faster (a CPU without fast bf16 keeps fp32), and only where every matrix's
input width is a multiple of 16 (what torch's CPU int8 kernel needs). `SPECVIZ_DRAFT_STEP` =
fp32, int8 (where it fits) or transformers overrides the choice (for comparisons).

None of this touches exactness: the output's law is fixed by the target and the acceptance
rule, whatever the draft proposes, as long as q is the distribution the draft sampled from
(drafters.py warps these logits and samples from that same q). The target never runs here.
"""
from __future__ import annotations

import os
import statistics
import threading
import time
import weakref

import torch
import torch.nn.functional as F

from .packed_linear import PackedLinear, mkl_packing_available
from .tree_pass import move_kv

ENV = "SPECVIZ_DRAFT_STEP"            # auto (default) | fp32 | int8 | transformers
INT8_GAIN = 0.9                       # int8 is chosen when its step takes < 90% of the fp32 step's time
PATH_PREFIX = "lean eager, "          # how a draft path names this step: "lean eager, int8 weights"


def path_of(fmt: str) -> str:
    """The draft path (Done.stats.draft_path, the bench's JSON) of the lean step with `fmt` weights."""
    return f"{PATH_PREFIX}{fmt} weights"


def format_of(path: str) -> str | None:
    """The weights' format a draft path names ("int8", "fp32"), or None when it is not the lean step."""
    return path.removeprefix(PATH_PREFIX).removesuffix(" weights") if path.startswith(PATH_PREFIX) else None


FIRST_CAPACITY = 256                  # cache positions; doubled when a feed would overflow them
_built: "weakref.WeakKeyDictionary[torch.nn.Module, LeanWeights | None]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()              # many visitors may start the first race on a model at once
_timed: dict[tuple, tuple[str, dict[str, float]]] = {}   # threads and a draft's shapes -> (format kept, step ms)


def unsupported(model) -> str | None:
    """Why `model` cannot run as a lean draft here, or None when it can."""
    cfg = getattr(model, "config", None)
    if getattr(model, "reads_target_features", False):
        return "it reads the target's hidden states"
    if cfg is None or getattr(cfg, "model_type", None) not in ("llama", "specviz_borrowed_draft"):
        return "not a Llama-family model"
    if getattr(model, "borrowed", True) is False:
        return "its target's embedding and head rows are not attached yet (borrow_from)"
    if any(p.device.type != "cpu" or p.dtype != torch.float32 for p in model.parameters()):
        return "not fp32 on the CPU"
    if len(model.model.layers) < cfg.num_hidden_layers:
        return "fewer layers than its config says"
    if getattr(cfg, "attention_bias", False) or getattr(cfg, "mlp_bias", False):
        return "its layers have biases"
    if getattr(cfg, "hidden_act", None) != "silu" or getattr(cfg, "pretraining_tp", 1) != 1:
        return "not SiLU"
    if getattr(cfg, "sliding_window", None) or getattr(cfg, "layer_types", None) and set(cfg.layer_types) != {"full_attention"}:
        return "not full attention"
    rope = getattr(model.model, "rotary_emb", None)
    if rope is None or rope.rope_type != "default" or rope.attention_scaling != 1.0:
        return "not default RoPE"
    return None


def _int8_fits(model) -> bool:
    """Whether the int8 kernel can run this draft: torch's CPU `_weight_int8pack_mm` needs every matrix's
    input width to be a multiple of 16 (others give wrong results, some crash the process)."""
    cfg = model.config
    widths = (cfg.hidden_size, cfg.num_attention_heads * cfg.head_dim, cfg.intermediate_size)
    return hasattr(torch.ops.aten, "_weight_int8pack_mm") and all(w % 16 == 0 for w in widths)


class Int8Rows:
    """y = x · Wᵀ with W stored as int8 and one scale per output row (W ≈ scale ⊙ q), x in bf16."""

    def __init__(self, weight: torch.Tensor):
        w = weight.detach().float()
        # The largest |w| of each row maps to 127; the scale is rounded to the kernel's bf16 first, so
        # the rows are quantized against the scale the kernel will multiply by.
        self.scale = (w.abs().amax(dim=1).clamp_min(1e-12) / 127).to(torch.bfloat16)
        self.q = torch.round(w / self.scale.float()[:, None]).clamp(-127, 127).to(torch.int8).contiguous()
        self.in_features, self.out_features = w.shape[1], w.shape[0]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten._weight_int8pack_mm(x.to(torch.bfloat16), self.q, self.scale).float()


class Fp32Rows:
    """y = x · Wᵀ in fp32: MKL-packed for several rows, column-major GEMV for one (packed_linear.py)."""

    def __init__(self, weight: torch.Tensor):
        w = weight.detach().float().contiguous()
        self.linear = PackedLinear(w) if mkl_packing_available() else None
        self.weight = w if self.linear is None else None      # PackedLinear holds its own copies

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) if self.linear is not None else F.linear(x, self.weight)


def _matrix(module) -> torch.Tensor:
    """The (out, in) weight of an nn.Linear or PackedLinear, row-major."""
    return module.weight.detach().contiguous()


class LeanWeights:
    """A draft's weights in the layout the lean step reads (built once per model and format)."""

    def __init__(self, model, fmt: str):
        cfg = model.config
        rows = Int8Rows if fmt == "int8" else Fp32Rows
        self.format = fmt
        self.path = path_of(fmt)                           # what Done.stats.draft_path and the bench say
        self.format_by = ""                                # how lean_weights() chose fmt (Done.stats.draft_format_by)
        self.heads, self.kv_heads, self.head_dim = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.eps = cfg.rms_norm_eps
        dec = model.model
        self.embedding = dec.embed_tokens.weight           # the model's own (a borrowed draft's: its target's)
        self.layers = []
        for layer in dec.layers[:cfg.num_hidden_layers]:       # as LlamaModel runs them
            att, mlp = layer.self_attn, layer.mlp
            self.layers.append({
                "norm1": layer.input_layernorm.weight.detach(),
                "qkv": rows(torch.cat([_matrix(att.q_proj), _matrix(att.k_proj), _matrix(att.v_proj)])),
                "o": rows(_matrix(att.o_proj)),
                "norm2": layer.post_attention_layernorm.weight.detach(),
                "gate_up": rows(torch.cat([_matrix(mlp.gate_proj), _matrix(mlp.up_proj)])),
                "down": rows(_matrix(mlp.down_proj)),
            })
        self.intermediate = cfg.intermediate_size
        self.norm = dec.norm.weight.detach()
        head = model.lm_head
        subset = getattr(head, "token_ids", None)            # a borrowed draft's SubsetHead
        self.head = rows(_matrix(head.proj if subset is not None else head))
        self.token_ids = None if subset is None else subset.detach()
        self.vocab_rows = head.out_features
        self.inv_freq = dec.rotary_emb.inv_freq.detach().float()


def step_seconds(lm, token: torch.Tensor, length: int) -> float:
    """Seconds one draft step takes: `lm` (a cache holding `length` tokens) fed `token` (1,), then
    cropped back to `length`, so the next call times the same step (scripts/draft_step_profile.py too)."""
    start = time.perf_counter()
    lm.feed(token, keep=1)
    took = time.perf_counter() - start
    lm.crop(length)
    return took


def _timed_steps(candidates: list[LeanWeights], repeats: int = 15) -> list[float]:
    """Median seconds of one warm draft step in each layout, the layouts' steps interleaved: a burst of
    other load on the machine then slows them alike instead of deciding the choice."""
    caches = []
    for weights in candidates:
        lm = LeanCachedModel(weights, model_vocab=weights.vocab_rows, positions=64)
        lm.feed(torch.arange(32) % weights.embedding.shape[0], keep=1)   # any in-vocabulary ids: the cost depends on the count
        caches.append(lm)
    times: list[list[float]] = [[] for _ in candidates]
    for i in range(repeats + 2):                                          # the first two of each: warm-up
        for lm, weights, kept in zip(caches, candidates, times):
            kept.append(step_seconds(lm, torch.tensor([(33 + i) % weights.embedding.shape[0]]), 32))
    return [statistics.median(kept[2:]) for kept in times]


def built_lean_weights(model) -> "LeanWeights | None":
    """The lean layout already built for `model` (None if none was, or it uses transformers' forward); builds nothing."""
    with _lock:
        return _built.get(model)


def _shapes(model) -> tuple:
    """What a step's timing depends on: every parameter's name, shape and dtype (not its values), and
    the threads torch runs it on."""
    return (torch.get_num_threads(), *((name, tuple(p.shape), p.dtype) for name, p in model.named_parameters()))


def lean_weights(model) -> "LeanWeights | None":
    """The lean layout of `model` in the format chosen on this machine (None: use transformers' forward)."""
    with _lock:
        if model in _built:
            return _built[model]
        choice = os.environ.get(ENV, "auto")
        weights = None
        if choice != "transformers" and unsupported(model) is None:
            int8_fits = choice != "fp32" and _int8_fits(model)      # any other value: as auto
            with torch.inference_mode():
                if choice == "int8" and int8_fits:
                    weights, chosen = LeanWeights(model, "int8"), f"set by {ENV}=int8"
                elif not int8_fits:
                    weights = LeanWeights(model, "fp32")
                    chosen = (f"set by {ENV}=fp32" if choice == "fp32" else
                              "fixed at fp32, as this torch's int8 kernel cannot run this draft")
                else:                     # auto: timed once per shape here, int8 kept if clearly faster
                    key = _shapes(model)
                    if key not in _timed:
                        fp32, int8 = LeanWeights(model, "fp32"), LeanWeights(model, "int8")
                        fp32_s, int8_s = _timed_steps([fp32, int8])
                        kept = "int8" if int8_s < INT8_GAIN * fp32_s else "fp32"
                        _timed[key] = kept, {"fp32": 1e3 * fp32_s, "int8": 1e3 * int8_s}
                        weights = int8 if kept == "int8" else fp32
                    else:
                        weights = LeanWeights(model, _timed[key][0])
                    weights.step_ms = dict(_timed[key][1])
                    chosen = "chosen by timing on this machine"
                weights.format_by = chosen
        _built[model] = weights
        return weights


class LeanCachedModel:
    """The ModelWithCache interface (cached_model.py) over LeanWeights, for one sequence."""

    def __init__(self, weights: LeanWeights, model_vocab: int, positions: int = 0):
        self.w = weights
        self.vocab_size = model_vocab
        self.device = torch.device("cpu")
        self.forwards = 0
        self.decode_path = weights.path
        self.format_by = weights.format_by
        self._length = 0
        self._capacity = 0
        self._grow(max(FIRST_CAPACITY, positions))

    @property
    def length(self) -> int:
        return self._length

    def _grow(self, needed: int) -> None:
        capacity = max(self._capacity, FIRST_CAPACITY)
        while capacity < needed:
            capacity *= 2
        if capacity == self._capacity:
            return
        w, n = self.w, self._length
        fresh = [(torch.empty(w.kv_heads, capacity, w.head_dim), torch.empty(w.kv_heads, capacity, w.head_dim))
                 for _ in w.layers]
        for (k, v), (old_k, old_v) in zip(fresh, getattr(self, "_kv", [])):
            k[:, :n] = old_k[:, :n]
            v[:, :n] = old_v[:, :n]
        self._kv = fresh
        # RoPE as Llama's default: angle(position, i) = position * inv_freq[i], both halves alike.
        angles = torch.arange(capacity, dtype=torch.float32)[:, None] * w.inv_freq[None, :]
        angles = torch.cat([angles, angles], dim=-1)
        self._cos, self._sin = angles.cos(), angles.sin()
        self._capacity = capacity

    def _rms(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.w.eps))

    @staticmethod
    def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)    # rotate_half
        return x * cos + rotated * sin

    @torch.no_grad()      # never part of a graph to train (the weights are built in inference mode)
    def feed(self, tokens: torch.Tensor, keep: int) -> torch.Tensor:
        """Run tokens (m,) after the cached ones; return the last `keep` positions' logits (keep, V) fp32."""
        m, start = tokens.numel(), self._length
        self._grow(start + m)
        # Causal within the new tokens, all of the cache before them (one token needs no mask).
        mask = torch.ones(m, start + m, dtype=torch.bool).tril(diagonal=start) if m > 1 else None
        return self._run(tokens, self._cos[start:start + m], self._sin[start:start + m], mask, keep)

    @torch.no_grad()
    def feed_masked(self, tokens: torch.Tensor, positions: torch.Tensor, visible: torch.Tensor,
                    keep: int, whole_context: bool = False) -> torch.Tensor:
        """A token tree's pass (runtime/tree_pass.py): tokens (m,) at rotary positions (m,), row i seeing
        the cache entries where visible[i] (m, cached + m); written at the next m slots as always."""
        self._grow(self._length + tokens.numel())     # a node's position is never past its slot
        return self._run(tokens, self._cos[positions], self._sin[positions], visible, keep)

    def _run(self, tokens: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None,
             keep: int) -> torch.Tensor:
        w = self.w
        m, start = tokens.numel(), self._length
        end = start + m
        x = F.embedding(tokens.view(-1).to(self.device), w.embedding)          # (m, d)
        nq, nkv, hd = w.heads * w.head_dim, w.kv_heads * w.head_dim, w.head_dim
        for layer, (k_buf, v_buf) in zip(w.layers, self._kv):
            qkv = layer["qkv"](self._rms(x, layer["norm1"]))
            q = qkv[:, :nq].view(m, w.heads, hd).transpose(0, 1)
            k = qkv[:, nq:nq + nkv].view(m, w.kv_heads, hd).transpose(0, 1)
            v = qkv[:, nq + nkv:].view(m, w.kv_heads, hd).transpose(0, 1)
            k_buf[:, start:end] = self._rope(k, cos, sin)
            v_buf[:, start:end] = v
            att = F.scaled_dot_product_attention(self._rope(q, cos, sin)[None], k_buf[None, :, :end],
                                                 v_buf[None, :, :end], attn_mask=mask, enable_gqa=True)
            x = x + layer["o"](att[0].transpose(0, 1).reshape(m, nq))
            gate_up = layer["gate_up"](self._rms(x, layer["norm2"]))
            x = x + layer["down"](F.silu(gate_up[:, :w.intermediate]) * gate_up[:, w.intermediate:])
        self._length = end
        self.forwards += 1
        logits = w.head(self._rms(x[-keep:], w.norm))
        if w.token_ids is not None:        # a subset head: -inf outside the subset (q = 0 there)
            logits = logits.new_full((keep, w.vocab_rows), float("-inf")).index_copy_(-1, w.token_ids, logits)
        return logits[:, : self.vocab_size]

    def move_slots(self, base: int, slots: list[int]) -> None:
        """Keep the entries at base + s (s in slots) at base, base + 1, ... (tree_pass.keep_path)."""
        move_kv([t for kv in self._kv for t in kv], base, slots)

    def crop(self, length: int) -> None:
        """Keep only the first `length` tokens in the cache (the buffers stay; they are overwritten)."""
        self._length = min(self._length, length)

    def release(self) -> None:
        """Nothing to give back: the buffers go with this object."""
