"""A lean decode step for the Llama / Qwen2 / SmolLM2 family: few kernels a layer, capturable whole.

Why: at batch 1 on a GPU a decode step of transformers' Llama or Qwen2 layer runs about 36-40 ops,
each a kernel (RMSNorm as 6-8, rotary as 5 a tensor, q, k, v, gate and up as five matmuls, SiLU and
the product apart, K and V written apart). Inside a CUDA graph each still costs 2-3 us, so a small
draft's step is priced by its kernel count, not its bytes. This step runs the same math in 11 ops a
layer for one token and 13 for a verify pass in the form the graph path runs on CUDA (`fused`; 16 in
the form that rounds as transformers does) (scripts/lean_step_ops.py, benchmarks/gpu-lean-step.md):

    a = rms_norm(x)                              (torch's fused rms_norm: one kernel on CUDA)
    [q | k | v] = W_qkv a + b_qkv                (q, k, v rows stacked: one matmul, bias in it)
    [q | k | v] = [q | k | v] cos + roll([q | k | v]) sin±     (rotary on q and k; v heads get
                                                  cos = 1, sin = 0, so they pass unchanged; fused:
                                                  one batched matmul by each head's rotation matrix)
    cache[:, :, positions] = [k | v]             (a layer's keys and values in one tensor: one write)
    o = sdpa(q, cache_k, cache_v, mask)          (query heads folded per key/value head: no repeat_kv)
    h = x + W_o o                                (addmm: the residual add inside the matmul)
    [g | u] = W_gu rms_norm(h);  x' = h + W_down (silu(g) u)

The rotary form: transformers' rotate_half(x) = cat(-x2, x1); here roll(x) = cat(x2, x1) times a
sine whose first half is negated: the same product to the bit ((-a) b = a (-b) in IEEE). cos and sin
are computed once a step from the step's position tensor, as transformers' rotary embedding does
(same ops, same shapes), and the mask once a step; the layers share them, as they share the fused
form's rotation matrices (2 nonzeros a column: a read of heads x head dim² entries a layer, under 1.5%
of a Qwen2.5-7B verify pass's weight bytes). Fewer than 11 needs fusions eager torch has not (SiLU
times the product, the rotary inside the cache write, the norm in the next matmul): Triton or compile.

Weights: q/k/v and gate/up are stacked into one matrix each, and the model's own q_proj, k_proj,
v_proj, gate_proj and up_proj parameters are re-pointed to rows of the stacked matrices (views), so
the model holds one copy and transformers' forward keeps running on the same numbers. Everything
else (embedding, norms, o, down, head, tied or not) is the model's tensor itself.

Exactness (tests/test_lean_step.py, fp32 on the CPU, against transformers' forward given the same
mask and positions): a one-token feed's logits and K/V entries are transformers' to the bit; feeds of
several tokens (a prefill, a verify pass, a tree) agree within 1e-5 of the logits' scale, as MKL may
block a stacked matmul differently from its parts for some row counts; the `fused` form (residuals in
the matmuls, the rotary as a batched matmul, heads always folded: what the graph path runs on CUDA)
within 1e-5. Checked on the bundled pair, SmolLM2-135M and 7B-shaped Qwen2 models at small width.
In bf16 the fused RMSNorm rounds once where transformers rounds twice: within the graph check's
tolerance, unmeasured on a GPU so far. The step reads no device value on the host (shapes fixed by the
feed; positions and mask are tensors), so graph_model.py captures it as it captures transformers' forward.
"""
from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass

import torch
import torch.nn.functional as F

ENV = "SPECVIZ_GPU_STEP"      # auto (default: lean on CUDA, transformers elsewhere) | lean | transformers
FAMILY = ("llama", "qwen2")

_built: "weakref.WeakKeyDictionary[torch.nn.Module, LeanStepWeights]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def wanted(device: torch.device) -> bool:
    """Whether the graph path should step through this module on `device` (SPECVIZ_GPU_STEP): by
    default on CUDA only. On a CPU it is exact but not timed faster, so it stays off there unless asked."""
    choice = os.environ.get(ENV, "auto")
    if choice == "lean":
        return True
    if choice == "transformers":
        return False
    return device.type == "cuda"


