"""Command line: `python -m specviz run|bench|train-models|fetch|export-draft|remote ...`. One module per subcommand in this package.

User errors (bad settings, missing models) print one line and exit with status 2;
argparse's own errors do the same; Ctrl-C exits with 130, never a traceback.
"""
from __future__ import annotations

import argparse
import sys

from . import bench as cli_bench
from . import export_draft as cli_export_draft
from . import fetch as cli_fetch
from . import remote as cli_remote
from . import run as cli_run
from . import train as cli_train


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m specviz", description="Speculative decoding, visualized.")
    sub = parser.add_subparsers(dest="command", required=True)
    cli_run.add_parser(sub)
    cli_bench.add_parser(sub)
    cli_train.add_parser(sub)
    cli_fetch.add_parser(sub)
    cli_export_draft.add_parser(sub)
    cli_remote.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from transformers.utils import logging as hf_logging

    from ..errors import SpecvizError
    hf_logging.disable_progress_bar()
    try:
        return args.func(args)
    except SpecvizError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
