"""Where specviz keeps what it fetches: `$SPECVIZ_HOME`, else the user's cache directory.

The user's cache directory follows each platform's convention: `$XDG_CACHE_HOME/specviz`
(default `~/.cache/specviz`) on Linux, `~/Library/Caches/specviz` on macOS and
`%LOCALAPPDATA%\\specviz\\Cache` on Windows. Nothing here creates folders; callers do.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path


def specviz_home() -> Path:
    if os.environ.get("SPECVIZ_HOME"):
        return Path(os.environ["SPECVIZ_HOME"]).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "specviz"
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "specviz" / "Cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "specviz"


def models_dir() -> Path:
    """Fetched models, one folder each, named after the hub id (`owner--name`)."""
    return specviz_home() / "models"


def model_folder(hub_id: str) -> Path:
    return models_dir() / hub_id.replace("/", "--")
