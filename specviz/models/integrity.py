"""Model files checked against the sha256 sums recorded when they were made.

A safetensors file with flipped bytes loads silently (the format checks its header, not its numbers),
so a damaged copy would race with wrong weights. Two records are checked before a folder is loaded:

- the shipped models: `assets/models/SHA256SUMS` (sha256sum's format, `<hex>  <folder>/<file>`), written by
  `write_manifest` (`python -m specviz.models.integrity` after retraining) over every file of each model
  folder except notes (*.md, training.json, expect.json: the measured figures, models/expect.py); any folder with a SHA256SUMS beside it is checked the same way;
- a fetched model: the sums fetch.py records in the folder's specviz-source.json when it converts it
  (`sha256`); a folder fetched before this existed has none and loads unchecked.

A mismatch or a missing file is a one-line LoadError naming the model and the file, not the server's
path. A folder is hashed once per process (while its files' sizes and dates stay the same).
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from ..errors import LoadError

MANIFEST = "SHA256SUMS"
# notes (expect.json: figures a quiet machine may add to later), and the fetch marker that holds the sums
NOTES = {"README.md", "training.json", "expect.json", "specviz-source.json"}
_verified: dict[str, tuple] = {}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def model_files(folder: Path) -> list[Path]:
    """The files a model folder's sums cover: all but notes."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name not in NOTES and p.suffix != ".md")


def sums_of(folder: Path) -> dict[str, str]:
    """file name -> sha256, for each file of a model folder."""
    return {p.name: sha256(p) for p in model_files(folder)}


def write_manifest(root: Path) -> Path:
    """Write root/SHA256SUMS over every model folder (a folder with a config.json) under root."""
    lines = [f"{digest}  {folder.name}/{name}"
             for folder in sorted(p for p in root.iterdir() if (p / "config.json").is_file())
             for name, digest in sums_of(folder).items()]
    out = root / MANIFEST
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def recorded(folder: Path, marker: str = "specviz-source.json") -> dict[str, str] | None:
    """The sums recorded for `folder`: from a SHA256SUMS beside it, or its fetch marker; None if none."""
    manifest = folder.parent / MANIFEST
    if manifest.is_file():
        sums = {}
        for line in manifest.read_text(encoding="utf-8").splitlines():
            digest, _, rel = line.partition("  ")
            where, _, name = rel.partition("/")
            if where == folder.name and name:
                sums[name] = digest
        if sums:
            return sums
    if (folder / marker).is_file():
        try:
            sums = json.loads((folder / marker).read_text(encoding="utf-8")).get("files_sha256")
        except (OSError, ValueError, AttributeError):
            return None
        # A marker written before fetch recorded the files' sums has only the wheel's "sha256": unchecked.
        return sums if isinstance(sums, dict) and sums else None
    return None


def verify(folder: str | Path, name: str) -> None:
    """Refuse `folder` (the model known as `name`) if a file differs from its recorded sum."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    sums = recorded(folder)
    if not sums:
        return
    stamp = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in model_files(folder))
    if _verified.get(str(folder)) == stamp:
        return
    for file, digest in sums.items():
        path = folder / file
        if not path.is_file():
            raise LoadError(f"the model {name} is incomplete: its file {file} is missing")
        if sha256(path) != digest:
            raise LoadError(f"the model {name} is damaged: its file {file} does not match the sha256 recorded "
                            f"for it (restore the file, or fetch or train the model again)")
    _verified[str(folder)] = stamp


if __name__ == "__main__":       # python -m specviz.models.integrity [root]: rewrite the shipped models' sums
    from ..paths import MODELS
    print(write_manifest(Path(sys.argv[1]) if len(sys.argv) > 1 else MODELS))
