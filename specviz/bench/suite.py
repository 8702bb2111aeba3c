"""The benchmark suite: every prompt x every k, all methods, then medians and theory.

Per k it reports, as medians over prompts: tokens/s of each method, the ratios that the
claims rest on (speculative/plain, specviz/transformers), the acceptance rate a (pooled:
accepted / verified drafts), mean tokens per round against (1 - a^(k+1)) / (1 - a), the
measured cost ratio c (seconds per draft step / seconds per plain token) and the speedup
the theory predicts from a, c and the measured verify ratio v (and, labelled GPU-ideal, with
v = 1). A k sweep shows where the best k is and where theory puts it.
Every ratio (and c) is first taken between runs of the same rotation, then the median over
rotations, then over prompts: drift of the machine between rotations cancels out.
The verdict (faster, about even, slower) is the page's (engine/analysis/verdict.py) with an interval
from the runs themselves (race_spread.spread): per prompt, the range of its rotations' ratios, or with
one rotation the spread of that run's own rounds and plain steps; over the prompts, the interval
spanning every prompt's. So "faster" means faster on every prompt beyond its own noise, and "about
even" appears only where that interval holds 1.0.
"""
from __future__ import annotations

import os
import platform
from dataclasses import asdict, replace

import torch

from ..engine import SpecConfig
from ..engine.analysis import ledger, race_spread
from ..engine.analysis.verdict import verdict
from ..engine.analysis.cost_model import CostModel
from ..engine.metrics import measures, theory
from ..runtime.lean_draft import built_lean_weights
from ..engine.loop.drafters import uses_draft_model
from ..runtime.pair import ModelPair
from .prompts import prompt_ids
from .runner import (FAST_METHODS, first_use_seconds, measure_prompt, median, median_timing, paired_cost_ratio,
                     paired_ratio, paired_verify_ratio, phase_breakdown)

# Ratios the claims rest on: (name in the JSON, numerator method, denominator method).
RATIOS = [("speedup", "specviz speculative", "specviz plain"),
          ("hf_assisted_speedup", "hf assisted", "hf generate"),
          ("specviz_vs_hf_assisted", "specviz speculative", "hf assisted"),
          ("specviz_plain_vs_hf_generate", "specviz plain", "hf generate"),
          ("fast_speedup", "specviz speculative (fast)", "specviz plain (fast)"),
          ("fast_vs_default_plain", "specviz plain (fast)", "specviz plain"),
          ("fast_vs_default_speculative", "specviz speculative (fast)", "specviz speculative")]

ALL_METHODS = ["specviz plain", "specviz speculative", "hf generate", "hf assisted"]
RUNS = "the prompts' runs"      # where the summary's interval comes from, as its why says
SWEEP_METHODS = ["specviz plain", "specviz speculative"]


