"""`python -m specviz remote --url http://HOST:PORT/v1 --prompt TEXT`: a vLLM server's speculation, per request.

Prints the output colored by fate (the terminal's legend: green accepted draft, yellow the target's correction,
cyan the bonus; the prefill's first token plain; a red count after a correction: drafts the server rejected,
known by number only), then one line a round and the request's figures as the server computed them.
`--baseline-url` races a second endpoint serving the same target without speculation. `--check-local PRESET`
runs the exactness check (remote/exactness.py) with that preset's target weights. `--json` prints only
{"rounds": [...], "mean_acceptance_length": x, "draft_acceptance_rate": y} on standard output.
"""
from __future__ import annotations

import json
import sys

from .terminal import RESET, STYLES, safe

FATE_STYLE = {"accepted": STYLES["accepted"], "correction": STYLES["resampled"], "bonus": STYLES["bonus"],
              "first": "", "unexplained": ""}


def add_parser(sub) -> None:
    p = sub.add_parser("remote", help="watch a vLLM server speculate on one prompt (its rounds and acceptance)")
    p.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--prompt", required=True)
    p.add_argument("--model", default=None, help="a model the server serves (default: its first)")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--baseline-url", default=None, help="the same target served without speculation, to race")
    p.add_argument("--check-local", default=None, metavar="PRESET",
                   help="check the output against this preset's target weights here (e.g. smollm2)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the server's next chunk")
    p.add_argument("--json", action="store_true", help="print only the rounds and figures as JSON")
    p.add_argument("--no-color", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..errors import ConfigError
    from ..remote.watch import watch

    if not 0 <= args.temperature <= 5 or not 1 <= args.max_new_tokens <= 8192:
        raise ConfigError("temperature must be between 0 and 5 and max-new-tokens between 1 and 8192")
    color = not args.no_color and sys.stdout.isatty() and not args.json
    shown = 0
    final = None
    for seen in watch(args.url, args.prompt, args.model, args.temperature, args.max_new_tokens, args.seed,
                      timeout=args.timeout):
        final = seen
        if not args.json and not seen.finished:      # tokens as they stream, plain until the fates are known
            new = seen.completion.pieces[shown:]
            shown += len(new)
            if not color:
                continue
            print(safe("".join(new)), end="", flush=True)
    if args.json:
        print(json.dumps(final.to_json()))
        return 0
    if color:
        print("\r\x1b[2K" if "\n" not in "".join(final.completion.pieces) else "\n", end="")
    print(colored(final, color))
    print(rounds_lines(final))
    print(figures(final))
    if args.baseline_url:
        print(race_line(final, args))
    if args.check_local:
        print(local_check(final, args))
    return 0


def colored(seen, color: bool) -> str:
    if seen.fates is None:
        return safe("".join(seen.completion.pieces))
    out = []
    for token in seen.fates.tokens:
        text = safe(token.piece)
        style = FATE_STYLE[token.fate] if color else ""
        out.append(f"{style}{text}{RESET}" if style and text else text)
        if token.fate == "correction" and color:
            thrown = seen.fates.rounds[token.round - 1].rejected
            out.append(f"{STYLES['rejected']}[x{thrown}]{RESET}")
    return "".join(out)


def rounds_lines(seen) -> str:
    if seen.fates is None:
        return ""
    if seen.fates.why:
        return f"fates: not shown: {seen.fates.why}"
    lines = [f"  round {r.round}: drafted {r.drafted}, accepted {r.accepted}, rejected {r.rejected}"
             f" -> {''.join(t.piece for t in r.tokens)!r}" for r in seen.fates.rounds]
    return "\n".join(lines)


def figures(seen) -> str:
    spec = seen.spec
    by_pos = ", ".join(f"{x:.2f}" for x in seen.acceptance_by_position())
    bits = [f"{seen.model} at {seen.url}: {len(seen.completion.pieces)} tokens in {seen.seconds:.2f} s",
            f"mean acceptance length {spec.get('mean_acceptance_length', 0):.2f} (tokens a step, bonus included)",
            f"draft acceptance rate {spec.get('draft_acceptance_rate', 0):.2f}",
            f"by position: {by_pos}" if by_pos else ""]
    if seen.counters:
        per = seen.counters["per_position"]
        drafts = seen.counters["vllm:spec_decode_num_drafts_total"] or 1
        bits.append("server /metrics: " + ", ".join(f"pos {p}: {v / drafts:.2f}" for p, v in per.items()))
    bits.extend(seen.notes)
    return "\n".join(b for b in bits if b)


def race_line(seen, args) -> str:
    """The same request through --baseline-url, compared as the Server tab compares it (remote/watch.py)."""
    from ..remote.watch import race_baseline
    race = race_baseline(args.baseline_url, seen, args.prompt, args.model, args.temperature, args.max_new_tokens,
                         args.seed, timeout=args.timeout)
    return f"baseline {args.baseline_url}: {race.comparison()}"


def local_check(seen, args) -> str:
    from ..models.presets import load_preset
    from ..remote.exactness import has_ids, verdict_of

    if not has_ids(seen.completion):
        return "exactness: the server returned no token ids (vLLM's return_token_ids), so no local check"
    pair = load_preset(args.check_local, device="cpu", dtype="float32")
    verdict = verdict_of(seen.completion, args.temperature, pair.target)
    gap = f" (server and local logprobs differ by at most {verdict.max_logprob_gap:.3f})" \
        if verdict.max_logprob_gap is not None else ""
    return "exactness: " + verdict.sentence() + gap
