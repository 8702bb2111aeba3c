"""k and the draft's confidence stop, side by side: speculative vs plain on a prompt file, one process.

    python scripts/stop_grid.py --preset smollm2 --prompts benchmarks/heldout-prompts.json --grid 3:0,5:0.5,6:0.3

Each setting k:P (P = SpecConfig.confidence_stop, 0 = off) runs every prompt with the benchmark's
paired measurement (a warm-up, then plain and speculative back to back) and prints one JSON line:
the median of the per-prompt speedups, the pooled a (accepted / judged), a_d (accepted / drafted),
tau (tokens per target pass) and the drafts a round made on average.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specviz import SpecConfig, load_preset  # noqa: E402
from specviz.bench.prompts import load_prompts, prompt_ids  # noqa: E402
from specviz.bench.runner import measure_prompt, paired_ratio  # noqa: E402
from specviz.engine.metrics.measures import acceptance_rate, draft_acceptance_rate, mean_acceptance_length, pool  # noqa: E402

METHODS = ["specviz plain", "specviz speculative"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="smollm2")
    ap.add_argument("--prompts", default=None, help="a prompt file (default: the benchmark's built-in set)")
    ap.add_argument("--grid", default="3:0,5:0.5", help="comma-separated k:P settings")
    ap.add_argument("--max-new-tokens", type=int, default=96)
    args = ap.parse_args()
    pair = load_preset(args.preset)
    encoded = [prompt_ids(pair, p) for p in load_prompts(args.prompts)]
    for setting in args.grid.split(","):
        k, stop = setting.split(":")
        cfg = SpecConfig(k=int(k), max_new_tokens=args.max_new_tokens, confidence_stop=float(stop))
        ratios, tallies = [], []
        for ids in encoded:
            runs = measure_prompt(pair, ids, cfg, METHODS, repeats=1)
            ratios.append(paired_ratio(runs["specviz speculative"], runs["specviz plain"]))
            tallies.append(runs["specviz speculative"][0].stats.tally)
        t = pool(tallies)
        print(json.dumps({"k": cfg.k, "confidence_stop": cfg.confidence_stop,
                          "median_speedup": round(statistics.median(ratios), 3),
                          "a": round(acceptance_rate(t), 3), "a_d": round(draft_acceptance_rate(t), 3),
                          "tau": round(mean_acceptance_length(t), 2),
                          "drafts_per_round": round(t.drafted / t.rounds, 2)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
