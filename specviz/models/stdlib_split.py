"""Which standard-library files the bundled pair trained on and which it never saw (held out).

The split is a property of the bundled models: training (training/corpus.py) reads the training
side, and the benchmark (bench/prompts.py) cuts its code prompts from the held-out side, so it
measures on text the models never trained on. Stable across runs and machines (a hash of the path).
"""
from __future__ import annotations

import hashlib
import sysconfig
from pathlib import Path

# One file in HELDOUT_MODULUS goes to the held-out split (about 2.5%).
HELDOUT_MODULUS = 40
SKIPPED_DIRS = {"site-packages", "test", "tests", "idle_test", "__pycache__", "dist-packages"}


def stdlib_root() -> Path:
    """The folder holding the running interpreter's standard library source."""
    return Path(sysconfig.get_paths()["stdlib"])


def is_heldout(relative_path: str) -> bool:
    """True for the files reserved for evaluation; stable across runs and machines."""
    digest = hashlib.sha1(relative_path.encode("utf-8")).hexdigest()
    return int(digest, 16) % HELDOUT_MODULUS == 0


def source_files(root: Path | None = None) -> list[Path]:
    """All .py files under root, sorted, skipping test folders and installed packages."""
    root = root or stdlib_root()
    files = []
    for path in sorted(root.rglob("*.py")):
        if SKIPPED_DIRS.intersection(path.relative_to(root).parts[:-1]):
            continue
        files.append(path)
    return files


def read_source(path: Path) -> str | None:
    """The file's text, or None when it is not UTF-8 (a handful of legacy files)."""
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
