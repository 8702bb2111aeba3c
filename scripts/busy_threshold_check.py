"""How much other load flips a race's verdict? The measurement behind machine_load.DISTURBED_CORES.

On a quiet machine, race one (pair, k, prompt) --races times: the verdict of their median is the
reference. Then, for each level in --levels (a share of one core that a burner process spins, on
--burners processes), race it again --races times while the burners run, and measure the share of the
machine other programs used during each race (app/machine_load.OtherLoad, as the page does). A race
whose verdict (verdict.verdict, no spread) differs from the quiet median's is a flip. Reported per
measured load: the races, the flips, and the lowest load at which flips exceed --max-flips: set the
busy note's threshold (DISTURBED_CORES, in cores beyond those torch leaves free) below it.
Run it on an otherwise quiet machine with no browser open.

    python scripts/busy_threshold_check.py --preset smollm2 --k 3 --races 5 --max-new-tokens 64 \
        --levels 0 0.25 0.5 0.75 1.0 --burners 1 2 --json benchmarks/cpu-busy-threshold.json
    python scripts/busy_threshold_check.py --preset bundled --races 2 --max-new-tokens 8 --levels 0 0.5   # smoke
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from specviz import SpecConfig, race  # noqa: E402
from specviz.app.machine_load import DISTURBED_CORES, OtherLoad  # noqa: E402
from specviz.bench.prompts import load_prompts, prompt_ids  # noqa: E402
from specviz.engine.analysis.verdict import verdict as _verdict  # noqa: E402
from specviz.engine.analysis.stats import RunStats  # noqa: E402
from specviz.models.loading import load_pair  # noqa: E402
from specviz.models.presets import get_preset  # noqa: E402

PERIOD_S = 0.02     # a burner's duty cycle: busy for level x PERIOD_S, then asleep for the rest


def burn(level: float, stop) -> None:
    while not stop.is_set():
        end = time.perf_counter() + level * PERIOD_S
        while time.perf_counter() < end:
            pass
        time.sleep(max(0.0, (1 - level) * PERIOD_S))


def timed_race(pair, ids, cfg) -> tuple[float | None, float | None]:
    others = OtherLoad()
    stats = RunStats(cfg.k)
    for event in race(pair, ids, cfg):
        stats.add(event)
    return stats.measured_speedup(), others.share()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="smollm2")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--races", type=int, default=5)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--prompts", default=None)
    ap.add_argument("--levels", nargs="+", type=float, default=[0.0, 0.25, 0.5, 0.75, 1.0])
    ap.add_argument("--burners", nargs="+", type=int, default=[1])
    ap.add_argument("--max-flips", type=float, default=0.1, help="flip share called too many")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    preset = get_preset(args.preset)
    pair = load_pair(preset.target, preset.draft)
    ids = prompt_ids(pair, load_prompts(args.prompts, preset.chat)[0])
    cfg = SpecConfig(k=args.k, max_new_tokens=args.max_new_tokens)
    timed_race(pair, ids, cfg)                                        # warm-up
    quiet = [timed_race(pair, ids, cfg) for _ in range(args.races)]
    reference = _verdict(statistics.median(s for s, _ in quiet if s is not None))[0]
    rows = []
    for burners in args.burners:
        for level in args.levels:
            stop = mp.Event()
            procs = [mp.Process(target=burn, args=(level, stop), daemon=True) for _ in range(burners if level else 0)]
            for p in procs:
                p.start()
            try:
                for _ in range(args.races):
                    speedup, share = timed_race(pair, ids, cfg)
                    rows.append({"burners": burners, "level": level, "share": share, "speedup": speedup,
                                 "flip": speedup is not None and _verdict(speedup)[0] != reference})
                    print(f"burners {burners} level {level:.2f}: other load {share or 0:.0%}, {speedup or 0:.2f}x",
                          file=sys.stderr, flush=True)
            finally:
                stop.set()
                for p in procs:
                    p.join()
    cores, threads = os.cpu_count() or 1, torch.get_num_threads()
    buckets: dict[float, list[dict]] = {}
    for r in rows:
        buckets.setdefault(round((r["share"] or 0.0) * 10) / 10, []).append(r)
    print(f"quiet median {statistics.median(s for s, _ in quiet if s is not None):.2f}x ({reference}); {cores} cores, "
          f"{threads} decoding threads; the page calls a race busy above "
          f"{(max(0, cores - threads) + DISTURBED_CORES) / cores:.0%} other load")
    print("| other load (share of the machine) | races | verdict differs from the quiet median's |")
    print("|---|---|---|")
    first_bad = None
    for share in sorted(buckets):
        rs = buckets[share]
        flips = sum(r["flip"] for r in rs)
        print(f"| {share:.0%} | {len(rs)} | {flips} ({100 * flips / len(rs):.0f}%) |")
        if first_bad is None and flips / len(rs) > args.max_flips:
            first_bad = share
    if first_bad is not None:
        print(f"verdicts flip in more than {args.max_flips:.0%} of races from about {first_bad:.0%} other load: "
              f"DISTURBED_CORES = {max(0.0, first_bad * cores - max(0, cores - threads)):.2f} puts the busy note there")
    if args.json:
        Path(args.json).write_text(json.dumps({"quiet": quiet, "reference": reference, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
