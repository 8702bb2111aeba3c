"""Does the cost model's k advice pick the k that races best here, and how often does one race mislead?

For each pair: time it as the app does at load (calibrate.measure_costs) and ask its cost model for the k
advice (app/k_advice.py, with the preset's held-out acceptance); then race every k in --ks, --races times
on each prompt, each race feeding the same cost model as the page's races do. Reported per pair:
  - the advice's k (and the ks it calls within noise) at load, and again after all races;
  - the best k by the median speedup of its races (per prompt, then the median over prompts);
  - how often a single race's verdict (faster / about even / slower, verdict.verdict with no spread and a
    quiet machine) disagrees with the verdict of the median of its --races races.
Run it on a quiet machine (nothing else running, no browser); the figures go into benchmarks/README.md.

    python scripts/k_advice_check.py --presets bundled smollm2 --ks 2 8 --races 3 --max-new-tokens 128 \
        --prompts benchmarks/heldout-prompts.json --limit 4 --json benchmarks/cpu-k-advice.json
    python scripts/k_advice_check.py --presets bundled --ks 2 3 --races 2 --max-new-tokens 8 --limit 1   # smoke
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specviz import SpecConfig, race  # noqa: E402
from specviz.app.k_advice import from_model  # noqa: E402
from specviz.bench.prompts import load_prompts, prompt_ids  # noqa: E402
from specviz.engine.analysis.calibrate import measure_costs  # noqa: E402
from specviz.engine.analysis.cost_model import CostModel  # noqa: E402
from specviz.engine.analysis.verdict import verdict as _verdict  # noqa: E402
from specviz.engine.analysis.stats import RunStats  # noqa: E402
from specviz.models.presets import get_preset  # noqa: E402
from specviz.models.loading import load_pair  # noqa: E402


def one_race(pair, ids, cfg, model) -> float | None:
    stats = RunStats(cfg.k)
    for event in race(pair, ids, cfg):
        stats.add(event)
    spec, base = (stats.done[lane].tally for lane in ("spec", "base"))
    model.add_race(spec, base)
    return stats.measured_speedup()


def check(key: str, args) -> dict:
    preset = get_preset(key)
    pair = load_pair(preset.target, preset.draft)
    a = preset.acceptance if preset.acceptance is not None else 0.6
    k_range = (args.ks[0], args.ks[1])
    model = CostModel((key, str(pair.device), "eager", "this machine"))
    model.seed(measure_costs(pair, k_range[1]))
    at_load = from_model(model, a, k_range)
    prompts = load_prompts(args.prompts, preset.chat)[: args.limit]
    races: dict[int, list[list[float]]] = {}            # k -> per prompt, the speedups of its races
    for k in range(k_range[0], k_range[1] + 1):
        cfg = SpecConfig(k=k, max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=0)
        for p in prompts:
            ids = prompt_ids(pair, p)
            xs = [one_race(pair, ids, cfg, model) for _ in range(args.races)]
            races.setdefault(k, []).append([x for x in xs if x is not None])
            print(f"{key} k={k} {p['text'][:40]!r}: " + ", ".join(f"{x:.2f}x" for x in xs if x is not None),
                  file=sys.stderr, flush=True)
    medians = {k: statistics.median(statistics.median(r) for r in rs if r) for k, rs in races.items()}
    best = max(medians, key=medians.get)
    singles = flips = 0
    for rs in races.values():
        for r in rs:
            if not r:
                continue
            group = _verdict(statistics.median(r))[0]
            singles += len(r)
            flips += sum(_verdict(x)[0] != group for x in r)
    after = from_model(model, a, k_range)
    return {"preset": key, "a": a, "advice_at_load": at_load.to_dict(), "advice_after_races": after.to_dict(),
            "median_speedup_by_k": medians, "best_k": best, "single_races": singles, "verdict_flips": flips,
            "flip_rate": flips / singles if singles else None, "races_per_point": args.races,
            "prompts": len(prompts), "max_new_tokens": args.max_new_tokens, "temperature": args.temperature}


def row(r: dict) -> str:
    def advice(d):
        if d["k"] is None:
            return f"none ({d['reason']})"
        lo, hi = d["within"]
        return f"k = {d['k']}" + ("" if lo == hi else f" ({lo}-{hi} within noise)")
    best = r["best_k"]
    return (f"| {r['preset']} | {advice(r['advice_at_load'])} | {advice(r['advice_after_races'])} | k = {best} "
            f"({r['median_speedup_by_k'][best]:.2f}x) | {r['verdict_flips']}/{r['single_races']} "
            f"({100 * (r['flip_rate'] or 0):.0f}%) |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", nargs="+", default=["bundled", "smollm2"])
    ap.add_argument("--ks", nargs=2, type=int, default=[2, 8], metavar=("LOW", "HIGH"))
    ap.add_argument("--races", type=int, default=3, help="races per (k, prompt)")
    ap.add_argument("--prompts", default=None, help="a prompt file (default: the built-in set)")
    ap.add_argument("--limit", type=int, default=4, help="prompts used from the file")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()
    results = [check(key, args) for key in args.presets]
    print("| pair | advice at load | advice after the races | best k by racing (median) | single race vs median of "
          f"{args.races}: verdicts that differ |")
    print("|---|---|---|---|---|")
    for r in results:
        print(row(r))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
