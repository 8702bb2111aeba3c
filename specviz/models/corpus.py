"""The training corpus for the bundled pair: the running interpreter's standard-library source.

It is on every machine that runs specviz, so training needs no download. Test folders and
site-packages are left out. A fixed, deterministic set of files (by a hash of the path
relative to the stdlib root) is held out for evaluation and never trained on.
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


def split_corpus(root: Path | None = None, max_files: int | None = None) -> tuple[list[str], list[str]]:
    """(train texts, held-out texts). max_files keeps the first N of each split (for tests)."""
    root = root or stdlib_root()
    train, heldout = [], []
    for path in source_files(root):
        text = read_source(path)
        if not text or not text.strip():
            continue
        (heldout if is_heldout(path.relative_to(root).as_posix()) else train).append(text)
    if max_files is not None:
        train, heldout = train[:max_files], heldout[: max(1, max_files // 4)]
    return train, heldout
