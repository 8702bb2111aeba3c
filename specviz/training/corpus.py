"""The training corpus for the bundled pair: the running interpreter's standard-library source.

It is on every machine that runs specviz, so training needs no download. Test folders and
site-packages are left out. A fixed, deterministic set of files (by a hash of the path
relative to the stdlib root, models/stdlib_split.py) is held out for evaluation and never trained on.
"""
from __future__ import annotations

from pathlib import Path

from ..models.stdlib_split import is_heldout, read_source, source_files, stdlib_root


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
