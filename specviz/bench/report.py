"""The benchmark result as a readable table (the same numbers as the JSON)."""
from __future__ import annotations

from ..engine.analysis.ledger import Ledger, text_lines
from ..runtime.packed_linear import Kernels


def _f(x, fmt="{:.2f}", none="—") -> str:
    return none if x is None else fmt.format(x)


def verdict_line(row: dict) -> str:
    """A k's verdict with the interval it judged (bench/suite.py), then each prompt's:
    "k=4: faster, 1.52x (the prompts' runs 1.31-1.70x); per prompt: code faster 1.61x (1.50-1.70x), ..."."""
    def spread(interval) -> str:
        return f" ({interval[0]:.2f}-{interval[1]:.2f}x)" if interval else " (no interval: too few runs and rounds)"

    s = row["summary"]
    prompts = "; ".join(f"{p['kind']} {p.get('verdict', '-')} {_f(p['ratios'].get('speedup'), '{:.2f}x')}"
                        f"{spread(p.get('speedup_interval'))}" for p in row["per_prompt"])
    return (f"k={row['k']}: {s.get('verdict', '-')}, {_f(s['speedup'], '{:.2f}x')}"
            + (f" (the prompts' runs {s['speedup_interval'][0]:.2f}-{s['speedup_interval'][1]:.2f}x)"
               if s.get("speedup_interval") else "") + f"; per prompt: {prompts}")


def table(result: dict) -> str:
    lines = []
    m = result["machine"]
    lines.append(f"specviz bench · {result['models']['target']} ← {result['models']['draft']} · device {result['device']}"
                 f" · {m['processor']}, {m['cpus']} CPUs, torch {m['torch']} ({m['torch_threads']} threads)"
                 + (f" · {m['gpu']}" if "gpu" in m else ""))
    s = result["settings"]
    rule = f", rule {s['rule']}" if s.get("rule", "exact") != "exact" else ""      # saved results before --rule: exact
    lines.append(f"temperature {s['temperature']}, max new tokens {s['max_new_tokens']}, drafter {s['drafter']}{rule}, "
                 f"repeats {result['repeats']} (median), medians over prompts")
    step = result.get("draft_step")
    if step:
        timed = step.get("timed_step_ms")
        lines.append(f"specviz's draft steps: {step['path']}" + (
            " (timed here: " + ", ".join(f"{f} {ms:.2f} ms" for f, ms in timed.items()) + " a warm step)" if timed else "")
            + "; transformers' assisted generation steps it through its own forward, fp32")
    linears = result.get("linear_kernels", {}).get("target")
    if linears:
        lines.append(f"the target's linears (both lanes, and generate()): {Kernels(**linears).describe()}")
    if result["not_lossless"]:
        lines.append(f"!! forced acceptance {s['forced_acceptance']}: NOT LOSSLESS, a timing experiment only")
    methods = result["methods"]
    width = {n: max(20, len(n) + 8) for n in methods}
    head = f"{'k':>3} " + "".join(f"{n + ' tok/s':>{width[n]}}" for n in methods) + \
        f"{'speedup':>9}{'a':>7}{'tok/round':>11}{'theory':>8}{'c':>7}{'theory x':>10}{'meas/theory':>12}" \
        f"{'v':>6}{'GPU-ideal x':>12}"
    lines += ["", head, "-" * len(head)]
    for row in result["rows"]:
        r = row["summary"]
        lines.append(f"{row['k']:>3} " + "".join(f"{_f(r['tokens_per_s'].get(n), '{:.1f}'):>{width[n]}}" for n in methods)
                     + f"{_f(r['speedup'], '{:.2f}x'):>9}{_f(r['acceptance_rate']):>7}{_f(r['tokens_per_round']):>11}"
                     f"{_f(r.get('theory_tokens_per_round')):>8}{_f(r['cost_ratio'], '{:.3f}'):>7}"
                     f"{_f(r.get('theory_speedup'), '{:.2f}x'):>10}{_f(r.get('speedup_over_theory')):>12}"
                     f"{_f(r.get('verify_ratio')):>6}{_f(r.get('theory_speedup_gpu_ideal'), '{:.2f}x'):>12}")
    first = result["rows"][0]["summary"]
    if "specviz_plain_vs_hf_generate" in first:
        assistant = result["models"].get("hf_assistant")
        lines.append("")
        if "hf_assisted_speedup" in first:
            lines += [f"transformers assisted generation vs generate(): {_f(first['hf_assisted_speedup'], '{:.2f}x')}"
                      + (f" (its draft: {assistant})" if assistant else ""),
                      f"specviz speculative vs transformers assisted:  {_f(first['specviz_vs_hf_assisted'], '{:.2f}x')}"]
        lines.append(f"specviz plain vs transformers generate():      {_f(first['specviz_plain_vs_hf_generate'], '{:.2f}x')}")
    if "fast_speedup" in first:
        lines.append("")
        for row in result["rows"]:
            r, compile_s = row["summary"], result["fast_first_use_s"][str(row["k"])]
            lines.append(f"k={row['k']} fast path (static cache + compiled steps): plain {_f(r['fast_vs_default_plain'], '{:.2f}x')} "
                         f"and speculative {_f(r['fast_vs_default_speculative'], '{:.2f}x')} the default path; "
                         f"speculative/plain {_f(r['fast_speedup'], '{:.2f}x')} (c {_f(r.get('cost_ratio_fast'), '{:.3f}')}, "
                         f"theory {_f(r.get('theory_speedup_fast'), '{:.2f}x')}, "
                         f"meas/theory {_f(r.get('fast_speedup_over_theory'))}); first use (compiling) "
                         + ", ".join(f"{s:.0f} s" for s in compile_s.values()))
    if len(result["rows"]) > 1:
        lines.append(f"\nbest measured k: {result['best_k']}; theory's best k for the measured a and c: "
                     f"{result.get('theory_best_k', '—')}")
    for row in result["rows"]:
        lines.append("\n" + verdict_line(row))
        if "ledger" in row["summary"]:
            lines.append("  a, c and v from the prompts' median runs pooled:")
            lines += text_lines(Ledger.from_dict(row["summary"]["ledger"]))
    b = result["breakdown"]
    lines.append(f"\nround breakdown at k={result['best_k']} ({b['rounds']} rounds, {b['seconds_per_round'] * 1e3:.2f} ms "
                 f"a round): " + ", ".join(f"{k} {v:.1%}" for k, v in b["share"].items())
                 + f"; outside the forward passes: {b['outside_forwards']:.1%}")
    return "\n".join(lines)
