"""`python -m specviz bench`: the side-by-side benchmark (see specviz/bench/)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from ..engine.loop.drafters import DEFAULT_DRAFTER, DRAFTERS
from ..paths import BENCHMARKS
from .run import add_confidence_stop_arg, add_model_args, add_rule_arg, apply_preset

HELDOUT_CHAT_PROMPTS = str(BENCHMARKS / "heldout-prompts.json")


def add_parser(sub) -> None:
    p = sub.add_parser("bench", help="benchmark specviz against plain decoding and transformers, in one process")
    add_model_args(p)
    p.add_argument("--prompts", default=None, help="a .json list of strings or {kind, text, chat} objects, or a "
                   "text file with the prompts separated by lines holding only --- (default: the built-in set; "
                   "with a chat preset, benchmarks/heldout-prompts.json)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--k", type=int, default=None, help="drafts per round (default 4, or the preset's)")
    group.add_argument("--k-sweep", action="store_true", help="k = 1..8, speculative vs plain only")
    group.add_argument("--tree", default=None, metavar="W1,W2,...",
                       help="race a token tree of these candidates per depth against the chain of its depth "
                            "and plain decoding (e.g. 2,2,1,1)")
    p.add_argument("--tree-budget", type=int, default=0, metavar="N",
                   help="with --tree: at most N nodes, given to the nodes the draft is surest of (EAGLE-2)")
    add_confidence_stop_arg(p)
    add_rule_arg(p)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3, help="timed repeats per prompt and method (median kept)")
    p.add_argument("--drafter", choices=list(DRAFTERS), default=DEFAULT_DRAFTER)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--forced-acceptance", type=float, default=None,
                   help="BENCHMARK ONLY, NOT LOSSLESS: accept drafts with this probability (random-weight models)")
    p.add_argument("--random-pair", default=None, choices=["qwen2.5-0.5b:7b", "tiny"],
                   help="random-weight models of these shapes instead of --target/--draft (needs --forced-acceptance)")
    p.add_argument("--fast", action="store_true",
                   help="also time the fast path (static KV cache + torch.compile; CUDA graphs on CUDA)")
    p.add_argument("--hf-assistant", default=None, help="a plain draft (folder or hub id) for transformers' assisted "
                   "generation, when --draft reads the target's hidden states (generate() cannot run that one)")
    p.add_argument("--json", action="store_true", help="print the result as JSON instead of the table")
    p.add_argument("--out", default=None, help="also write the JSON result to this file")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..bench.prompts import load_prompts
    from ..bench.report import table
    from ..bench.suite import run_suite
    from ..engine.loop.config import SpecConfig
    from ..errors import ConfigError

    if args.repeats < 1:
        raise ConfigError("--repeats must be at least 1")
    if not args.random_pair:
        apply_preset(args)                 # --preset fills --target, --draft, --k, --confidence-stop and --chat
    if args.confidence_stop is None:       # --random-pair: no preset
        args.confidence_stop = 0.0
    if args.tree:
        args.confidence_stop = 0.0         # a tree drafts its full shape: the chain it races does the same
    from ..engine.loop.config import parse_tree
    tree = parse_tree(args.tree) if args.tree else None
    if tree is not None:
        args.k = len(tree)
        SpecConfig(tree=tree, tree_budget=args.tree_budget, temperature=args.temperature, drafter=args.drafter,
                   forced_acceptance=args.forced_acceptance, rule=args.rule)   # refuse a bad tree before loading
    ks = list(range(1, 9)) if args.k_sweep else [4 if args.k is None else args.k]   # --k 0 is refused, not 4
    cfg = SpecConfig(k=ks[0], temperature=args.temperature, max_new_tokens=args.max_new_tokens, seed=args.seed,
                     drafter=args.drafter, forced_acceptance=args.forced_acceptance,
                     confidence_stop=args.confidence_stop, rule=args.rule)
    # the file is read (and a bad one refused) before any model loads
    prompts = load_prompts(args.prompts or (HELDOUT_CHAT_PROMPTS if args.chat else None), chat=args.chat)
    if args.random_pair:
        if args.forced_acceptance is None:
            raise ConfigError("--random-pair needs --forced-acceptance: random weights accept nothing by themselves")
        from ..bench.random_pair import random_pair
        pair = random_pair(args.random_pair, args.device)
    else:
        from .run import pair_from
        pair = pair_from(args)
    assistant = None
    if args.hf_assistant:
        from ..models.loading import load_draft_for
        assistant = load_draft_for(pair, args.hf_assistant)
    log = (lambda line: None) if args.json else print
    if tree is not None:
        from ..bench.tree_bench import run_tree_bench, tree_table
        result = run_tree_bench(pair, prompts, replace(cfg, tree_budget=args.tree_budget), tree, args.repeats, log=log)
        render = tree_table
    else:
        result = run_suite(pair, prompts, cfg, ks, args.repeats, log=log, fast=args.fast, hf_assistant=assistant)
        render = table
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1) if args.json else "\n" + render(result))
    return 0