def machine() -> dict:
    info = {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "torch": torch.__version__, "torch_threads": torch.get_num_threads()}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def run_suite(pair: ModelPair, prompts: list[dict], cfg: SpecConfig, ks: list[int], repeats: int,
              log=print, fast: bool = False, hf_assistant=None) -> dict:
    """fast: also time the fast path (static cache + compiled steps) of both specviz lanes.
    hf_assistant: the draft model transformers' assisted generation gets (default: the pair's; a
    draft that reads target features cannot run there, so it needs a plain one, or the method is left out)."""
    forced = cfg.forced_acceptance is not None
    methods = SWEEP_METHODS if (len(ks) > 1 or forced) else ALL_METHODS
    pair_for = {}
    if "hf assisted" in methods and uses_draft_model(cfg.drafter):
        if hf_assistant is not None:
            pair_for["hf assisted"] = replace(pair, draft=hf_assistant)
        elif pair.draft_reads_features:
            log("hf assisted left out: the draft reads the target's hidden states, which generate() cannot give it "
                "(--hf-assistant FOLDER times it with a plain draft)")
            methods = [m for m in methods if m != "hf assisted"]
    methods = methods + FAST_METHODS if fast else methods
    encoded = [(p["kind"], prompt_ids(pair, p)) for p in prompts]
    rows, first_use = [], {}
    for k in ks:
        kcfg = replace(cfg, k=k)
        if fast:
            first_use[str(k)] = first_use_seconds(pair, encoded[0][1], kcfg)   # str: a JSON key
            log(f"k={k} fast path first use (compiling): " +
                ", ".join(f"{n} {s:.1f} s" for n, s in first_use[str(k)].items()))
        per_prompt = []
        for i, (kind, ids) in enumerate(encoded):
            runs = measure_prompt(pair, ids, kcfg, methods, repeats, pair_for)
            row = _prompt_row(kind, len(ids), runs, k, cfg.forced_acceptance)
            per_prompt.append(row)
            rates = "  ".join(f"{n}: {m['tokens_per_s']:6.1f}" for n, m in row["methods"].items())
            log(f"k={k} prompt {i + 1}/{len(encoded)} ({kind}): {rates} tok/s")
        rows.append({"k": k, "per_prompt": per_prompt, "summary": _summarize(per_prompt, k, cfg.forced_acceptance)})
    best = max(rows, key=lambda r: r["summary"]["speedup"] or 0)
    models = {"target": pair.target_name, "draft": pair.draft_name}
    if "hf assisted" in pair_for:
        models["hf_assistant"] = getattr(hf_assistant, "name_or_path", "given")
    result = {"machine": machine(), "models": models,
              "device": str(pair.device), "settings": cfg.to_dict(), "repeats": repeats, "methods": methods,
              "not_lossless": forced, "rows": rows, "best_k": best["k"]}
    if fast:
        result["fast_first_use_s"] = first_use
    if len(rows) > 1:
        s = best["summary"]
        if s["acceptance_rate"] is not None and s["cost_ratio"] is not None and s["verify_ratio"] is not None:
            result["theory_best_k"] = theory.best_k(s["acceptance_rate"], s["cost_ratio"], s["verify_ratio"], max(ks))
    result["breakdown"] = phase_breakdown(pair, encoded[0][1], replace(cfg, k=best["k"]))
    result["draft_step"] = draft_step(pair, [p for row in rows for p in row["per_prompt"]])
    kernels = {role: m.linear_kernels for role, m in (("target", pair.target), ("draft", pair.draft))
               if m is not None and hasattr(m, "linear_kernels")}
    if kernels:
        # Which CPU kernels the linears ran (runtime/packed_linear.py), timed at load on this machine.
        result["linear_kernels"] = {role: asdict(k) for role, k in kernels.items()}
    return result


def draft_step(pair, prompt_rows: list[dict]) -> dict | None:
    """How specviz's draft stepped, as its speculative lanes recorded it (Done.stats.draft_path), and
    when the lean step (runtime/lean_draft.py) timed both formats here, each one's warm step in ms.
    None when no lane stepped a draft model. transformers' assisted generation steps the draft through
    its own forward on the draft's own (fp32) weights."""
    paths = sorted({row.get("draft_path") or "" for row in prompt_rows} - {""})
    if not paths:
        return None                     # prompt lookup, or no draft model
    step = {"path": ", ".join("transformers' forward" if p == "eager" else p for p in paths)}
    weights = built_lean_weights(pair.draft) if pair.draft is not None else None
    if weights is not None and weights.path in paths:
        step["timed_step_ms"] = getattr(weights, "step_ms", None)
    return step


def _prompt_row(kind: str, prompt_tokens: int, runs: dict, k: int, forced: float | None) -> dict:
    timings = {name: median_timing(ts) for name, ts in runs.items()}
    s = timings["specviz speculative"].stats.tally
    c = paired_cost_ratio(runs["specviz speculative"], runs["specviz plain"])
    v = paired_verify_ratio(runs["specviz speculative"], runs["specviz plain"])
    row = {"kind": kind, "prompt_tokens": prompt_tokens,
           "methods": {n: {"tokens": t.tokens, "seconds": t.seconds, "tokens_per_s": t.rate} for n, t in timings.items()},
           "accepted": s.accepted, "verified": s.accepted + s.rejected, "rounds": s.rounds,
           "tokens": s.tokens, "full_rounds": s.full_rounds,
           "full_round_tokens": s.full_round_tokens, "cost_ratio": c, "verify_ratio": v,
           "draft_path": timings["specviz speculative"].stats.draft_path}
    # The median runs' tallies (counts and phase seconds), pooled over prompts for the ledger.
    row["tallies"] = {lane: asdict(timings[name].stats.tally)
                      for lane, name in (("spec", "specviz speculative"), ("plain", "specviz plain"))}
    if "specviz speculative (fast)" in runs:
        row["cost_ratio_fast"] = paired_cost_ratio(runs["specviz speculative (fast)"], runs["specviz plain (fast)"])
        row["verify_ratio_fast"] = paired_verify_ratio(runs["specviz speculative (fast)"], runs["specviz plain (fast)"])
    row["ratios"] = {name: paired_ratio(runs[a], runs[b]) for name, a, b in RATIOS if a in runs and b in runs}
    row["speedup_interval"] = speedup_interval(runs["specviz speculative"], runs["specviz plain"],
                                               row["ratios"]["speedup"])
    row["verdict"] = verdict(row["ratios"]["speedup"], row["speedup_interval"])[0]
    return row


