"""Token-wise (exact) against block verification: drafts kept per round, and with --speedup the speedup.

For each pair, temperature and k, both rules decode the same held-out prompts with the same seeds
(engine/loop/block.py for the block rule); the figures are summed over prompts and seeds: drafts kept
per round (accepted / rounds, engine/metrics/measures.py kept_per_round), tau (tokens per target
pass) and the rounds behind them. Acceptance counts do not depend on time and may be taken on a busy
machine. --speedup races each run against plain decoding (engine race, each lane on its own clock) and
adds the median speedup over prompts and seeds: a timing, so ONLY on a quiet machine. Prompts: the
bundled (code) pair gets held-out standard-library code (bench/prompts.py), a chat pair the given
JSON files (benchmarks/heldout-prompts.json and unseen-prompts.json by default).

    python scripts/block_rule_table.py --presets bundled smollm2 --temperatures 0 0.7 1.0 --ks 3 4 5 6 \
        --limit 4 --seeds 2 --max-new-tokens 64 --speedup --markdown benchmarks/block-rule-table.md
    python scripts/block_rule_table.py --presets bundled --ks 3 --temperatures 1.0 --limit 1 --seeds 1   # smoke
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specviz import SpecConfig, race, speculate  # noqa: E402
from specviz.bench.prompts import heldout_code_prompts, load_prompts, prompt_ids  # noqa: E402
from specviz.engine.analysis.stats import RunStats  # noqa: E402
from specviz.engine.metrics import measures  # noqa: E402
from specviz.engine.metrics.measures import LaneTally  # noqa: E402
from specviz.models.loading import load_pair  # noqa: E402
from specviz.models.presets import get_preset  # noqa: E402

RULES = ("exact", "block")
CHAT_PROMPTS = ["benchmarks/heldout-prompts.json", "benchmarks/unseen-prompts.json"]


def prompts_for(preset, args) -> list[dict]:
    """Held-out prompts: stdlib code for a code pair (not chat), the JSON files for a chat pair."""
    if not preset.chat:
        return [{"kind": "code", "text": t, "chat": False} for t in heldout_code_prompts(args.limit)]
    items = [p for path in args.prompts for p in load_prompts(path, True)[: args.limit]]
    return items


def one_cell(pair, prompts, rule: str, t: float, k: int, args) -> dict:
    """Both lanes' figures for one rule at one temperature and k, over every prompt and seed."""
    tally, speedups = LaneTally(), []
    for p in prompts:
        ids = prompt_ids(pair, p)
        for seed in range(args.seeds):
            cfg = SpecConfig(k=k, temperature=t, rule=rule, seed=seed, max_new_tokens=args.max_new_tokens)
            if args.speedup:
                stats = RunStats(k)
                for event in race(pair, ids, cfg):
                    stats.add(event)
                    if event.lane == "spec":
                        tally.add(event)
                speedups.append(stats.measured_speedup())
            else:
                for event in speculate(pair, ids, cfg):
                    tally.add(event)
    return {"rule": rule, "temperature": t, "k": k, "rounds": tally.rounds, "accepted": tally.accepted,
            "tokens": tally.tokens, "kept_per_round": measures.kept_per_round(tally),
            "tau": measures.mean_acceptance_length(tally),
            "speedup": statistics.median(s for s in speedups if s is not None) if speedups else None}


def table(rows: list[dict], speedup: bool) -> str:
    """Markdown: one line per pair, temperature and k, token-wise against block side by side."""
    head = "| pair | T | k | kept / round: exact | block | gain | tau: exact | block | rounds: exact | block |"
    rule = "|---|---|---|---|---|---|---|---|---|---|"
    if speedup:
        head += " speedup: exact | block |"
        rule += "---|---|"
    lines = [head, rule]
    cells = {(r["pair"], r["temperature"], r["k"], r["rule"]): r for r in rows}
    for pair, t, k in dict.fromkeys((r["pair"], r["temperature"], r["k"]) for r in rows):
        e, b = cells[(pair, t, k, "exact")], cells[(pair, t, k, "block")]
        line = (f"| {pair} | {t:g} | {k} | {e['kept_per_round']:.3f} | {b['kept_per_round']:.3f} | "
                f"{b['kept_per_round'] - e['kept_per_round']:+.3f} | {e['tau']:.3f} | {b['tau']:.3f} | "
                f"{e['rounds']} | {b['rounds']} |")
        if speedup:
            line += f" {e['speedup']:.2f}x | {b['speedup']:.2f}x |"
        lines.append(line)
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=["bundled", "smollm2"])
    ap.add_argument("--temperatures", nargs="+", type=float, default=[0.0, 0.7, 1.0])
    ap.add_argument("--ks", nargs="+", type=int, default=[3, 4, 5, 6])
    ap.add_argument("--prompts", nargs="+", default=CHAT_PROMPTS, help="JSON prompt files for a chat pair")
    ap.add_argument("--limit", type=int, default=4, help="prompts per file (a code pair: in all)")
    ap.add_argument("--seeds", type=int, default=2, help="seeds per prompt (the same for both rules)")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--speedup", action="store_true", help="race against plain decoding: TIMING, quiet machine only")
    ap.add_argument("--json", help="write every cell here")
    ap.add_argument("--markdown", help="write the table here")
    args = ap.parse_args(argv)
    rows = []
    for key in args.presets:
        preset = get_preset(key)
        pair = load_pair(preset.target, preset.draft)
        prompts = prompts_for(preset, args)
        for t in args.temperatures:
            for k in args.ks:
                for rule in RULES:
                    rows.append({"pair": key, **one_cell(pair, prompts, rule, t, k, args)})
                print(table([r for r in rows if r["pair"] == key and r["temperature"] == t and r["k"] == k],
                            args.speedup).splitlines()[-1], flush=True)
    out = table(rows, args.speedup)
    print(out)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(out + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
