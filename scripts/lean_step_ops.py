"""Ops a decoder layer launches in the graph path's step: transformers' forward against the lean step.

Counted by torch.profiler on the CPU, no timing: every top-level aten op of one step whose work is
more than a view (views, reshapes without a copy, no-op casts, shape queries launch no kernel), each
counted once however many ops it calls inside (aten::linear -> addmm is one cuBLAS kernel on CUDA,
aten::rms_norm one fused kernel, sdpa one attention kernel). A layer's count is the difference
between a model of L + 2 layers and one of L layers, halved: what a step does once (embedding, mask,
rotary table, head) cancels. On CUDA an op can launch more than one kernel (a split-K reduction, an
attention kernel's second pass), so the counts are a floor for kernels, exact for ops.

    python scripts/lean_step_ops.py                 # the table for benchmarks/gpu-lean-step.md
    python scripts/lean_step_ops.py --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM  # noqa: E402

from specviz.runtime.graph_capture import EagerCapturer  # noqa: E402
from specviz.runtime.graph_model import GraphCachedModel  # noqa: E402

NO_KERNEL = {"aten::view", "aten::reshape", "aten::_reshape_alias", "aten::as_strided", "aten::transpose",
             "aten::t", "aten::permute", "aten::slice", "aten::select", "aten::unsqueeze", "aten::squeeze",
             "aten::expand", "aten::detach", "aten::alias", "aten::split", "aten::narrow", "aten::unbind",
             "aten::to", "aten::result_type", "aten::empty", "aten::empty_strided", "aten::_unsafe_view",
             "aten::contiguous", "aten::lift_fresh", "aten::resolve_conj", "aten::resolve_neg", "aten::size",
             "aten::stride", "aten::expand_as", "aten::view_as", "aten::type_as", "aten::dim", "aten::chunk",
             "aten::split_with_sizes", "aten::__getitem__", "aten::empty_like", "aten::_nested_tensor_from_mask"}

SHAPES = {   # family, hidden, heads, kv heads, head dim, intermediate, vocab (a short vocabulary: the head is
    # once a step, not a layer). Qwen2.5-7B at head dim 16 instead of 128 (hidden 448, not 3584): the
    # same heads, groups and biases; an op count does not depend on the widths.
    "SmolLM2-135M (Llama)": ("llama", 576, 9, 3, 64, 1536, 2048),
    "Qwen2.5-0.5B (Qwen2)": ("qwen2", 896, 14, 2, 64, 4864, 2048),
    "Qwen2.5-7B-shaped (Qwen2)": ("qwen2", 448, 28, 4, 16, 2368, 2048),
}


def _model(kind: str, layers: int, dims, dtype) -> torch.nn.Module:
    _, hidden, heads, kv, head_dim, inter, vocab = dims
    common = dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
                  head_dim=head_dim, intermediate_size=inter, vocab_size=vocab, attn_implementation="sdpa",
                  max_position_embeddings=512)
    cfg = LlamaConfig(**common) if kind == "llama" else Qwen2Config(**common)
    return (LlamaForCausalLM if kind == "llama" else Qwen2ForCausalLM)(cfg).to(dtype).eval()


def _counted(prof) -> list[str]:
    """Top-level ops that do more than a view: their names, in order."""
    names = []
    for ev in prof.events():
        if ev.cpu_parent is not None or not ev.name.startswith("aten::"):
            continue
        subtree, stack = set(), [ev]
        while stack:
            e = stack.pop()
            subtree.add(e.name)
            stack.extend(e.cpu_children)
        if subtree - NO_KERNEL:
            names.append(ev.name)
    return names


def step_ops(model, lean: bool, tokens: int, fused: bool) -> list[str]:
    """Ops of one graph-path step feeding `tokens` tokens after a 16-token prefill."""
    lm = GraphCachedModel(model, model.config.vocab_size, positions=64, capturer=EagerCapturer(), lean=lean)
    lm.bundle.fused = fused
    try:
        with torch.inference_mode():
            lm.feed(torch.arange(16) + 3, keep=1)                 # the prefill (eager)
            step = lm._step_for((tokens, tokens))
            buf = lm.graphs.buffers[(tokens, tokens)]
            buf.tokens.copy_(torch.arange(tokens) + 5)
            torch.add(buf.offsets, 16, out=buf.positions)
            lm.bundle.slot.length = 16
            step()                                                  # warm
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                step()
        return _counted(prof)
    finally:
        lm.release()


def per_layer(kind, dims, dtype, lean: bool, tokens: int, fused: bool) -> tuple[float, dict[str, float]]:
    """Ops a layer: (count, {op: count}), from a 3-layer model's step less a 1-layer model's, halved."""
    small, large = (_model(kind, n, dims, dtype) for n in (1, 3))
    a, b = Counter(step_ops(small, lean, tokens, fused)), Counter(step_ops(large, lean, tokens, fused))
    ops = {name: (b[name] - a[name]) / 2 for name in b if b[name] != a[name]}
    return sum(ops.values()), ops


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", default=None)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name in args.shapes.split(","):
        dims = SHAPES[name]
        for dtype in (torch.float32, torch.bfloat16):
            for tokens, role in ((1, "draft / plain step"), (6, "verify, k = 5")):
                hf, hf_ops = per_layer(dims[0], dims, dtype, False, tokens, False)
                lean, _ = per_layer(dims[0], dims, dtype, True, tokens, False)
                fused, fused_ops = per_layer(dims[0], dims, dtype, True, tokens, True)
                rows.append({"shape": name, "dtype": str(dtype).removeprefix("torch."), "feed": role,
                             "transformers": hf, "lean": lean, "lean_fused": fused,
                             "transformers_ops": hf_ops, "lean_fused_ops": fused_ops})
                print(f"| {name} | {rows[-1]['dtype']} | {role} | {hf:g} | {lean:g} | {fused:g} |", flush=True)
    for row in rows[:2]:
        print(f"\n{row['shape']} {row['dtype']} {row['feed']}:\n  transformers {row['transformers_ops']}"
              f"\n  lean (fused) {row['lean_fused_ops']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
