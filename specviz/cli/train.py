"""`python -m specviz train-models`: the bundled pair, or the SmolLM2 draft, with the project's own trainer."""
from __future__ import annotations

import time


def add_parser(sub) -> None:
    p = sub.add_parser("train-models", help="train the bundled pair, or the SmolLM2 draft (--pair smollm2)")
    p.add_argument("--pair", default="bundled", choices=["bundled", "smollm2"],
                   help="bundled: target and draft from the Python stdlib source; smollm2: a draft for "
                        "SmolLM2-135M-Instruct (fetched first), distilled on its own outputs")
    p.add_argument("--out", default=None, help="where the models are written "
                   "(default assets/models, or assets/models/smollm2-draft)")
    p.add_argument("--work-dir", default=None, help="checkpoints and data (resume from here; default "
                   ".specviz-train, or .specviz-train/smollm2)")
    p.add_argument("--size", default="bundled", choices=["bundled", "large", "tiny"])
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto")
    p.add_argument("--target-minutes", type=float, default=75.0, help="training time budget for the target")
    p.add_argument("--draft-minutes", type=float, default=25.0, help="distillation time budget for the draft")
    p.add_argument("--max-files", type=int, default=None, help="use only the first N corpus files (quick trials)")
    p.add_argument("--seed", type=int, default=0)
    g = p.add_argument_group("--pair smollm2")
    g.add_argument("--stage", default="all",
                   choices=["all", "data", "train", "keep", "data-status", "features", "train-features"],
                   help="data: prompts and on-policy shards only (each also kept in --keep-dir); train: distil and "
                   "export the plain draft from the shards there and in --keep-dir; keep: copy the work folder's "
                   "shards into --keep-dir, compact (idempotent); data-status: what --keep-dir holds; features: "
                   "the target's hidden states over the shards; "
                   "train-features: the feature draft (EAGLE-style), started from the plain draft")
    g.add_argument("--layers", default="0,1", help="target layers the draft's layers start from, e.g. 0,1")
    g.add_argument("--grow-layers", default=None, metavar="L,L",
                   help="with --continue-from: append layers cut from these target layers, e.g. 2,3; they start "
                        "adding nothing, so training starts from the continued draft")
    g.add_argument("--head-size", type=int, default=8192, help="tokens the draft can propose")
    g.add_argument("--questions", type=int, default=2400, help="self-instruct tries")
    g.add_argument("--passes", default=None, help="temperatures, one data pass each, e.g. 0,0.7,1 "
                   "(default: one pass, temperature drawn per shard)")
    g.add_argument("--gen-batch", type=int, default=64, help="prompts decoded together")
    g.add_argument("--gen-precision", default="fp32", choices=["fp32", "bf16"],
                   help="the target's matmuls while it writes the data: bf16 autocast makes 1.3x the tokens a minute "
                        "on a CPU with AMX (argmax as fp32's at 98%% of positions); fp32 by default")
    g.add_argument("--max-new-tokens", type=int, default=160, help="longest continuation recorded")
    g.add_argument("--gen-minutes", type=float, default=150.0, help="time budget for the on-policy data")
    g.add_argument("--gen-part", default="0/1", metavar="R/N",
                   help="data stage: only the shards whose index is R modulo N, so N processes share one work folder "
                        "(start each with --threads 1: beside other work, one process with two threads loses most of "
                        "its rate waiting for its second thread)")
    g.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's, one per core)")
    g.add_argument("--train-minutes", type=float, default=60.0, help="time budget for distillation")
    g.add_argument("--batch-size", type=int, default=16, help="sequences per training step")
    g.add_argument("--lr", type=float, default=1e-3)
    g.add_argument("--feature-minutes", type=float, default=25.0, help="time budget for the target's hidden states")
    g.add_argument("--draft-steps", type=int, default=2, help="feature draft: draft steps per round unrolled in training")
    g.add_argument("--argmax-weight", type=float, default=0.0,
                   help="plain draft: share of the loss given to the target's argmax alone (0-1; 0: the recorded "
                        "distribution only)")
    g.add_argument("--continue-from", default=None, help="plain draft: distil further the draft exported in this "
                   "folder (its layers, norm and head) instead of starting from the target's layers")
    g.add_argument("--also-work-dir", action="append", default=[], metavar="DIR",
                   help="another work folder (repeatable): the data stage leaves out the prompts it planned, the "
                        "train stage joins its shards to this folder's")
    g.add_argument("--keep-dir", default="data/onpolicy/smollm2", help="the committed store of on-policy data: "
                   "the data stage keeps each shard there, compact (token ids and provenance); the train stage "
                   "restores and trains on all of it; '' for none")
    g.add_argument("--gen-rate", type=float, default=None, help="data-status: tokens a second the data stage makes "
                   "(its log says), for the hours the rest of --goal-tokens takes")
    g.add_argument("--goal-tokens", type=int, default=5_000_000, help="data-status: target-written tokens wanted")
    g.add_argument("--start-from", default="assets/models/smollm2-draft", help="feature draft: the plain draft it starts as")
    p.set_defaults(func=run)