def speedup_interval(spec_runs: list, plain_runs: list, speedup: float | None) -> tuple[float, float] | None:
    """One prompt's interval for its verdict (race_spread.spread): the range of its rotations' paired
    ratios where two or more measured one, else its one rotation's own rounds' and plain steps' spread."""
    each = [s.rate / p.rate for s, p in zip(spec_runs, plain_runs) if s.rate and p.rate]
    first = (spec_runs[0].units, plain_runs[0].units) if spec_runs and plain_runs else (None, None)
    return race_spread.spread(speedup, each, first if None not in first else None)


def prompts_interval(rows: list[dict]) -> tuple[float, float] | None:
    """The interval over prompts: spanning every prompt's own (a prompt without one counts as its speedup)."""
    return race_spread.spanning(
        r.get("speedup_interval") or ((s, s) if (s := r["ratios"].get("speedup")) is not None else None) for r in rows)


def _summarize(rows: list[dict], k: int, forced: float | None) -> dict:
    def rate(row, name):
        return row["methods"].get(name, {}).get("tokens_per_s")

    def ratio(name):    # median over prompts of each prompt's paired (same-rotation) ratio
        return median([r["ratios"].get(name) for r in rows])

    pooled = measures.pool(measures.LaneTally(accepted=r["accepted"], rejected=r["verified"] - r["accepted"],
                                              full_rounds=r["full_rounds"], full_round_tokens=r["full_round_tokens"])
                           for r in rows)
    a = forced if forced is not None else measures.acceptance_rate(pooled)
    tokens_per_round = measures.tokens_per_round(pooled)
    c = median([r["cost_ratio"] for r in rows])
    v = median([r["verify_ratio"] for r in rows])
    speedup, interval = ratio("speedup"), prompts_interval(rows)
    out = {"tokens_per_s": {name: median([rate(r, name) for r in rows]) for name in rows[0]["methods"]},
           "speedup": speedup, "speedup_interval": interval, "verdict": verdict(speedup, interval, "", RUNS)[0],
           "acceptance_rate": a, "tokens_per_round": tokens_per_round, "cost_ratio": c,
           "verify_ratio": v}
    if "hf generate" in rows[0]["methods"]:
        for name in ("hf_assisted_speedup", "specviz_vs_hf_assisted", "specviz_plain_vs_hf_generate"):
            if any(name in r["ratios"] for r in rows):
                out[name] = ratio(name)
    if "specviz plain (fast)" in rows[0]["methods"]:
        for name in ("fast_speedup", "fast_vs_default_plain", "fast_vs_default_speculative"):
            out[name] = ratio(name)
        out["cost_ratio_fast"] = c_fast = median([r["cost_ratio_fast"] for r in rows])
        out["verify_ratio_fast"] = v_fast = median([r["verify_ratio_fast"] for r in rows])
        if a is not None and c_fast is not None and v_fast is not None and out["fast_speedup"]:
            out["theory_speedup_fast"] = theory.expected_speedup(a, k, c_fast, v_fast)
            out["fast_speedup_over_theory"] = out["fast_speedup"] / out["theory_speedup_fast"]
    if forced is None:
        # Why faster or slower, from the prompts' median runs pooled: phases, break-even a, the cause, with the
        # pooled runs' own c and v; the cost model of those runs rides along as "typical" (its median, range
        # and count per figure, engine/analysis/cost_model.py), never in place of them. Its speedup and
        # interval are the table's, so its verdict is the one above.
        model = CostModel(("bench", "", "", ""))
        for r in rows:
            model.add_race(*(measures.LaneTally(**r["tallies"][lane]) for lane in ("spec", "plain")))
        out["ledger"] = ledger.build(*(measures.pool(measures.LaneTally(**r["tallies"][lane]) for r in rows)
                                       for lane in ("spec", "plain")), model, speedup=speedup, interval=interval,
                                     source=RUNS).to_dict()
    if c is not None and v is not None:
        out["break_even_acceptance"] = theory.break_even_acceptance(k, c, v)
    if a is not None:
        out["theory_tokens_per_round"] = theory.expected_tokens_per_round(a, k)
        if c is not None and v is not None:
            # The verify pass priced as measured (on a CPU it costs more than one plain step).
            out["theory_speedup"] = theory.expected_speedup(a, k, c, v)
            out["speedup_over_theory"] = out["speedup"] / out["theory_speedup"] if out["speedup"] else None
        if c is not None:
            # The GPU-ideal case, labelled: the verify pass priced as one target step.
            out["theory_speedup_gpu_ideal"] = theory.expected_speedup(a, k, c, theory.GPU_IDEAL_V)
    return out
