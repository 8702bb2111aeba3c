"""The engine's race speedup at a given torch thread count, with or without a busy Python thread beside it.

The page decodes on one thread (app/cpu_threads.py leaves the other core to a local browser) while the CLI
uses two; this separates what the thread count costs from what the page adds. No browser: the race runs in
this process (k = 4, 128 greedy tokens, the bundled pair and page_parity.py's prompts, median of 2 per prompt).

    python scripts/race_threads.py --threads 2
    python scripts/race_threads.py --threads 1 --busy --switch-interval 0.0005
"""
import argparse
import os
import statistics
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from page_parity import PROMPTS  # noqa: E402
from specviz import SpecConfig  # noqa: E402
from specviz.engine.loop.race import race  # noqa: E402
from specviz.engine.analysis.stats import RunStats  # noqa: E402
from specviz.models.loading import load_pair  # noqa: E402
from specviz.models.presets import get_preset  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--busy", action="store_true", help="a Python thread doing pure-Python work beside the race")
    ap.add_argument("--switch-interval", type=float, default=0.005, help="sys.setswitchinterval (Python's default 0.005)")
    ap.add_argument("--prompts", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    sys.setswitchinterval(args.switch_interval)
    preset = get_preset("bundled")
    pair = load_pair(preset.target, preset.draft, device="cpu")
    stop = threading.Event()

    def spin():                                   # holds the GIL in bursts, as a UI thread rendering would
        while not stop.is_set():
            sum(range(20000))
            time.sleep(0.002)

    if args.busy:
        threading.Thread(target=spin, daemon=True).start()

    def speedup(prompt: str) -> float:
        stats = RunStats(preset.k)
        for event in race(pair, prompt, SpecConfig(k=preset.k, max_new_tokens=128)):
            stats.add(event)
        return stats.measured_speedup()

    speedup(PROMPTS[0])                           # warm-up
    ratios = [statistics.median(speedup(p) for _ in range(2)) for p in PROMPTS[:args.prompts]]
    stop.set()
    print(f"threads={args.threads} busy={args.busy} switch={args.switch_interval}: median {statistics.median(ratios):.2f}x",
          [round(r, 2) for r in ratios])
    return 0


if __name__ == "__main__":
    sys.exit(main())