def run(args) -> int:
    import torch
    from transformers.utils import logging as hf_logging

    from ..training.bundle import build_pair

    hf_logging.disable_progress_bar()
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    start = time.monotonic()
    log = lambda line: print(f"[{(time.monotonic() - start) / 60:6.1f} min] {line}", flush=True)  # noqa: E731
    if args.pair == "smollm2":
        return run_smollm2(args, device, log)
    build_pair(args.out or "assets/models", args.work_dir or ".specviz-train", size=args.size, device=device, target_minutes=args.target_minutes,
               draft_minutes=args.draft_minutes, max_files=args.max_files, seed=args.seed,
               log=log)
    return 0


def run_smollm2(args, device: str, log) -> int:
    from pathlib import Path

    from ..errors import ConfigError          # a user's mistake: one line and status 2, as every subcommand
    from ..training.smollm2_draft import DraftRecipe, extract_features, keep, prepare_data, train, train_features

    recipe = DraftRecipe(layers=[int(x) for x in args.layers.split(",")], head_size=args.head_size,
                         questions=args.questions,
                         passes=None if args.passes is None else [float(x) for x in args.passes.split(",")],
                         gen_batch=args.gen_batch, max_new_tokens=args.max_new_tokens, gen_precision=args.gen_precision, gen_minutes=args.gen_minutes, train_minutes=args.train_minutes,
                         batch_size=args.batch_size, lr=args.lr, seed=args.seed,
                         feature_minutes=args.feature_minutes, draft_steps=args.draft_steps,
                         argmax_weight=args.argmax_weight,
                         grow_layers=layer_list("--grow-layers", args.grow_layers))
    if recipe.grow_layers and (args.continue_from is None or args.stage not in ("all", "train")):
        raise ConfigError("--grow-layers adds layers to the draft given by --continue-from, in the train stage")
    if not 0 <= recipe.argmax_weight <= 1:
        raise ConfigError(f"--argmax-weight must be between 0 and 1, not {recipe.argmax_weight:g}")
    if args.also_work_dir and args.stage in ("features", "train-features"):
        raise ConfigError("--also-work-dir joins folders for the data and train stages; the feature draft reads "
                          "one folder")
    work, others = Path(args.work_dir or ".specviz-train/smollm2"), [Path(d) for d in args.also_work_dir]
    part = gen_part(args.gen_part)
    if args.threads is not None:
        if args.threads < 1:
            raise ConfigError(f"--threads must be at least 1, not {args.threads}")
        import torch
        torch.set_num_threads(args.threads)
    store = Path(args.keep_dir) if args.keep_dir else None
    if args.stage in ("keep", "data-status"):
        return store_stage(args, work, store, recipe)
    work.mkdir(parents=True, exist_ok=True)
    if args.stage in ("all", "data"):
        prepare_data(work, recipe, device, log, others=others, store=store, part=part)
    if args.stage in ("all", "train"):
        train(Path(args.out or "assets/models/smollm2-draft"), work, recipe, device, log,
              continue_from=None if args.continue_from is None else Path(args.continue_from),
              others=others, store=store)
    if args.stage == "features":
        extract_features(work, recipe, device, log)
    if args.stage == "train-features":
        train_features(Path(args.out or "assets/models/smollm2-feature-draft"), Path(args.start_from), work, recipe,
                       device, log)
    return 0


def layer_list(flag: str, text: str | None) -> list[int]:
    """'2,3' -> [2, 3]; None or '' -> []; anything else is the user's mistake, said in one line."""
    from ..errors import ConfigError
    try:
        return [int(x) for x in text.split(",")] if text else []
    except ValueError:
        raise ConfigError(f"{flag} takes layer numbers separated by commas, e.g. 2,3, not {text!r}") from None


def store_stage(args, work, store, recipe) -> int:
    """--stage keep (a work folder's shards into the store) and --stage data-status (what the store holds):
    neither loads a model."""
    from ..errors import ConfigError
    from ..training.accumulate import status
    from ..training.shard_store import work_shards
    from ..training.smollm2_draft import keep

    if store is None:
        raise ConfigError(f"--stage {args.stage} needs a store: give --keep-dir DIR")
    if args.stage == "data-status":
        if args.gen_rate is not None and args.gen_rate <= 0:
            raise ConfigError(f"--gen-rate must be a positive number of tokens a second, not {args.gen_rate:g}")
        print(status(store, args.goal_tokens, args.gen_rate))
        return 0
    if not work_shards(work):
        raise ConfigError(f"--work-dir {work}: no on-policy shards there (onpolicy/shard-NNNN.npz) to keep")
    keep(work, store, recipe, lambda line: print(line, flush=True))
    print(status(store, args.goal_tokens, args.gen_rate))
    return 0


def gen_part(text: str) -> tuple[int, int]:
    """--gen-part "R/N" as (R, N), 0 <= R < N; a malformed one is the user's mistake (one line)."""
    from ..errors import ConfigError

    try:
        r, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ConfigError(f"--gen-part takes R/N, e.g. 0/2, not {text!r}") from None
    if not 0 <= r < n:
        raise ConfigError(f"--gen-part {text}: R must be at least 0 and below N")
    return r, n