def unsupported(model) -> str | None:
    """Why `model` cannot take the lean step (None: it can)."""
    cfg = getattr(model, "config", None)
    if cfg is None or getattr(cfg, "model_type", None) not in FAMILY:
        return "not a Llama or Qwen2 model"
    # The step computes what transformers' classes compute: a subclass, or a forward replaced on the
    # model (a test's or gpu_check's injected failure), computes something else and keeps its own.
    from transformers import LlamaForCausalLM, Qwen2ForCausalLM
    if type(model) not in (LlamaForCausalLM, Qwen2ForCausalLM) or "forward" in vars(model):
        return "its forward is not transformers' own"
    if getattr(cfg, "_attn_implementation", "sdpa") not in ("sdpa", "eager"):
        return f"attention implementation {cfg._attn_implementation}"
    if getattr(cfg, "hidden_act", None) != "silu" or getattr(cfg, "pretraining_tp", 1) != 1:
        return "not SiLU"
    if getattr(cfg, "use_sliding_window", False) or (getattr(cfg, "layer_types", None)
                                                     and set(cfg.layer_types) != {"full_attention"}):
        return "not full attention"
    decoder = getattr(model, "model", None)
    rope = getattr(decoder, "rotary_emb", None)
    if rope is None or rope.rope_type != "default" or rope.attention_scaling != 1.0:
        return "not default RoPE"
    if len(decoder.layers) != cfg.num_hidden_layers:
        return "fewer layers than its config says"
    head = getattr(model, "lm_head", None)
    if type(head) is not torch.nn.Linear or head.bias is not None:
        return "its head is not a plain linear layer"
    for layer in decoder.layers:
        parts = (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj, layer.self_attn.o_proj,
                 layer.mlp.gate_proj, layer.mlp.up_proj, layer.mlp.down_proj)
        if any(type(p) is not torch.nn.Linear for p in parts):
            return "its projections are not plain linear layers"
    return None


def _stack(linears) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One (sum of rows, in) matrix of the layers' weights (and one bias, when they have any); each
    layer's parameters become views of their rows, so the model keeps a single copy."""
    weight = torch.cat([lin.weight.detach() for lin in linears])
    biased = [lin.bias is not None for lin in linears]
    bias = None
    if any(biased):
        bias = torch.cat([lin.bias.detach() if lin.bias is not None else
                          lin.weight.new_zeros(lin.weight.shape[0]) for lin in linears])
    at = 0
    for lin in linears:
        rows = lin.weight.shape[0]
        lin.weight.data = weight[at: at + rows]
        if lin.bias is not None:
            lin.bias.data = bias[at: at + rows]
        at += rows
    return weight, bias


@dataclass
class _Layer:
    norm1: torch.Tensor
    qkv: torch.Tensor                 # (heads + 2 kv heads) * head dim rows: q's, then k's, then v's
    qkv_bias: torch.Tensor | None
    o: torch.Tensor
    o_bias: torch.Tensor | None
    norm2: torch.Tensor
    gate_up: torch.Tensor             # 2 * intermediate rows: gate's, then up's
    gate_up_bias: torch.Tensor | None
    down: torch.Tensor
    down_bias: torch.Tensor | None


class LeanStepWeights:
    """A model's weights as the lean step reads them (built once per model, under no_grad)."""

    def __init__(self, model):
        cfg = model.config
        dec = model.model
        self.heads, self.kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.scaling = dec.layers[0].self_attn.scaling
        self.eps = cfg.rms_norm_eps
        self.intermediate = cfg.intermediate_size
        self.embedding = dec.embed_tokens.weight
        self.layers = []
        with torch.no_grad():
            for layer in dec.layers:
                att, mlp = layer.self_attn, layer.mlp
                qkv, qkv_bias = _stack([att.q_proj, att.k_proj, att.v_proj])
                gate_up, gate_up_bias = _stack([mlp.gate_proj, mlp.up_proj])
                self.layers.append(_Layer(layer.input_layernorm.weight, qkv, qkv_bias, att.o_proj.weight,
                                          att.o_proj.bias, layer.post_attention_layernorm.weight, gate_up,
                                          gate_up_bias, mlp.down_proj.weight, mlp.down_proj.bias))
        self.norm = dec.norm.weight
        self.head = model.lm_head.weight
        self.inv_freq = dec.rotary_emb.inv_freq
        self.addresses = _addresses(model)


