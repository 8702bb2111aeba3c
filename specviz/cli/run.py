"""`python -m specviz run`: decode one prompt and print the tokens colored by what happened.

With --json it prints one event per line (the last line is `done`; with --baseline the two
lanes' `done` and then one `ledger` line). With --baseline the plain target decoding runs
interleaved with the speculative one (the engine's race) and the measured speedup is shown
with the race's headline (engine/analysis/headline.py: the same text in fewer passes when greedy, each
lane's length and stop reason when sampled) and its time ledger: where each lane's seconds went and why
it gained or lost (engine/analysis/ledger.py).
"""
from __future__ import annotations

import argparse
import json
import sys

from ..app.form_table import BY_NAME
from ..app.machine_load import OtherLoad, busy_words
from ..app.run_records import choice_rows
from ..engine.analysis import ledger
from ..engine.analysis.cost_model import CostModel
from ..engine.analysis.repeat import repeated
from ..engine.analysis.stats import RunStats
from ..engine.analysis.headline import headline
from ..engine.loop.drafters import DEFAULT_DRAFTER, DRAFTERS, uses_draft_model


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="speculative decoding of one prompt, printed live")
    p.add_argument("--prompt", required=True, help="text to continue")
    add_model_args(p)
    add_sampling_args(p)
    p.add_argument("--baseline", action="store_true", help="race plain target decoding alongside and report the speedup")
    p.add_argument("--json", action="store_true", help="print one JSON event per line")
    p.add_argument("--no-color", action="store_true", help="plain text without ANSI colors")
    p.add_argument("--explain", action="store_true", help="one line on stderr per verdict: why it was kept or not")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="with --baseline: race N times and report the median speedup with its range (the last "
                        "race is printed; each one's c and v join the cost model the ledger reads)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="CPU threads torch decodes with (default: torch's own; the page served on localhost "
                        "leaves one core free, app/cpu_threads.py)")
    p.set_defaults(func=run)


