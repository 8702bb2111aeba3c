"""The race traces a visitor can download: written once, served by an opaque token, and pruned.

`save` writes a trace once, into the app's own folder (`<tmp>/specviz-traces`, outside Gradio's
cache, so Gradio's file routes never serve it) as `<time>-<n>-<token>/specviz-trace.json`, and
returns its token: 32 random hex digits that name nothing on the server. The page links to
`specviz/trace/<token>` (view/trace_route.py answers it), so no server path reaches a visitor. Each
save first removes the folder's traces older than MAX_AGE_S and all but the newest `keep - 1`; a
token whose trace is gone, or older than that, finds nothing (the route answers 404: the visitor
runs the race again). Folder names start with their time, so pruning needs no file dates.
"""
from __future__ import annotations

import itertools
import json
import re
import secrets
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

MAX_TRACES = 200          # kept at most (about 40 MB at ~200 KB a trace)
MAX_AGE_S = 3600.0        # a trace's download link lasts this long at most
FILE_NAME = "specviz-trace.json"
TOKEN = re.compile(r"[0-9a-f]{32}")
_lock = threading.Lock()
_count = itertools.count()


def trace_folder() -> Path:
    return Path(tempfile.gettempdir()) / "specviz-traces"


def save(trace: dict, folder: Path | None = None, keep: int = MAX_TRACES, max_age_s: float = MAX_AGE_S,
         now: Callable[[], float] = time.time) -> str:
    """Write `trace` as JSON once, after pruning the folder; returns its token."""
    folder = Path(folder) if folder is not None else trace_folder()
    t = now()
    token = secrets.token_hex(16)
    with _lock:
        prune(folder, keep - 1, max_age_s, t)
        own = folder / f"{int(t * 1e6):020d}-{next(_count):08d}-{token}"
        own.mkdir(parents=True)
    (own / FILE_NAME).write_text(json.dumps(trace, ensure_ascii=False), encoding="utf-8")
    return token


def find(token: str, folder: Path | None = None, max_age_s: float = MAX_AGE_S,
         now: Callable[[], float] = time.time) -> Path | None:
    """The trace file of `token`, or None: no such token (or not a token at all), or older than max_age_s."""
    if not isinstance(token, str) or not TOKEN.fullmatch(token):
        return None
    folder = Path(folder) if folder is not None else trace_folder()
    if not folder.is_dir():
        return None
    for entry in folder.iterdir():
        if entry.name.endswith("-" + token):
            path = entry / FILE_NAME
            return path if now() - _born(entry) <= max_age_s and path.is_file() else None
    return None


def prune(folder: Path, keep: int, max_age_s: float, now: float) -> None:
    """Remove the traces in `folder` older than max_age_s, and all but the `keep` newest."""
    if not folder.is_dir():
        return
    entries = sorted((p for p in folder.iterdir() if p.is_dir()), key=lambda p: p.name, reverse=True)
    for i, entry in enumerate(entries):
        if i >= keep or now - _born(entry) > max_age_s:
            shutil.rmtree(entry, ignore_errors=True)


def _born(entry: Path) -> float:
    head = entry.name.split("-", 1)[0]
    return int(head) / 1e6 if head.isdigit() else 0.0
