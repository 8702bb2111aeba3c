"""A draft's expect.json: what a pair is measured to do on prompts the project never trained on.

Each shipped draft folder may hold `expect.json`, written by `python scripts/pair_expect.py --write`
(specviz/bench/expect.py measures it): per kind of prompt (chat, code), greedy, at the file's k, the
acceptance rate a = accepted / judged drafts summed over the prompts (the definition of
engine/metrics/measures.py) and, when a quiet machine timed it, the median speedup over those prompts.
The page shows it above the race; the draft gate (scripts/draft_gate.py) writes it when it ships a draft;
its pooled a (`pooled_acceptance`) is the one the k advice assumes where spaces.yaml gives none.

The file names the draft it was measured with: `draft_fingerprint`, 12 hex digits of the SHA-256 over the
folder's weight files (each file's name and sha256, in name order; the same definition as the trainer's
`fingerprint`). A file whose fingerprint is not the folder's weights' describes another draft: `read_expect`
returns None then (and logs why), so stale figures are never shown. The file is a note, not a model file:
integrity.py leaves it out of the sums, so adding a speedup to it never makes the model "damaged".
"""
from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from .integrity import sha256

EXPECT = "expect.json"
KINDS = ("chat", "code")          # the kinds the figures are given for, in the page's order
log = logging.getLogger(__name__)
_fingerprints: dict[str, tuple[tuple, str]] = {}


def draft_fingerprint(folder: str | Path) -> str:
    """12 hex digits of the SHA-256 over a draft folder's weight files ("<name> <sha256>\\n" per
    *.safetensors file, in name order); hashed once per process while the files' sizes and dates stay."""
    folder = Path(folder)
    files = sorted(folder.glob("*.safetensors"))
    stamp = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    known = _fingerprints.get(str(folder))
    if known is not None and known[0] == stamp:
        return known[1]
    lines = "".join(f"{path.name} {sha256(path)}\n" for path in files)
    digest = hashlib.sha256(lines.encode()).hexdigest()[:12]
    _fingerprints[str(folder)] = (stamp, digest)
    return digest


def check_record(record) -> str | None:
    """What is wrong with an expect.json's content, in one line; None when it has the fields the page reads."""
    if not isinstance(record, dict):
        return "it is not a JSON object"
    for name in ("pair", "draft_fingerprint", "k", "kinds"):
        if name not in record:
            return f"it has no {name!r}"
    kinds = record["kinds"]
    if not isinstance(kinds, dict) or not kinds or not set(kinds) <= set(KINDS):
        return f"its 'kinds' must map some of {', '.join(KINDS)} to figures"
    for kind, figures in kinds.items():
        if not isinstance(figures, dict):
            return f"kinds.{kind} is not an object"
        a, speedup = figures.get("acceptance"), figures.get("speedup")
        if not (isinstance(a, (int, float)) and not isinstance(a, bool) and 0 <= a <= 1):
            return f"kinds.{kind}.acceptance must be a number from 0 to 1"
        if speedup is not None and not (isinstance(speedup, (int, float)) and not isinstance(speedup, bool)
                                        and speedup > 0):
            return f"kinds.{kind}.speedup must be a positive number or null"
    return None


def read_expect(folder: str | Path | None) -> dict | None:
    """The expect.json of a draft folder when it describes the weights there; None when the folder has
    none, the file cannot be read, or it was measured with other weights (stale: logged, never shown)."""
    if folder is None:
        return None
    path = Path(folder) / EXPECT
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        log.warning("%s: cannot be read (%s): no figures shown for this pair", path, err.__class__.__name__)
        return None
    problem = check_record(record)
    if problem:
        log.warning("%s: %s: no figures shown for this pair", path, problem)
        return None
    weights = draft_fingerprint(folder)
    if record["draft_fingerprint"] != weights:
        log.warning("%s: measured with the draft %s, but the weights there are %s (stale figures): no figures "
                    "shown for this pair; measure it again with scripts/pair_expect.py --write", path,
                    record["draft_fingerprint"], weights)
        return None
    return record


def write_expect(folder: str | Path, record: dict) -> Path:
    """Write a draft folder's expect.json (whole or not at all)."""
    problem = check_record(record)
    if problem:
        raise ValueError(f"expect.json: {problem}")
    path = Path(folder) / EXPECT
    tmp = path.with_suffix(".json.partial")
    tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def preset_draft_folder(preset) -> Path | None:
    """The folder of a preset's draft on this machine (assets/models/draft for the bundled pair, the
    assets/ folder a preset names); None for a draft that is a hub id."""
    from ..paths import MODELS
    if preset.target is None:
        return MODELS / "draft"
    if preset.draft and Path(preset.draft).is_absolute() and Path(preset.draft).is_dir():
        return Path(preset.draft)
    return None


def pooled_acceptance(record: dict) -> float | None:
    """The record's a over all its kinds: accepted / judged summed over chat and code (the benchmark's
    pooled a, measures.acceptance_rate's definition over the pooled tallies); None where a kind lacks
    its counts or nothing was judged."""
    kinds = record["kinds"].values()
    if not all(isinstance(f.get("accepted"), int) and isinstance(f.get("judged"), int) for f in kinds):
        return None
    judged = sum(f["judged"] for f in kinds)
    return sum(f["accepted"] for f in kinds) / judged if judged > 0 else None


def held_out_acceptance(preset) -> float | None:
    """A preset's draft's pooled a on prompts it never saw, from its expect.json (None: no current file):
    the a the k advice assumes where spaces.yaml gives none (models/presets.py)."""
    record = read_expect(preset_draft_folder(preset))
    return pooled_acceptance(record) if record is not None else None
