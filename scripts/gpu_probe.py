"""What limits specviz's CUDA-graph path on a GPU, in one command (~2-3 minutes on an H200):

    python3 scripts/gpu_probe.py --out $OUT/probe.json

The JSON is rewritten after every stage; a stage that raises is recorded and the next one runs;
stages past --budget seconds are skipped. Timing only: the pair has random weights and forced
acceptance (NOT lossless). Stages:

  env       versions and the device
  micro     ceilings and floors with no model: copy bandwidth, GEMV read bandwidth (M = 1 and 6),
            one tiny kernel inside a CUDA graph, the draft's and target's matrices as GEMVs in a graph,
            transformers' RMSNorm / rotary against F.rms_norm / a 3-op rotary, per call in a graph
  pair      the random Qwen2.5-0.5B/7B-shaped bf16 pair (specviz/bench/random_pair.py)
  lanes     the graph path's plain and speculative lanes (k = 5, 128 tokens, forced acceptance 0.8):
            tok/s, ratio, c and v as the bench computes them and over steady rounds only, the
            bookkeeping and the unaccounted (host) time per round, prefill seconds, bandwidth share
  syncs     host-device synchronizations per speculative round and per plain token, by source line
            (torch.cuda.set_sync_debug_mode, plus counted torch.cuda.synchronize / Event.synchronize)
  replays   the step graphs replayed back to back (GPU time of a draft step, a plain step, a verify
            pass), the production feed back to back, and a 5-step draft chain fed on the device
  kernels   torch.profiler: kernels per step (graph replay and the same step run eagerly), their time,
            and the GPU's idle share and largest gaps inside a short speculative run
  transformers_step  the lanes again stepping through transformers' forward instead of the lean step
            (runtime/lean_step.py, the graph path's default on CUDA): what the lean step gains
  draft_ahead  the lanes again with the next round's draft launched after the round's events are built
            (SPECVIZ_DRAFT_AHEAD=off; the lanes stage drafts ahead, the default on CUDA): what overlapping
            the event building with the next draft gains (engine/loop/ahead.py)
  ksweep    ratio and c at k = 3, 4, 6, 8 (one repeat each)

`--device cpu --pair tiny --tokens 16 --repeats 1` runs every stage on the CPU (numbers mean nothing).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import time
import traceback
import warnings
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import transformers  # noqa: E402

from specviz import SpecConfig, decode_baseline, speculate  # noqa: E402
from specviz.bench.decode_paths import copy_bandwidth, weight_bytes  # noqa: E402
from specviz.bench.random_pair import random_pair  # noqa: E402
from specviz.engine.loop import ahead  # noqa: E402
from specviz.runtime import graph_model, lean_step  # noqa: E402
from specviz.runtime.timing import synchronize  # noqa: E402

RESULT: dict = {"stages": {}}
S: dict = {}                       # what stages hand on: the pair, the prompt, the config, the ceilings


def write(path):
    if path:
        Path(path).write_text(json.dumps(RESULT, indent=1, default=str))


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


class Timer:
    """Device time between two points (CUDA events), or wall time off CUDA."""

    def __init__(self, dev):
        self.cuda = dev.type == "cuda"

    def __enter__(self):
        if self.cuda:
            self.a, self.b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self.a.record()
        else:
            self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            self.b.record()
            self.b.synchronize()
            self.ms = self.a.elapsed_time(self.b)
        else:
            self.ms = (time.perf_counter() - self.t0) * 1e3


def graph_us(fn, reps: int, dev) -> float:
    """Microseconds per call of fn, replayed as one CUDA graph of `reps` calls (median of 5 replays)."""
    if dev.type != "cuda":
        with Timer(dev) as t:
            for _ in range(reps):
                fn()
        return t.ms * 1e3 / reps
    side = torch.cuda.Stream(dev)
    side.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream(dev).wait_stream(side)
    torch.cuda.synchronize(dev)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    g.replay()
    torch.cuda.synchronize(dev)
    times = []
    for _ in range(5):
        with Timer(dev) as t:
            g.replay()
        times.append(t.ms * 1e3 / reps)
    del g
    return statistics.median(times)


# --- stages -----------------------------------------------------------------------------------------

def st_env(a):
    d = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda,
         "transformers": transformers.__version__, "argv": sys.argv[1:]}
    try:
        import triton
        d["triton"] = triton.__version__
    except Exception:              # noqa: BLE001
        d["triton"] = None
    if a.dev.type == "cuda":
        p = torch.cuda.get_device_properties(a.dev)
        d.update(gpu=p.name, sms=p.multi_processor_count, memory_gib=round(p.total_memory / 2**30, 1),
                 cudnn=torch.backends.cudnn.version())
        # CUPTI attached before any graph is captured or instantiated, so that a later trace can see the
        # kernels inside graph replays (the kernels stage also profiles the same steps eagerly, and says
        # whether the two counts agree).
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]):
            (torch.ones(8, device=a.dev) + 1).sum()
            torch.cuda.synchronize(a.dev)
    return d


@torch.inference_mode()
def st_micro(a):
    dev, big = a.dev, a.dev.type == "cuda"
    bf = torch.bfloat16 if big else torch.float32
    out = {"copy_TBps": copy_bandwidth(dev, megabytes=1024 if big else 64) / 1e12}
    S["copy_bw"] = out["copy_TBps"] * 1e12
    rows, cols = (16384, 32768) if big else (512, 1024)          # 1 GiB of bf16 on a GPU
    w = torch.randn(rows, cols, device=dev, dtype=bf)
    for m in (1, 6):
        x = torch.randn(m, cols, device=dev, dtype=bf)
        F.linear(x, w)
        synchronize(dev)
        with Timer(dev) as t:
            for _ in range(10):
                F.linear(x, w)
        out[f"gemv_m{m}_TBps"] = w.numel() * w.element_size() * 10 / (t.ms / 1e3) / 1e12
    del w
    S["gemv_bw"] = out["gemv_m1_TBps"] * 1e12
    h = torch.randn(1, 896, device=dev, dtype=bf)
    out["tiny_kernel_us_in_graph"] = graph_us(lambda: h.mul_(1.0), 1000, dev)
    shapes = {"draft k/v (128x896)": (128, 896), "draft q/o (896x896)": (896, 896),
              "draft gate (4864x896)": (4864, 896), "draft gate+up (9728x896)": (9728, 896),
              "target k/v (512x3584)": (512, 3584), "target q/o (3584x3584)": (3584, 3584),
              "target gate (18944x3584)": (18944, 3584), "draft head (151936x896)": (151936, 896)}
    gemv = {}
    for name, (n, k) in shapes.items():
        if not big:
            n, k = max(8, n // 64), max(8, k // 64)
        wm, x = torch.randn(n, k, device=dev, dtype=bf), torch.randn(1, k, device=dev, dtype=bf)
        us = graph_us(lambda: F.linear(x, wm), 50, dev)
        gemv[name] = {"us": round(us, 2), "TBps": round(wm.numel() * wm.element_size() / (us / 1e6) / 1e12, 3)}
    out["gemv_in_graph"] = gemv
    from transformers.models.qwen2 import modeling_qwen2 as mq
    norm = mq.Qwen2RMSNorm(896).to(dev, bf)
    out["rmsnorm_transformers_us"] = graph_us(lambda: norm(h), 200, dev)
    out["rmsnorm_F_rms_norm_us"] = graph_us(lambda: F.rms_norm(h, (896,), norm.weight, 1e-6), 200, dev)
    q, k = torch.randn(1, 14, 1, 64, device=dev, dtype=bf), torch.randn(1, 2, 1, 64, device=dev, dtype=bf)
    cos, sin = torch.randn(1, 1, 64, device=dev, dtype=bf), torch.randn(1, 1, 64, device=dev, dtype=bf)
    out["rope_transformers_us"] = graph_us(lambda: mq.apply_rotary_pos_emb(q, k, cos, sin), 200, dev)
    out["rope_3op_us"] = graph_us(lambda: _rope(q, k, cos, sin), 200, dev)
    return out


def st_pair(a):
    t0 = time.perf_counter()
    pair = random_pair(a.pair, str(a.dev))
    synchronize(pair.device)
    S["pair"] = pair
    S["ids"] = [(i * 7919) % pair.vocab_size for i in range(1, a.prompt + 1)]
    S["cfg"] = SpecConfig(k=a.k, max_new_tokens=a.tokens, forced_acceptance=0.8, cuda_graphs=True)
    S["wbytes"] = weight_bytes(pair.target)
    return {"load_s": time.perf_counter() - t0, "target": pair.target_name, "draft": pair.draft_name,
            "dtype": str(next(pair.target.parameters()).dtype), "vocab": pair.vocab_size,
            "target_weight_bytes": S["wbytes"], "draft_weight_bytes": weight_bytes(pair.draft)}


def run(spec: bool, cfg):
    pair = S["pair"]
    decode = speculate if spec else decode_baseline
    synchronize(pair.device)
    t0 = time.perf_counter()
    events = list(decode(pair, S["ids"], cfg))
    synchronize(pair.device)
    return time.perf_counter() - t0, events


def figures(plain, spec) -> dict:
    """One paired plain + speculative run -> the figures (ms unless said)."""
    (pw, pe), (sw, se) = plain, spec
    pd, sd = pe[-1], se[-1]
    toks = [e for e in pe if e.kind == "target_token"]
    rounds = [e for e in se if e.kind == "round_end"]
    steady = rounds[1:] or rounds                 # round 1 holds both prefills
    n_plain, n_spec = len(pd.token_ids), len(sd.token_ids)
    plain_step = pw / n_plain                     # what the bench divides by (prefill included)
    steady_plain = (toks[-1].t - toks[0].t) / max(1, len(toks) - 1)   # lane clock per token after the first
    r_draft = med([e.draft_s / e.drafted for e in steady if e.drafted])
    per = lambda f: sum(f(e) for e in steady) / len(steady)          # noqa: E731
    r_clock = (steady[-1].t - rounds[0].t) / max(1, len(steady)) if len(rounds) > 1 else None
    r_parts = per(lambda e: e.draft_s + e.verify_s + e.bookkeeping_s)
    tally = sd.stats.tally
    return {
        "plain_tok_s": n_plain / pw, "spec_tok_s": n_spec / sw, "ratio": (n_spec / sw) / (n_plain / pw),
        "c_bench": (tally.draft_s / tally.drafted) / plain_step if tally.drafted else None,
        "v_bench": (tally.verify_s / tally.rounds) / plain_step if tally.rounds else None,
        "c_steady": r_draft / steady_plain if r_draft and steady_plain else None,
        "v_steady": per(lambda e: e.verify_s) / steady_plain if steady_plain else None,
        "verify_target_ms": per(lambda e: e.target_s) * 1e3, "verify_accept_ms": per(lambda e: e.accept_s) * 1e3,
        "bookkeeping_ms_per_round": per(lambda e: e.bookkeeping_s) * 1e3,
        "round_ms_lane_clock": r_clock * 1e3 if r_clock else None,
        "round_ms_unaccounted": (r_clock - r_parts) * 1e3 if r_clock else None,
        "round_ms_wall": (sw - rounds[0].t) / max(1, len(steady)) * 1e3 if len(rounds) > 1 else None,
        "draft_step_ms": r_draft * 1e3 if r_draft else None,
        "plain_step_ms_bench": plain_step * 1e3, "plain_step_ms_steady": steady_plain * 1e3,
        "plain_target_ms": med([e.target_s for e in toks[1:]]) * 1e3 if len(toks) > 1 else None,
        "plain_sample_ms": med([e.sample_s for e in toks[1:]]) * 1e3 if len(toks) > 1 else None,
        "plain_first_token_ms": toks[0].target_s * 1e3 if toks else None,     # the eager prefill
        "spec_first_round_ms": rounds[0].t * 1e3 if rounds else None,         # both eager prefills, one round
        "plain_outside_clock_ms": (pw - pd.t) * 1e3, "spec_outside_clock_ms": (sw - sd.t) * 1e3,
        "tokens_per_round": per(lambda e: e.emitted), "rounds": len(rounds),
        "decode_path": sd.stats.decode_path, "draft_path": sd.stats.draft_path, "plain_path": pd.stats.decode_path,
        "capture_s": sd.stats.capture_s + pd.stats.capture_s,
        "bw_share_of_copy": S["wbytes"] * n_plain / pw / S["copy_bw"] if S.get("copy_bw") else None,
        "bw_share_of_gemv": S["wbytes"] * n_plain / pw / S["gemv_bw"] if S.get("gemv_bw") else None,
    }


def lanes(cfg, repeats: int) -> dict:
    t0 = time.perf_counter()
    first = [run(False, cfg), run(True, cfg)]
    first_use = time.perf_counter() - t0
    rows = [figures(run(False, cfg), run(True, cfg)) for _ in range(repeats)]
    keys = [k for k, v in rows[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    out = {k: med([r[k] for r in rows]) for k in keys}
    out.update({k: rows[-1][k] for k in ("decode_path", "draft_path", "plain_path")})
    out["first_use_s"] = first_use
    out["first_capture_s"] = first[0][1][-1].stats.capture_s + first[1][1][-1].stats.capture_s
    return out


def st_lanes(a):
    return {"gpu_step": "lean" if lean_step.wanted(a.dev) else "transformers", "draft_ahead": ahead.drafts_ahead(a.dev),
            **lanes(S["cfg"], a.repeats)}


def st_syncs(a):
    if a.dev.type != "cuda":
        return {"skipped": "no CUDA"}
    cfg = replace(S["cfg"], max_new_tokens=min(32, a.tokens))
    counted = collections.Counter()
    orig_sync, orig_event = torch.cuda.synchronize, torch.cuda.Event.synchronize

    def where(depth=2):                  # the caller, and its caller (timing.synchronize is called from many places)
        f, g = sys._getframe(depth), sys._getframe(depth + 1)
        return f"{Path(f.f_code.co_filename).name}:{f.f_lineno} <- {Path(g.f_code.co_filename).name}:{g.f_lineno}"

    def sync(*x, **k):
        counted["torch.cuda.synchronize @ " + where()] += 1
        return orig_sync(*x, **k)

    def event_sync(self):
        counted["Event.synchronize @ " + where()] += 1
        return orig_event(self)
    result = {}
    torch.cuda.synchronize, torch.cuda.Event.synchronize = sync, event_sync
    try:
        for lane in ("spec", "plain"):
            counted.clear()
            torch.cuda.set_sync_debug_mode("warn")
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    _, events = run(lane == "spec", cfg)
            finally:
                torch.cuda.set_sync_debug_mode(0)
            steps = sum(e.kind == ("round_end" if lane == "spec" else "target_token") for e in events)
            flagged = collections.Counter(f"{Path(w.filename).name}:{w.lineno}" for w in caught
                                          if "synchroniz" in str(w.message).lower())
            result[lane] = {"steps": steps, "sync_warnings_by_line": dict(flagged.most_common(20)),
                            "sync_warnings_per_step": sum(flagged.values()) / max(1, steps),
                            "explicit_syncs": dict(counted.most_common(20)),
                            "explicit_syncs_per_step": sum(counted.values()) / max(1, steps)}
    finally:
        torch.cuda.synchronize, torch.cuda.Event.synchronize = orig_sync, orig_event
    return result


def _models(a, target_shapes, draft_shapes):
    pair, dev = S["pair"], a.dev
    positions = len(S["ids"]) + a.tokens + a.k + 1    # positions_needed's count: the lanes' capacity and pooled graphs
    tgt = graph_model.GraphCachedModel(pair.target, pair.vocab_size, positions=positions, shapes=target_shapes)
    drf = graph_model.GraphCachedModel(pair.draft, pair.vocab_size, positions=positions, shapes=draft_shapes)
    prompt, one = torch.tensor(S["ids"], device=dev), torch.tensor([5], device=dev)
    for lm in (tgt, drf):
        lm.prepare()
        lm.feed(prompt, keep=1)                      # eager prefill
        lm.feed(one, keep=1)                         # first replay: checked against the eager step
        lm.feed(one, keep=1)
    return tgt, drf, one


def _replay_ms(replay, dev, reps=20):
    replay.run()
    synchronize(dev)
    with Timer(dev) as t:
        for _ in range(reps):
            replay.run()
    return t.ms / reps


@torch.inference_mode()
def st_replays(a):
    dev, k = a.dev, a.k
    tgt, drf, one = _models(a, ((1, 1), (k + 1, k + 1)), ((1, 1),))
    try:
        base = tgt.length
        verify = torch.arange(k + 1, device=dev) + 7
        for _ in range(2):
            tgt.feed(verify, keep=k + 1)             # the verify shape checked, then trusted
            tgt.crop(base)
        out = {"paths": [tgt.decode_path, drf.decode_path],
               "target_step_graph_ms": _replay_ms(tgt.graphs.replays[(1, 1)], dev),
               "verify_graph_ms": _replay_ms(tgt.graphs.replays[(k + 1, k + 1)], dev),
               "draft_step_graph_ms": _replay_ms(drf.graphs.replays[(1, 1)], dev)}
        for name, lm in (("target", tgt), ("draft", drf)):
            start = lm.length
            synchronize(dev)
            with Timer(dev) as t:
                for _ in range(20):
                    lm.feed(one, keep=1)             # the production feed, back to back, no sync between
            lm.crop(start)
            out[f"{name}_feed_ms"] = t.ms / 20
        g, buf = drf.graphs.replays[(1, 1)], drf.graphs.buffers[(1, 1)]
        start = drf.length
        buf.positions.fill_(start)
        synchronize(dev)
        with Timer(dev) as t:                        # a k-step chain fed on the device: no host between steps
            for _ in range(10):
                for _ in range(k):
                    logits = g.run()
                    buf.tokens.copy_(logits.argmax(-1))
                    buf.positions.add_(1)
                buf.positions.sub_(k)
        out["draft_chain_device_fed_ms_per_step"] = t.ms / (10 * k)
        if S.get("copy_bw"):
            out["target_graph_bw_share_of_copy"] = S["wbytes"] / (out["target_step_graph_ms"] / 1e3) / S["copy_bw"]
        return out
    finally:
        tgt.release()
        drf.release()


def _trace_kernels(prof, tag: str) -> list[dict]:
    path = Path(f"/tmp/gpu_probe_trace_{tag}.json")
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text()).get("traceEvents", [])
    path.unlink()
    return [e for e in events if e.get("cat") in ("kernel", "Kernel") and "dur" in e]


def _summary(kernels: list[dict], per: int) -> dict:
    by_name = collections.Counter()
    for e in kernels:
        by_name[e["name"][:70]] += e["dur"]
    total = sum(e["dur"] for e in kernels)
    return {"kernels_per_step": len(kernels) / per, "kernel_us_per_step": total / per,
            "mean_kernel_us": total / len(kernels) if kernels else None,
            "top_by_time_us_per_step": {n: round(d / per, 1) for n, d in by_name.most_common(12)}}


def _idle(kernels: list[dict]) -> dict:
    if not kernels:
        return {}
    spans = sorted((e["ts"], e["ts"] + e["dur"], e["name"][:40]) for e in kernels)
    merged, gaps = [list(spans[0])], []
    for s, e, name in spans[1:]:
        if s > merged[-1][1]:
            gaps.append((s - merged[-1][1], merged[-1][2], name))
            merged.append([s, e, name])
        elif e > merged[-1][1]:
            merged[-1][1], merged[-1][2] = e, name
    busy = sum(e - s for s, e, _ in merged)
    span = merged[-1][1] - merged[0][0]
    gaps.sort(reverse=True)
    return {"span_ms": span / 1e3, "busy_ms": busy / 1e3, "idle_share": 1 - busy / span if span else None,
            "gaps_over_50us": sum(1 for g in gaps if g[0] > 50), "idle_in_gaps_over_50us_ms": sum(g[0] for g in gaps if g[0] > 50) / 1e3,
            "largest_gaps_us_after_before": [(round(g[0]), g[1], g[2]) for g in gaps[:10]]}


@torch.inference_mode()
def st_kernels(a):
    from torch.profiler import ProfilerActivity, profile
    if a.dev.type != "cuda":
        return {"skipped": "no CUDA activity to trace"}
    dev, k = a.dev, a.k
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    tgt, drf, one = _models(a, ((1, 1), (k + 1, k + 1)), ((1, 1),))
    out = {}
    try:
        base = tgt.length
        verify = torch.arange(k + 1, device=dev) + 7
        for _ in range(2):
            tgt.feed(verify, keep=k + 1)
            tgt.crop(base)
        for name, lm, key in (("draft", drf, (1, 1)), ("target", tgt, (1, 1)), ("verify", tgt, (k + 1, k + 1))):
            replay, buf = lm.graphs.replays[key], lm.graphs.buffers[key]
            synchronize(dev)
            with profile(activities=acts) as prof:
                for _ in range(3):
                    replay.run()
                synchronize(dev)
            out[f"{name}_graph"] = _summary(_trace_kernels(prof, name), 3)
            with profile(activities=acts) as prof:  # the same step eagerly: the kernels the graph holds
                lm.bundle.step(buf.tokens, buf.positions, key[1])
                synchronize(dev)
            out[f"{name}_eager"] = _summary(_trace_kernels(prof, name + "_eager"), 1)
            out[f"{name}_graph_kernels_visible"] = (out[f"{name}_graph"]["kernels_per_step"]
                                                    >= 0.9 * out[f"{name}_eager"]["kernels_per_step"])
    finally:
        tgt.release()
        drf.release()
    cfg = replace(S["cfg"], max_new_tokens=min(16, a.tokens))
    run(True, cfg)                                   # pooled, captured: the profiled run replays
    with profile(activities=acts) as prof:
        _, events = run(True, cfg)
    kernels = _trace_kernels(prof, "run")
    out["spec_run"] = {"rounds": sum(e.kind == "round_end" for e in events), "kernels": len(kernels), **_idle(kernels)}
    return out


_SIGN: dict = {}


def _rope(q, k, cos, sin, unsqueeze_dim=1):
    """rotate_half(x) * sin == roll(x, d/2) * (sin * sign), sign = [-1]*(d/2) + [1]*(d/2): 3 kernels a tensor."""
    d = q.shape[-1]
    key = (d, q.dtype, q.device)
    if key not in _SIGN:                             # made at the first (eager) call, before any capture
        _SIGN[key] = torch.cat([-torch.ones(d // 2), torch.ones(d - d // 2)]).to(q.device, q.dtype)
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim) * _SIGN[key]
    return torch.addcmul(q * cos, q.roll(d // 2, -1), sin), torch.addcmul(k * cos, k.roll(d // 2, -1), sin)


def st_transformers_step(a):
    """The lanes again with the graph path stepping through transformers' forward (SPECVIZ_GPU_STEP=
    transformers): the baseline of the lean step (runtime/lean_step.py), which the lanes stage ran."""
    pair = S["pair"]
    before = os.environ.get(lean_step.ENV)
    os.environ[lean_step.ENV] = "transformers"
    for model in (pair.target, pair.draft):          # new caches and captures with the other step
        graph_model.POOL.forget(model)
    try:
        return {"gpu_step": "transformers", **lanes(S["cfg"], max(1, a.repeats - 1))}
    finally:
        if before is None:
            os.environ.pop(lean_step.ENV, None)
        else:
            os.environ[lean_step.ENV] = before
        for model in (pair.target, pair.draft):
            graph_model.POOL.forget(model)


def st_draft_ahead(a):
    """The lanes again drafting each round after the previous round's events are built
    (SPECVIZ_DRAFT_AHEAD=off): the baseline of drafting ahead, which the lanes stage ran on CUDA."""
    before = os.environ.get(ahead.ENV)
    os.environ[ahead.ENV] = "off"
    try:
        return {"draft_ahead": False, **lanes(S["cfg"], max(1, a.repeats - 1))}
    finally:
        if before is None:
            os.environ.pop(ahead.ENV, None)
        else:
            os.environ[ahead.ENV] = before


def st_ksweep(a):
    out = {}
    for k in (3, 4, 6, 8):
        cfg = replace(S["cfg"], k=k)
        run(False, cfg), run(True, cfg)              # captures the shapes k adds
        f = figures(run(False, cfg), run(True, cfg))
        out[f"k{k}"] = {x: f[x] for x in ("ratio", "c_bench", "v_bench", "c_steady", "v_steady", "tokens_per_round",
                                          "bookkeeping_ms_per_round", "round_ms_unaccounted")}
    return out


STAGES = {"env": st_env, "micro": st_micro, "pair": st_pair, "lanes": st_lanes, "syncs": st_syncs,
          "replays": st_replays, "kernels": st_kernels, "transformers_step": st_transformers_step,
          "draft_ahead": st_draft_ahead, "ksweep": st_ksweep}
NEEDS_PAIR = {"lanes", "syncs", "replays", "kernels", "transformers_step", "draft_ahead", "ksweep"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--pair", default="qwen2.5-0.5b:7b")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--prompt", type=int, default=64, help="prompt tokens")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--budget", type=float, default=200, help="seconds: a stage is not started after this")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    a.dev = torch.device(a.device)
    began = time.perf_counter()
    for name in a.stages.split(","):
        if name in NEEDS_PAIR and "pair" not in S:
            RESULT["stages"][name] = {"ok": False, "skipped": "no pair"}
            continue
        if time.perf_counter() - began > a.budget:
            RESULT["stages"][name] = {"ok": False, "skipped": f"over the {a.budget:.0f} s budget"}
            print(f"[{name}] skipped (budget)", flush=True)
            continue
        t0 = time.perf_counter()
        try:
            RESULT["stages"][name] = {"ok": True, **STAGES[name](a)}
        except Exception:          # noqa: BLE001 - recorded; the next stage runs
            RESULT["stages"][name] = {"ok": False, "error": traceback.format_exc(limit=8)}
        RESULT["stages"][name]["seconds"] = round(time.perf_counter() - t0, 2)
        write(a.out)
        st = RESULT["stages"][name]
        brief = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in st.items()
                 if not isinstance(v, (dict, list)) and k != "error"}
        print(f"[{name}] {json.dumps(brief, default=str)[:1500]}", flush=True)
        if not st["ok"]:
            print(st["error"], flush=True)
    print("\n" + json.dumps({n: {k: v for k, v in s.items() if k in (
        "ok", "copy_TBps", "gemv_m1_TBps", "tiny_kernel_us_in_graph", "ratio", "c_bench", "c_steady", "v_bench",
        "v_steady", "bookkeeping_ms_per_round", "round_ms_unaccounted", "plain_tok_s", "spec_tok_s",
        "bw_share_of_copy", "draft_step_ms", "plain_step_ms_steady", "draft_step_graph_ms", "target_step_graph_ms",
        "verify_graph_ms", "draft_chain_device_fed_ms_per_step", "draft_feed_ms", "target_feed_ms")}
        for n, s in RESULT["stages"].items()}, default=str, indent=0)[:6000], flush=True)
    return 0 if all(s.get("ok") for s in RESULT["stages"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
