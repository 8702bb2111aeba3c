"""Command line: `python -m specviz run|bench|train-models ...`. Subcommands live in cli_*.py."""
from __future__ import annotations

import argparse
import sys

from . import cli_train


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m specviz", description="Speculative decoding, visualized.")
    sub = parser.add_subparsers(dest="command", required=True)
    cli_train.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)
