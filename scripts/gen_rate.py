"""How fast this machine writes on-policy data: target tokens a second at batches 16-64, fp32 and bf16.

The data stage's own loop (`generate_records`) over the first 64 templated chat requests of the SmolLM2
draft's prompt mix, split into batches of each size, up to `--new-tokens` each, greedy: the fp32 target
with packed linears (how `train-models --gen-precision fp32` runs it) and the same target under bf16
autocast. One warm-up pass, then `--rounds` alternating timed passes; medians. The hours a million
tokens takes follow from the rate.

    python scripts/gen_rate.py --out benchmarks/cpu-gen-rate.json
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from gen_precision_check import precision_lanes  # noqa: E402  (the same two lanes, timed here by batch)
from specviz.training.onpolicy import generate_records  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="16,32,64", help="prompts decoded together, comma-separated")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--new-tokens", type=int, default=160)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    prompts, eos, lanes = precision_lanes()
    names = args.precisions.split(",")

    def run(name: str, batch: int, n: int) -> float:
        model, ctx = lanes[name]
        tokens, t0 = 0, time.perf_counter()
        with ctx():
            for b in range(0, len(prompts), batch):
                tokens += sum(len(r.generated) for r in generate_records(model, prompts[b:b + batch], n, 0.0, {eos}, eos))
        return tokens / (time.perf_counter() - t0)

    for name in names:
        run(name, 64, 8)                                       # warm-up: kernels and allocator
    rates = {}
    for batch in (int(x) for x in args.batches.split(",")):
        got = {name: [] for name in names}
        for _ in range(args.rounds):
            for name in names:
                got[name].append(run(name, batch, args.new_tokens))
        rates[batch] = {name: round(statistics.median(r), 1) for name, r in got.items()}
        rates[batch]["hours_per_million"] = {name: round(1e6 / r / 3600, 2) for name, r in rates[batch].items()}
        print(f"batch {batch}: {rates[batch]}", flush=True)
    result = {"machine": platform.machine(), "torch": torch.__version__, "threads": args.threads,
              "prompts": len(prompts), "new_tokens": args.new_tokens, "temperature": 0.0,
              "tokens_per_second": rates}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
