"""What `train-models --gen-precision bf16` trades: data tokens a minute against fidelity to the fp32 target.

On the first 64 templated chat requests of the SmolLM2 draft's prompt mix (specviz/training/draft_prompts.py),
batched as the data stage batches them:
- speed: generate_records (the data stage's loop) with the fp32 target and packed linears, as the fp32 data
  stage runs it, against the same target under bf16 autocast; both warmed up, then alternating, per length;
- fidelity: teacher-forced over the fp32 run's own greedy sequences, how often the bf16 pass's argmax is the
  fp32 pass's, and the mean KL(fp32 || bf16) of the next-token distributions, in nats.

    python scripts/gen_precision_check.py --out benchmarks/cpu-gen-precision.json
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import json
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from specviz.runtime.packed_linear import pack_linears  # noqa: E402
from specviz.training.distill_data import prompt_ids  # noqa: E402
from specviz.training.draft_prompts import PromptSpec, template_requests  # noqa: E402
from specviz.training.onpolicy import generate_records  # noqa: E402
from specviz.training.smollm2_draft import load_target  # noqa: E402


def precision_lanes():
    """(prompts, eos id, lanes): the first 64 templated chat requests as token ids, and the SmolLM2 target
    twice, {"fp32": (packed fp32 model, no context), "bf16": (unpacked copy, bf16 autocast)}, as the data
    stage runs it at each --gen-precision (scripts/gen_rate.py times the same lanes)."""
    _, tokenizer, fp32 = load_target("cpu")
    bf16 = copy.deepcopy(fp32)
    pack_linears(fp32)
    prompts = [prompt_ids(tokenizer, PromptSpec("chat", t)) for t in template_requests()[:64]]
    lanes = {"fp32": (fp32, contextlib.nullcontext), "bf16": (bf16, lambda: torch.autocast("cpu", dtype=torch.bfloat16))}
    return prompts, tokenizer.eos_token_id, lanes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="64,160", help="new tokens a run, comma-separated")
    ap.add_argument("--rounds", type=int, default=2, help="alternating timed runs of each precision per length")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    prompts, eos, lanes = precision_lanes()
    fp32, bf16 = lanes["fp32"][0], lanes["bf16"][0]

    def run(name: str, n: int):
        model, ctx = lanes[name]
        t0 = time.perf_counter()
        with ctx():
            records = generate_records(model, prompts, n, 0.0, {eos}, eos)
        return records, sum(len(r.generated) for r in records) / (time.perf_counter() - t0)

    for name in lanes:
        run(name, 8)                                           # warm-up: kernels and allocator
    speed, fp32_records = {}, None
    for n in (int(x) for x in args.lengths.split(",")):
        rates = {name: [] for name in lanes}
        for _ in range(args.rounds):
            for name in lanes:
                records, rate = run(name, n)
                rates[name].append(rate)
                if name == "fp32":
                    fp32_records = records
        speed[n] = {name: round(statistics.median(r), 1) for name, r in rates.items()}
        speed[n]["bf16_over_fp32"] = round(speed[n]["bf16"] / speed[n]["fp32"], 2)
        print(f"{n} new tokens: {speed[n]}", flush=True)

    same = total = 0
    kl = []
    with torch.inference_mode():
        for r in fp32_records:
            ids = torch.tensor(r.prompt_ids + r.generated)[None]
            cut = slice(len(r.prompt_ids) - 1, len(r.prompt_ids) - 1 + len(r.generated))
            a = fp32(ids).logits[0, cut].float().log_softmax(-1)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                b = bf16(ids).logits[0, cut].float().log_softmax(-1)
            same += int((a.argmax(-1) == b.argmax(-1)).sum())
            total += len(r.generated)
            kl.append(float((a.exp() * (a - b)).sum(-1).mean()))
    result = {"machine": platform.processor() or platform.machine(), "torch": torch.__version__,
              "threads": args.threads, "prompts": len(prompts), "tokens_per_second": speed,
              "teacher_forced_positions": total, "argmax_agreement": round(same / total, 4),
              "mean_kl_nats": round(statistics.mean(kl), 5)}
    print(json.dumps(result))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
