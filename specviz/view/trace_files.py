"""The race traces a visitor can download: written once, served by an opaque token, and pruned.

`save` writes a trace once, into the app's own folder (`<tmp>/specviz-traces`, outside Gradio's
cache, so Gradio's file routes never serve it) as `<time>-<n>-<owner>-<token>/specviz-trace.json`,
and returns its token: 32 random hex digits that name nothing on the server. The page links to
`specviz/trace/<token>` (view/trace_route.py answers it), so no server path reaches a visitor.

A link lives its stated hour whatever other visitors do: each save first removes the folder's
traces older than MAX_AGE_S, then the saving client's own oldest beyond PER_CLIENT (a client that
races a hundred times an hour loses its own first links, nobody else's); a trace larger than
trace_read.MAX_BYTES (the largest a race writes) is not kept, and when the folder already holds
`keep` traces or MAX_FOLDER_BYTES, the new race gets no link rather than another's link being cut.
The owner in a folder's name is a hash of the client's key (view/client_address.py), never the
address. A token whose trace is gone, or older than an hour, finds nothing (the route answers 404:
the visitor runs the race again). Folder names start with their time, so pruning needs no file dates.
"""
from __future__ import annotations

import hashlib
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

from .trace_read import MAX_BYTES

MAX_TRACES = 2000         # kept at most: 100 clients racing at their quota for an hour
PER_CLIENT = 20           # one client's traces kept at most (its oldest go first)
MAX_TRACE_BYTES = MAX_BYTES          # the largest trace a race writes, with room (trace_read.py)
MAX_FOLDER_BYTES = 500_000_000       # the folder at most (~2,500 traces of 200 KB)
MAX_AGE_S = 3600.0        # a trace's download link lasts this long
FILE_NAME = "specviz-trace.json"
TOKEN = re.compile(r"[0-9a-f]{32}")
_lock = threading.Lock()
_count = itertools.count()


def trace_folder() -> Path:
    return Path(tempfile.gettempdir()) / "specviz-traces"


def save(trace: dict, folder: Path | None = None, keep: int = MAX_TRACES, max_age_s: float = MAX_AGE_S,
         now: Callable[[], float] = time.time, owner: str | None = "", per_owner: int = PER_CLIENT,
         max_bytes: int = MAX_TRACE_BYTES, folder_bytes: int = MAX_FOLDER_BYTES) -> str | None:
    """Write `trace` as JSON once, after pruning the folder; returns its token, or None when it is not
    kept (larger than any race's, or the folder full of other clients' live links). `owner`: the
    saving client's key."""
    folder = Path(folder) if folder is not None else trace_folder()
    text = json.dumps(trace, ensure_ascii=False)
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        return None
    t = now()
    token = secrets.token_hex(16)
    mine = owner_tag(owner)
    with _lock:
        prune(folder, keep, max_age_s, t)
        entries = _entries(folder)
        own = [e for e in entries if _owner(e) == mine]
        for entry in own[max(0, per_owner - 1):]:            # this client's oldest beyond its quota
            shutil.rmtree(entry, ignore_errors=True)
        left = [e for e in entries if e.exists()]
        if len(left) >= keep or _bytes(left) + len(text) > folder_bytes:
            return None
        place = folder / f"{int(t * 1e6):020d}-{next(_count):08d}-{mine}-{token}"
        place.mkdir(parents=True)
    (place / FILE_NAME).write_text(text, encoding="utf-8")
    return token


def owner_tag(owner: str | None) -> str:
    """16 hex digits naming a client in folder names, without its address."""
    return hashlib.sha256(str(owner or "").encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _owner(entry: Path) -> str:
    parts = entry.name.split("-")
    return parts[2] if len(parts) == 4 else ""


def _entries(folder: Path) -> list[Path]:
    """The folder's traces, newest first."""
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if p.is_dir()), key=lambda p: p.name, reverse=True)


def _bytes(entries: list[Path]) -> int:
    total = 0
    for entry in entries:
        try:
            total += (entry / FILE_NAME).stat().st_size
        except OSError:
            pass
    return total


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
    """Remove the traces in `folder` older than max_age_s (and, past `keep`, the oldest: only a folder
    filled before `keep` was lowered has any)."""
    for i, entry in enumerate(_entries(folder)):
        if i >= keep or now - _born(entry) > max_age_s:
            shutil.rmtree(entry, ignore_errors=True)


def _born(entry: Path) -> float:
    head = entry.name.split("-", 1)[0]
    return int(head) / 1e6 if head.isdigit() else 0.0
