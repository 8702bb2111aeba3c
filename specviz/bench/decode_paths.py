"""The decode paths side by side: eager, CUDA graphs (graph_model.py), torch.compile (static_model.py).

For each path, on one pair and prompt: plain and speculative tokens/s (median over repeats, the
two lanes alternating), their ratio, the cost ratio c (measures.per_plain_step: seconds per draft
step in plain steps), the first use (seconds of the first plain plus first speculative run, which
capture or compile; and the capture seconds the runs' Done.stats report), and the fraction of
memory bandwidth plain decoding reaches: bytes of target weights read per token x tokens/s /
a device-to-device copy's bandwidth measured here (read + write bytes / seconds). A decode
step at batch 1 reads every weight once, so 100% is the memory-bound ceiling (gpt-fast's
"MBU"). The input embedding counts only when tied to the output head (else one row is read).
"""
from __future__ import annotations

import time
from dataclasses import replace

import torch

from ..engine import SpecConfig
from ..engine.metrics import measures
from ..runtime.pair import ModelPair
from ..runtime.timing import synchronize
from .runner import median, paired_cost_ratio, specviz_run

PATHS = {   # name: the config settings that select it
    "eager": dict(cuda_graphs=False, fast=False),
    "CUDA graphs": dict(cuda_graphs=True, fast=False),
    "torch.compile": dict(cuda_graphs=False, fast=True),
}


def weight_bytes(model) -> int:
    """Bytes a batch-1 decode step reads: every parameter once (a tied embedding/head once)."""
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    emb, head = model.get_input_embeddings().weight, getattr(model.get_output_embeddings(), "weight", None)
    if head is None or head.data_ptr() != emb.data_ptr():
        total -= emb.numel() * emb.element_size()
    return total


def copy_bandwidth(device: torch.device, megabytes: int = 1024, repeats: int = 10) -> float:
    """Bytes/s of a device-to-device copy (each byte read once and written once)."""
    n = megabytes * 2**20 // 4
    src = torch.empty(n, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    dst.copy_(src)
    synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        dst.copy_(src)
    synchronize(device)
    return 2 * src.numel() * 4 * repeats / (time.perf_counter() - start)


def measure_path(pair: ModelPair, ids: list[int], cfg: SpecConfig, repeats: int) -> dict:
    first_plain, first_spec = specviz_run(pair, ids, cfg, False), specviz_run(pair, ids, cfg, True)
    plain, spec = [], []
    for _ in range(repeats):
        plain.append(specviz_run(pair, ids, cfg, False))
        spec.append(specviz_run(pair, ids, cfg, True))
    plain_rate = median([t.rate for t in plain])
    spec_rate = median([t.rate for t in spec])
    c = paired_cost_ratio(spec, plain)
    return {"plain_tok_s": plain_rate, "spec_tok_s": spec_rate,
            "ratio": spec_rate / plain_rate if plain_rate and spec_rate else None, "c": c,
            "first_use_s": first_plain.seconds + first_spec.seconds,
            "capture_s": first_plain.stats.capture_s + first_spec.stats.capture_s,
            "decode_path": spec[-1].stats.decode_path,
            "acceptance_rate": measures.acceptance_rate(measures.pool(s.stats.tally for s in spec))}   # pooled


def compare_paths(pair: ModelPair, ids: list[int], cfg: SpecConfig, paths: list[str], repeats: int,
                  bandwidth: float | None = None, log=print) -> list[dict]:
    bandwidth = bandwidth or copy_bandwidth(pair.device)
    weights = weight_bytes(pair.target)
    rows = []
    for name in paths:
        log(f"timing the {name} path ...")
        row = {"path": name, **measure_path(pair, ids, replace(cfg, **PATHS[name]), repeats)}
        row["bandwidth_fraction"] = weights * row["plain_tok_s"] / bandwidth if row["plain_tok_s"] else None
        rows.append(row)
    return rows


def path_table(rows: list[dict]) -> str:
    def f(x, fmt):
        return "—" if x is None else fmt.format(x)
    head = (f"{'path':<15}{'plain tok/s':>12}{'spec tok/s':>12}{'ratio':>8}{'c':>8}{'a':>6}"
            f"{'first use s':>13}{'capture s':>11}{'plain % bw':>11}  decode_path")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['path']:<15}{f(r['plain_tok_s'], '{:.1f}'):>12}{f(r['spec_tok_s'], '{:.1f}'):>12}"
                     f"{f(r['ratio'], '{:.2f}x'):>8}{f(r['c'], '{:.3f}'):>8}{f(r['acceptance_rate'], '{:.2f}'):>6}"
                     f"{f(r['first_use_s'], '{:.1f}'):>13}{f(r['capture_s'], '{:.2f}'):>11}"
                     f"{f(r['bandwidth_fraction'], '{:.0%}'):>11}  {r['decode_path']}")
    return "\n".join(lines)