def add_model_args(p) -> None:
    p.add_argument("--preset", default=None, help="a preset key from spaces.yaml, any tier: bundled, smollm2, ... "
                   "(sets --target, --draft, --k, --confidence-stop and --chat unless given)")
    p.add_argument("--chat", action=argparse.BooleanOptionalAction, default=None,
                   help="wrap the prompt in the target's chat template (default: on for instruct presets)")
    p.add_argument("--target", default=None, help="hub id or folder (default: the bundled target)")
    p.add_argument("--draft", default=None, help="hub id or folder (default: the bundled draft)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    p.add_argument("--dtype", default="auto", help="auto, float32, bfloat16 or float16")


def add_sampling_args(p) -> None:
    p.add_argument("--k", type=int, default=None, help="tokens drafted per round (default 4, or the preset's)")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    p.add_argument("--top-k", type=int, default=0, help="0 = off")
    p.add_argument("--top-p", type=float, default=1.0, help="1 = off")
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--drafter", choices=list(DRAFTERS), default=DEFAULT_DRAFTER)
    p.add_argument("--adaptive-k", action="store_true", help="grow k after full acceptance, shrink after a rejection")
    p.add_argument("--tree", default=None, metavar="W1,W2,...",
                   help="draft a token tree of these candidates per depth instead of a chain of k (e.g. 2,2,1,1)")
    p.add_argument("--tree-budget", type=int, default=0, metavar="N",
                   help="with --tree: at most N nodes, given to the nodes the draft is surest of (EAGLE-2); 0 = all")
    add_rule_arg(p)
    add_confidence_stop_arg(p)
    p.add_argument("--stop", action="append", default=[], help="stop string (repeatable)")
    p.add_argument("--fast", action="store_true",
                   help="static KV cache + compiled decode steps (CUDA graphs on CUDA); compiles on first use")


def add_rule_arg(p) -> None:
    """--rule: the settings table's acceptance rules (app/form_table.py), the page's radio's choices."""
    rule = BY_NAME["rule"]
    p.add_argument("--rule", choices=rule.choices, default=rule.default,
                   help=f"acceptance rule: exact (token by token) or block (the drafted block judged jointly, chains "
                        f"only); {rule.info}")


def add_confidence_stop_arg(p) -> None:
    p.add_argument("--confidence-stop", type=float, default=None, metavar="P",
                   help="stop a round's drafting after a draft the draft model gave less than P (0 = off: "
                        "always k; default the preset's, else 0)")


def apply_preset(args) -> None:
    """Fill --target, --draft, --k, --confidence-stop and --chat from --preset where they were not given."""
    from ..models.presets import get_preset
    preset = get_preset(args.preset) if args.preset else None
    if preset is not None and args.target is None:
        args.target, args.draft = preset.target, args.draft or preset.draft
    if args.k is None:
        args.k = preset.k if preset else 4
    if args.confidence_stop is None:
        args.confidence_stop = preset.confidence_stop if preset else 0.0
    if getattr(args, "chat", None) is None:
        args.chat = bool(preset and preset.chat)


def prompt_from(args, pair):
    """The prompt as text, or as token ids in the target's chat template (--chat)."""
    from ..errors import ConfigError
    from ..engine.loop.output import EMPTY_PROMPT
    if not args.chat:
        return args.prompt
    if not args.prompt.strip():
        raise ConfigError(EMPTY_PROMPT)
    from ..models.chat import chat_ids
    return chat_ids(pair.tokenizer, args.prompt, pair.target_name)


def config_from(args):
    from ..engine.loop.config import SpecConfig, parse_tree
    return SpecConfig(k=args.k, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                      max_new_tokens=args.max_new_tokens, seed=args.seed, drafter=args.drafter,
                      adaptive_k=args.adaptive_k, confidence_stop=args.confidence_stop,
                      stop_strings=tuple(args.stop), fast=args.fast,
                      tree=parse_tree(args.tree) if getattr(args, "tree", None) else None,
                      tree_budget=getattr(args, "tree_budget", 0), rule=getattr(args, "rule", "exact"))


def pair_from(args):
    from ..errors import LoadError
    from ..models.loading import load_pair
    if args.target is None and args.draft is not None:
        raise LoadError("--draft needs --target too")
    draft = args.draft
    if args.target is not None and draft is None and uses_draft_model(args.drafter):
        raise LoadError("--target was given without --draft: add --draft or use --drafter prompt_lookup")
    return load_pair(args.target, draft, device=args.device, dtype=args.dtype)


def run(args) -> int:
    from ..engine import race, speculate, to_dict
    from . import terminal

    apply_preset(args)
    if getattr(args, "threads", None):
        import torch
        torch.set_num_threads(max(1, args.threads))
    config = config_from(args)        # validate settings before the (slow) model load
    pair = pair_from(args)
    prompt = prompt_from(args, pair)

    def decode():
        return race(pair, prompt, config) if args.baseline else speculate(pair, prompt, config)

    if config.fast:
        # Compile every step shape this run needs before any clock starts, so the race times decoding.
        print("fast path: compiling the decode steps for these settings (first use: up to tens of "
              "seconds per new step shape on a CPU)...", file=sys.stderr, flush=True)
        for _ in decode():
            pass
    model = CostModel(("cli", str(pair.device), "", ""))
    speedups = []
    total = max(1, args.repeat) if args.baseline else 1
    if args.baseline:
        print(threads_line(), file=sys.stderr, flush=True)
    for i in range(1, total):              # the earlier races, quietly: a line each on stderr
        print(f"race {i} of {total} on the same prompt and settings ...", file=sys.stderr, flush=True)
        quiet, ends, others = RunStats(config.k), {}, OtherLoad()
        for event in decode():
            quiet.add(event)
            ends.update({event.lane: event} if event.kind == "done" else {})
        lanes = [ends[lane].stats.tally for lane in ("spec", "base")]
        model.add_race(*lanes, tree=config.tree is not None)
        led = ledger.of_race(quiet, None, busy_words(others.share()), lanes)
        speedups.append(led.speedup)
        print(f"race {i} of {total}: {_x(led.speedup)}, {led.verdict}"
              + (f" ({led.uncertain})" if led.uncertain else ""), file=sys.stderr, flush=True)
    if total > 1:
        print(f"race {total} of {total} on the same prompt and settings (printed below) ...", file=sys.stderr,
              flush=True)
    others = OtherLoad()
    events = decode()
    color = not args.no_color and not args.json
    done = {}
    fold = RunStats(config.k)              # each token's time: the like-for-like speedup (measures.compared_speedup)
    for event in events:
        fold.add(event)
        if args.json:
            print(json.dumps(to_dict(event), ensure_ascii=False), flush=True)
        elif event.lane == "spec":
            sys.stdout.write(terminal.render(event, color))
            sys.stdout.flush()
            if args.explain:
                sys.stderr.write(terminal.explanation(event))
        if event.kind == "done":
            done[event.lane] = event
    if not args.json:
        print("\n")
        if color:
            print(terminal.legend())
        print(terminal.summary_line(done["spec"].stats, "speculative" if config.rule == "exact" else
                                    f"speculative ({config.rule} rule)"))
        rows = choice_rows(done["spec"].stats.by_choice)
        if rows:
            print("tree, kept / judged by depth and choice: " + "; ".join(
                f"depth {r.depth} choice {r.choice + 1}: {r.accepted}/{r.judged}" for r in rows))
        if "base" in done:
            print(terminal.summary_line(done["base"].stats, "plain target"))
            spec, base = (done[lane].stats.tally for lane in ("spec", "base"))
            model.add_race(spec, base, tree=config.tree is not None)
            over = fold.compared()[1]
            led = ledger.of_race(fold, model, busy_words(others.share()), (spec, base))   # the page's, the same record
            head = headline(done["spec"], done["base"], config.greedy, fold.compared())   # the page's, word for word
            print(" ".join(x for x in (head.line, head.note) if x))
            rep = repeated(speedups + [led.speedup]) if args.repeat > 1 else None
            if rep is not None:
                print(f"{rep.verdict.capitalize()}: {rep.headline()} {rep.line()}")
            speed = "-" if led.speedup is None else f"{led.speedup:.2f}x"
            print(f"measured speedup: {speed}, {led.verdict} (tokens/s ratio"
                  f"{f', over the first {over} tokens of each: the lengths differ' if over is not None else ''}"
                  f"{', per token: the texts differ' if head.per_token and over is None else ''})")
            lines = ledger.text_lines(led)
            if config.tree is not None:
                # The chain's formula E(a, k) / (k c + v) does not describe a tree's round: keep where the
                # seconds went, and set the tree against the chain of its depth that this machine's
                # measured costs and the tree's own first choices predict.
                lines = lines[1:3] + tree_lines(pair, config, done["spec"].stats, spec, base, model, led.speedup)
            print("\n".join(lines))
    elif "base" in done:
        spec, base = (done[lane].stats.tally for lane in ("spec", "base"))
        model.add_race(spec, base, tree=config.tree is not None)
        led = ledger.of_race(fold, model, busy_words(others.share()), (spec, base))
        print(json.dumps({"kind": "ledger", **led.to_dict()}), flush=True)
        rep = repeated(speedups + [led.speedup]) if args.repeat > 1 else None
        if rep is not None:
            print(json.dumps({"kind": "repeated", "median": rep.median, "low": rep.low, "high": rep.high,
                              "speedups": list(rep.speedups), "verdict": rep.verdict}), flush=True)
    return 0


def _x(speedup: float | None) -> str:
    return "-" if speedup is None else f"{speedup:.2f}x"


def threads_line() -> str:
    """The threads this race decodes with, and the page's where it differs (served on localhost it leaves
    one core to the browser, app/cpu_threads.py), so a CLI figure and a page figure are compared knowingly."""
    import torch
    from ..app.cpu_threads import decode_threads
    mine, page = torch.get_num_threads(), decode_threads("127.0.0.1")
    same = "the same as the page served on localhost" if mine == page else \
        f"the page served on localhost decodes with {page}: --threads {page} to match it"
    return f"decoding threads: {mine} ({same})"


def tree_lines(pair, config, stats, spec, base, model, speedup=None) -> list[str]:
    """The tree as raced against an estimated chain of its depth, the chain priced by the cost model
    (`model`, seeded here with this machine's timing of the chain's rounds: a few seconds), and a pointer
    to the bench, which races a real chain."""
    from ..engine.analysis import calibrate, tree_ledger, tree_price
    depth = len(config.tree)
    model.seed(calibrate.measure_costs(pair, k_max=depth))
    cmp = tree_price.against_model(spec, base, depth, stats.by_choice, model, speedup)    # the ledger's speedup
    return tree_ledger.text_lines(cmp) + [f"  a real chain raced on the same prompts: python -m specviz bench "
                                          f"--tree {','.join(map(str, config.tree))}"]
