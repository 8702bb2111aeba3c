"""`python -m specviz train-models`: build the bundled pair with the project's own trainer."""
from __future__ import annotations

import argparse
import time


def add_parser(sub) -> None:
    p = sub.add_parser("train-models", help="train the bundled target/draft pair from the Python stdlib source")
    p.add_argument("--out", default="assets/models", help="where target/ and draft/ are written")
    p.add_argument("--work-dir", default=".specviz-train", help="checkpoints and token cache (resume from here)")
    p.add_argument("--size", default="bundled", choices=["bundled", "large", "tiny"])
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto")
    p.add_argument("--target-minutes", type=float, default=75.0, help="training time budget for the target")
    p.add_argument("--draft-minutes", type=float, default=25.0, help="distillation time budget for the draft")
    p.add_argument("--max-files", type=int, default=None, help="use only the first N corpus files (quick trials)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)


def run(args) -> int:
    import torch
    from transformers.utils import logging as hf_logging

    from .models.bundle import build_pair

    hf_logging.disable_progress_bar()
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    start = time.monotonic()
    build_pair(args.out, args.work_dir, size=args.size, device=device, target_minutes=args.target_minutes,
               draft_minutes=args.draft_minutes, max_files=args.max_files, seed=args.seed,
               log=lambda line: print(f"[{(time.monotonic() - start) / 60:6.1f} min] {line}", flush=True))
    return 0
