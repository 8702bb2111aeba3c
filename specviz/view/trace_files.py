"""The race traces a visitor can download: written once, where Gradio serves them from, and pruned.

`gr.DownloadButton(value=path)` copies a file that lies outside Gradio's cache folder into that
folder before serving it, so a trace written to a temporary folder was on disk twice (~200 KB each
race) and nothing ever removed either copy (issue 27). `save` writes each trace once, into the app's
own folder inside Gradio's cache (GRADIO_TEMP_DIR, else <tmp>/gradio; see `gradio.utils.get_upload_folder`),
`specviz-traces/<time>-<n>-<random>/specviz-trace.json`, which Gradio serves as it is; each save first
removes that folder's traces older than MAX_AGE_S and all but the newest `keep - 1`. A download link
older than that answers 404: the visitor runs the race again. Folder names start with their time, so
pruning needs no file dates.
"""
from __future__ import annotations

import itertools
import json
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import Callable

MAX_TRACES = 200          # kept at most (about 40 MB at ~200 KB a trace)
MAX_AGE_S = 3600.0        # a trace's download link lasts this long at most
FILE_NAME = "specviz-trace.json"
_lock = threading.Lock()
_count = itertools.count()


def trace_folder() -> Path:
    from gradio.utils import get_upload_folder      # Gradio's cache folder: served without a copy
    return Path(get_upload_folder()) / "specviz-traces"


def save(trace: dict, folder: Path | None = None, keep: int = MAX_TRACES, max_age_s: float = MAX_AGE_S,
         now: Callable[[], float] = time.time) -> str:
    """Write `trace` as JSON once, after pruning the folder; returns the file's path."""
    folder = Path(folder) if folder is not None else trace_folder()
    t = now()
    with _lock:
        prune(folder, keep - 1, max_age_s, t)
        own = folder / f"{int(t * 1e6):020d}-{next(_count):08d}-{uuid.uuid4().hex[:12]}"
        own.mkdir(parents=True)
    path = own / FILE_NAME
    path.write_text(json.dumps(trace, ensure_ascii=False), encoding="utf-8")
    return str(path)


def prune(folder: Path, keep: int, max_age_s: float, now: float) -> None:
    """Remove the traces in `folder` older than max_age_s, and all but the `keep` newest."""
    if not folder.is_dir():
        return
    entries = sorted((p for p in folder.iterdir() if p.is_dir()), key=lambda p: p.name, reverse=True)
    for i, entry in enumerate(entries):
        born = int(entry.name.split("-", 1)[0]) / 1e6 if entry.name.split("-", 1)[0].isdigit() else 0.0
        if i >= keep or now - born > max_age_s:
            shutil.rmtree(entry, ignore_errors=True)