def _addresses(model) -> tuple:
    return tuple(p.data_ptr() for p in model.parameters())


def lean_step_weights(model) -> LeanStepWeights:
    """The lean layout of `model`, built at its first use (again if its weights moved: ZeroGPU)."""
    with _lock:
        built = _built.get(model)
        if built is None or built.addresses != _addresses(model):
            built = _built[model] = LeanStepWeights(model)
            built.addresses = _addresses(model)     # after re-pointing (the stacked matrices' rows)
        return built


def kv_buffers(w: LeanStepWeights, capacity: int, dtype, device) -> list[torch.Tensor]:
    """One (2, kv heads, capacity, head dim) tensor a layer: keys at [0], values at [1], so that a
    step writes both with one index_copy_."""
    return [torch.zeros(2, w.kv_heads, capacity, w.head_dim, dtype=dtype, device=device) for _ in w.layers]


def _rotary(w: LeanStepWeights, rope: torch.Tensor, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and signed sin for rows (n, heads + 2 kv heads, head dim): q and k heads rotated by their
    positions, v heads by nothing (cos 1, sin 0). cos and sin are transformers' rotary embedding's
    (angles position * inv_freq in fp32, both halves alike, then cast to the model's dtype)."""
    freqs = rope.float()[:, None] * w.inv_freq.float()[None, :]            # (n, head dim / 2)
    emb = torch.cat((freqs, freqs), dim=-1)                                 # (n, head dim)
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
    half = w.head_dim // 2
    signed = torch.cat((-sin[:, :half], sin[:, half:]), dim=-1)             # rotate_half's sign on the sine
    n, rotated, still = rope.numel(), w.heads + w.kv_heads, w.kv_heads
    cos_rows = torch.cat((cos[:, None].expand(n, rotated, w.head_dim),
                          torch.ones(n, still, w.head_dim, dtype=dtype, device=cos.device)), dim=1)
    sin_rows = torch.cat((signed[:, None].expand(n, rotated, w.head_dim),
                          torch.zeros(n, still, w.head_dim, dtype=dtype, device=cos.device)), dim=1)
    return cos_rows, sin_rows


def _rotation(cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The rotary as matrices, for the fused form: (n, heads + 2 kv heads, head dim, head dim), each row
    vector x of a head times its matrix R giving x cos + roll(x) sin± in one batched matmul. R = diag(cos)
    + S diag(sin±) with S[j, i] = 1 iff j = i + head dim / 2 (mod head dim): column i holds cos_i at row i
    and sin±_i at the row roll brings to i, every other entry an exact zero (a v head's R is the
    identity). Built once a step, read by every layer; in bf16 the matmul accumulates the two products
    in fp32 and rounds once."""
    hd = cos.shape[-1]
    shift = torch.eye(hd, dtype=cos.dtype, device=cos.device).roll(hd // 2, dims=0)     # S
    return torch.diag_embed(cos) + shift * sin.unsqueeze(-2)


def _plus_linear(x: torch.Tensor, a: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                 fused: bool) -> torch.Tensor:
    """x + a Wᵀ (+ b). `fused` (and no bias): one addmm, the residual as the matmul's accumulator; the
    sum is then rounded in the matmul's order, not after it (within ~1e-6 in fp32, not always to the
    bit: MKL accumulates into C for some shapes). Unfused: transformers' two ops, to the bit."""
    if fused and bias is None:
        return torch.addmm(x, a, weight.t())
    return x + F.linear(a, weight, bias)


def _attend(w: LeanStepWeights, qkv: torch.Tensor, cache: torch.Tensor, mask: torch.Tensor,
            folded: torch.Tensor | None, span: int) -> torch.Tensor:
    """Attention of the fed rows' query heads over the first `span` cache slots: (n, heads * head dim).
    With `folded` (the mask repeated per query head of a group), the heads h = g * rep + r that share
    key/value head g become g's query rows, r-major: one sdpa over the kv heads, no K/V repeated
    (transformers' pack_gqa for one token). Without it, sdpa's enable_gqa, which rounds as
    transformers' repeat_kv does for several tokens."""
    n, hd, rep = qkv.shape[0], w.head_dim, w.heads // w.kv_heads
    keys, values = cache[0:1, :, :span], cache[1:2, :, :span]
    if folded is not None:
        q = qkv[:, : w.heads].view(n, w.kv_heads, rep, hd).permute(1, 2, 0, 3).reshape(1, w.kv_heads, rep * n, hd)
        att = F.scaled_dot_product_attention(q, keys, values, attn_mask=folded, scale=w.scaling)
        return att.view(w.kv_heads, rep, n, hd).permute(2, 0, 1, 3).reshape(n, w.heads * hd)
    q = qkv[:, : w.heads].transpose(0, 1)[None]                                    # (1, H, n, hd)
    att = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask[None, None], scale=w.scaling,
                                         enable_gqa=rep > 1)
    return att[0].transpose(0, 1).reshape(n, w.heads * hd)


def step(w: LeanStepWeights, kv: list[torch.Tensor], tokens: torch.Tensor, positions: torch.Tensor,
         rope: torch.Tensor, mask: torch.Tensor, keep: int, span: int, fused: bool = False) -> torch.Tensor:
    """One feed: tokens (n,) written at cache slots `positions` (n,), rotated by positions `rope` (n,),
    attending to the first `span` slots through the additive `mask` (n, span); the last `keep` rows'
    logits (keep, vocabulary rows of the head) in the model's dtype. `fused` (the graph path sets it on
    CUDA): each residual add inside its matmul, the rotary as one batched matmul, query heads always
    folded per kv head (fewer kernels; on the CPU within ~1e-6 of transformers in fp32, not to the
    bit). Unfused, every op rounds as transformers' forward does."""
    n, hd, rep = tokens.numel(), w.head_dim, w.heads // w.kv_heads
    dtype = w.embedding.dtype
    cos, sin = _rotary(w, rope, dtype)
    turn = _rotation(cos, sin) if fused else None
    folded = None
    if fused or n == 1:            # the mask once a step, repeated for each query head of a group
        folded = mask.repeat(rep, 1)[None, None] if rep > 1 else mask[None, None]   # (1, 1, rep n, span)
    x = F.embedding(tokens, w.embedding)                                          # (n, d)
    for layer, cache in zip(w.layers, kv):
        a = F.rms_norm(x, (x.shape[-1],), layer.norm1, w.eps)
        qkv = F.linear(a, layer.qkv, layer.qkv_bias).view(n, -1, hd)              # (n, H + 2 KV, hd)
        if fused:                  # q cos + roll(q) sin± as one batched matmul: each head's row times its R
            qkv = torch.matmul(qkv.unsqueeze(-2), turn).view(n, -1, hd)
        else:                      # rounded as transformers' q cos + rotate_half(q) sin
            qkv = qkv * cos + qkv.roll(hd // 2, dims=-1) * sin
        cache.index_copy_(2, positions, qkv[:, w.heads:].view(n, 2, w.kv_heads, hd).permute(1, 2, 0, 3))
        h = _plus_linear(x, _attend(w, qkv, cache, mask, folded, span), layer.o, layer.o_bias, fused)
        gate_up = F.linear(F.rms_norm(h, (h.shape[-1],), layer.norm2, w.eps), layer.gate_up, layer.gate_up_bias)
        x = _plus_linear(h, F.silu(gate_up[:, : w.intermediate]) * gate_up[:, w.intermediate:], layer.down,
                         layer.down_bias, fused)
    last = x[-keep:]
    return F.linear(F.rms_norm(last, (last.shape[-1],), w.norm, w.eps), w.head)
