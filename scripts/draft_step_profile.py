"""What one draft step costs on this CPU, by how the draft steps (runtime/lean_draft.py).

For each pair and thread count, a draft step (1 token after a 64-token cached context) is timed
three ways: transformers' forward (the eager path before the lean step), the lean step on fp32
weights, and the lean step on int8 weights. Each is timed twice: `warm`, straight after another
draft step (a round's later drafts), and `after_target`, straight after one plain target step
(a round's first draft, when the target has just streamed its weights through the caches).
The ways alternate within each repeat; medians in ms, and c = step / plain target step.

    python scripts/draft_step_profile.py [--pairs bundled,smollm2] [--threads 1,2] [--repeats 41] [--out FILE.json]
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

WAYS = ("transformers", "fp32", "int8")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", default="bundled,smollm2")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeats", type=int, default=41)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import torch
    from specviz.runtime.cached_model import CachedModel
    from specviz.runtime.lean_draft import LeanCachedModel, LeanWeights, step_seconds
    from specviz.models.presets import load_preset

    rows = []
    for name in args.pairs.split(","):
        pair = load_preset(name, device="cpu", dtype="float32")
        V = pair.vocab_size
        ids = pair.tokenizer("The quick brown fox jumps over the lazy dog. " * 16)["input_ids"]
        context = torch.tensor(ids[:64])
        weights = {"fp32": LeanWeights(pair.draft, "fp32"), "int8": LeanWeights(pair.draft, "int8")}
        for threads in [int(t) for t in args.threads.split(",")]:
            torch.set_num_threads(threads)
            with torch.inference_mode():
                target = CachedModel(pair.target, V)
                target.feed(context, keep=1)
                drafts = {"transformers": CachedModel(pair.draft, V),
                          **{w: LeanCachedModel(weights[w], V) for w in ("fp32", "int8")}}
                for lm in drafts.values():
                    lm.feed(context, keep=1)

                def step(lm) -> float:
                    return step_seconds(lm, context[5:6], len(context))

                times = {(w, when): [] for w in WAYS for when in ("warm", "after_target")}
                plain = []
                for _ in range(args.repeats):
                    for way in WAYS:
                        start = time.perf_counter()
                        target.feed(context[7:8], keep=1)          # a plain step: the target's weights stream through
                        plain.append(time.perf_counter() - start)
                        target.crop(len(context))
                        times[way, "after_target"].append(step(drafts[way]))
                        times[way, "warm"].append(step(drafts[way]))
            plain_ms = 1e3 * statistics.median(plain)
            row = {"pair": name, "threads": threads, "plain_ms": round(plain_ms, 3)}
            for (way, when), ts in times.items():
                ms = 1e3 * statistics.median(ts)
                row[f"{way}_{when}_ms"] = round(ms, 3)
                row[f"{way}_{when}_c"] = round(ms / plain_ms, 4)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": {"processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                                   "torch": torch.__version__},
                       "repeats": args.repeats, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
