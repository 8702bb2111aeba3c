"""What a verify pass costs on this CPU: the target's pass over n tokens against one plain step.

For each pair and thread count, engine/analysis/calibrate.py's `measure_costs` (the very measurement the app
makes at load) times one plain step, one draft step and target passes of 2..k_max+1 tokens after a
cached context, and each k's draft steps in their place in a round (after a verify pass); printed as
v(n) = pass(n) / plain step, c = a draft step alone / plain step and c(k) = a draft step in a round of k. A pass bound
by reading the weights costs about one step whatever n is (v = 1: the weights are read once for all
n rows); what it costs above that is the matrix arithmetic of the extra rows and per-row work.
Threads: 1 is what the app decodes with when the browser shares the machine (app/cpu_threads.py),
all cores what the CLI uses.

    python scripts/verify_profile.py [--pairs bundled,smollm2] [--threads 1,2] [--repeats 7] [--out FILE.json]
"""
import argparse
import json
import os
import platform
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", default="bundled,smollm2")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--k-max", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import torch
    from transformers.utils import logging as hf_logging

    from specviz.engine.analysis.calibrate import measure_costs
    from specviz.models.presets import load_preset
    hf_logging.disable_progress_bar()
    rows = []
    for key in args.pairs.split(","):
        for threads in (int(t) for t in args.threads.split(",")):
            torch.set_num_threads(threads)
            # Loaded anew at each thread count: the linears' kernels are chosen at load, timed with the
            # threads set then (runtime/packed_linear.py), as the app sets its threads before loading.
            pair = load_preset(key, device="cpu", dtype="float32")
            measure_costs(pair, 1, repeats=2)                      # warm-up at this thread count
            costs = measure_costs(pair, args.k_max, repeats=args.repeats)
            v = {n: costs.pass_s[n] / costs.plain_s for n in sorted(costs.pass_s) if n > 1}
            kernels = getattr(pair.target, "linear_kernels", None)
            rows.append({"pair": key, "threads": threads, "plain_ms": 1e3 * costs.plain_s,
                         "linear_kernels": None if kernels is None else [kernels.one_row, kernels.many_rows],
                         "draft_ms": None if costs.draft_s is None else 1e3 * costs.draft_s,
                         "c_alone": costs.c_alone, "c_in_round": {k: costs.c(k) for k in costs.round_draft_s},
                         "v_by_tokens": v})
            print(f"{key:8} threads {threads}: plain step {1e3 * costs.plain_s:6.1f} ms, c alone = {costs.c_alone:.3f}, "
                  + ", ".join(f"c({k}) = {costs.c(k):.3f}" for k in costs.round_draft_s) + ", "
                  + ", ".join(f"v({n}) = {x:.2f}" for n, x in v.items())
                  + (f"; linears: {kernels.one_row} / {kernels.many_rows}" if kernels else ""), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": {"processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                                   "torch": torch.__version__}, "repeats": args.repeats, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
