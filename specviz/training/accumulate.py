"""The store's stages: keep a sitting's shards, train on everything kept, say what the store holds.

- keep: each full shard of a work folder goes into the store as a compact shard (shard_store.py),
  with the sitting's provenance (work/sitting.json, written by the data stage; for a folder made
  before that, from the keep stage's own arguments, and the provenance says so). Idempotent: a
  shard whose tokens are already in the store is skipped; a different shard under a taken name stops
  the run.
- gather: the training data of the train stage: the store's shards and the work folders' full
  shards, one entry per store name (a work folder's shard-0007 is `<its sitting>-0007`), the store's
  shards that no work folder has restored by teacher forcing into work/restored/ (once); split into
  training and validation by the name's hash.
- status: shards, sequences and tokens by kind x temperature, and the hours the rest of a goal takes
  at a given rate.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable

from ..errors import ConfigError
from . import shard_store
from .shard_store import is_validation, sitting_id, store_name, work_index


def weights_fingerprint(folder: Path | None) -> str:
    """12 hex digits over the target's weight files' sha256 (from the sums fetch recorded, else hashed)."""
    from ..models.integrity import sha256
    if folder is None:
        return "unknown (target not fetched here)"
    folder = Path(folder)
    source = folder / "specviz-source.json"
    sums = json.loads(source.read_text()).get("files_sha256", {}) if source.is_file() else {}
    files = sorted(p.name for p in folder.glob("*.safetensors"))
    lines = "".join(f"{name} {sums.get(name) or sha256(folder / name)}\n" for name in files)
    return hashlib.sha256(lines.encode()).hexdigest()[:12]


def machine() -> str:
    """The CPU's model name and core count (Linux's /proc/cpuinfo; elsewhere platform's words)."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} cores"


def sitting_record(work: Path, settings: dict, target_id: str, target_folder: Path | None,
                   device: str | None, from_data_stage: bool) -> dict:
    """The sitting's provenance, kept in work/sitting.json once written (the data stage writes it at its
    start; a keep of an older folder writes it from its own arguments, and says so)."""
    path = Path(work) / "sitting.json"
    if path.is_file():
        return json.loads(path.read_text())
    record = {"sitting": sitting_id(work), "work_dir": Path(work).resolve().name,
              "seed": settings.get("seed"), "max_new_tokens": settings.get("max_new_tokens"),
              "gen_batch": settings.get("gen_batch"), "passes": settings.get("passes"),
              "target": target_id, "target_weights": weights_fingerprint(target_folder),
              "machine": machine(), "device": device or "unknown",
              "code": shard_store.code_version(),
              "settings_from": "the data stage" if from_data_stage else "the keep stage's arguments (not recorded "
                               "by the data stage that wrote the shards)",
              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(path)
    return record


class Keeper:
    """Writes a sitting's full shards into the store as compact ones, each once."""

    def __init__(self, store: Path, sitting: dict):
        self.store, self.sitting = Path(store), sitting
        self.digests = {shard_store.provenance(p)["tokens_sha"]: p.stem for p in shard_store.shards(self.store)}

    def keep(self, full_path: Path) -> str | None:
        """The store name written, or None when the shard's tokens were there already."""
        name, arrays = shard_store.compact(full_path, self.sitting, work_index(full_path))
        digest = json.loads(str(arrays["provenance"]))["tokens_sha"]
        if digest in self.digests:
            return None
        there = self.store / f"{name}.npz"
        if there.exists() and shard_store.provenance(there)["tokens_sha"] == digest:
            self.digests[digest] = name      # kept meanwhile by another process of the same sitting
            return None
        if there.exists():
            raise ConfigError(f"{self.store / name}.npz holds other tokens than {full_path}: not overwritten "
                               f"(two sittings with one prompts.json but other settings?)")
        shard_store.write(self.store, name, arrays)
        self.digests[digest] = name
        return name


def keep_folder(work: Path, store: Path, sitting: dict, log: Callable[[str], None]) -> dict:
    """Keep every full shard of `work` (stage keep); returns {"kept": n, "already": m}."""
    keeper = Keeper(store, sitting)
    kept = already = 0
    for path in shard_store.work_shards(work):
        if keeper.keep(path) is None:
            already += 1
        else:
            kept += 1
    log(f"keep: {kept} shards of {work} written to {store}, {already} there already")
    return {"kept": kept, "already": already}


def gather(folders: list[Path], store: Path | None, model, log: Callable[[str], None],
           restore_dir: Path) -> tuple[list[Path], list[Path], dict]:
    """(training full shards, validation full shards, what the store gave) from the work folders and the store."""
    from .teacher_forcing import restore_file

    entries: dict[str, Path] = {}
    for folder in folders:
        paths = shard_store.work_shards(folder)
        names = sitting_id(folder) if paths else ""          # a fresh folder may train on the store alone
        for path in paths:
            entries.setdefault(store_name(names, work_index(path)), path)
    kept = shard_store.shards(store) if store is not None else []
    used = {"dir": str(store) if store is not None else None, "shards": len(kept), "restored": 0,
            "train_shards": 0, "validation_shards": 0, "train_tokens": 0, "validation_tokens": 0, "sittings": []}
    sittings = set()
    for path in kept:
        prov = shard_store.provenance(path)
        sittings.add(prov["sitting"])
        part = "validation" if is_validation(path.stem) else "train"
        used[f"{part}_shards"] += 1
        used[f"{part}_tokens"] += prov["tokens"]
        if path.stem in entries:
            continue
        out = restore_dir / f"{path.stem}.npz"
        if not out.exists():
            t0 = time.monotonic()
            check = restore_file(path, model, out)
            said = f", greedy tokens that are its argmax: {check['argmax_matches']}/{check['positions']}" \
                if check["greedy"] else ""
            log(f"restored {path.name} by teacher forcing ({check['positions']} tokens, "
                f"{time.monotonic() - t0:.0f} s{said})")
        entries[path.stem] = out
        used["restored"] += 1
    used["sittings"] = sorted(sittings)
    # which set of store shards was read (a checkpoint resumes only on the same set)
    used["set_sha"] = hashlib.sha256("\n".join(p.stem for p in kept).encode()).hexdigest()[:8]
    train = [p for name, p in sorted(entries.items()) if not is_validation(name)]
    val = [p for name, p in sorted(entries.items()) if is_validation(name)]
    return train, val, used


def tally(store: Path) -> dict:
    """What the store holds: totals, by (kind, temperature), by sitting, and the validation share."""
    by_kind = defaultdict(lambda: {"shards": 0, "sequences": 0, "tokens": 0})
    by_sitting = defaultdict(lambda: {"shards": 0, "tokens": 0, "work_dir": "", "machine": "", "precision": set()})
    totals = {"shards": 0, "sequences": 0, "tokens": 0, "validation_tokens": 0, "bytes": 0}
    for path in shard_store.shards(store):
        prov = shard_store.provenance(path)
        cell = by_kind[(prov["kind"], prov["temperature"])]
        for row in (cell, totals):
            row["shards"] += 1
            row["sequences"] += prov["sequences"]
            row["tokens"] += prov["tokens"]
        totals["validation_tokens"] += prov["tokens"] if is_validation(path.stem) else 0
        totals["bytes"] += path.stat().st_size
        s = by_sitting[prov["sitting"]]
        s["shards"] += 1
        s["tokens"] += prov["tokens"]
        s["work_dir"], s["machine"] = prov.get("work_dir", ""), prov.get("machine", "")
        s["precision"].add(prov["precision"])
    return {"totals": totals, "by_kind": dict(by_kind), "by_sitting": dict(by_sitting)}


def status(store: Path, goal_tokens: int, rate: float | None) -> str:
    """The store's holdings as text, and the hours the rest of `goal_tokens` takes at `rate` tokens/s."""
    t = tally(store)
    totals = t["totals"]
    lines = [f"store {store}: {totals['shards']} shards, {totals['sequences']:,} sequences, "
             f"{totals['tokens']:,} target-written tokens ({totals['validation_tokens']:,} held out), "
             f"{totals['bytes'] / 1e6:.1f} MB"]
    if totals["tokens"]:
        lines.append(f"  {'kind':<6} {'T':>4} {'shards':>7} {'sequences':>10} {'tokens':>11}")
        for (kind, temperature), cell in sorted(t["by_kind"].items()):
            lines.append(f"  {kind:<6} {temperature:>4g} {cell['shards']:>7} {cell['sequences']:>10,} "
                         f"{cell['tokens']:>11,}")
        for sitting, s in sorted(t["by_sitting"].items()):
            lines.append(f"  sitting {sitting} ({s['work_dir']}, {s['machine']}, {'/'.join(sorted(s['precision']))}): "
                         f"{s['shards']} shards, {s['tokens']:,} tokens")
    rest = max(0, goal_tokens - totals["tokens"])
    if not rest:
        lines.append(f"goal of {goal_tokens:,} tokens reached")
    elif rate:
        lines.append(f"{rest:,} tokens to the goal of {goal_tokens:,}: {rest / rate / 3600:.1f} hours at {rate:g} tokens/s")
    else:
        lines.append(f"{rest:,} tokens to the goal of {goal_tokens:,} (give --gen-rate TOKENS_PER_S for the hours)")
    return "\n".join(lines)


def store_summary_line(used: dict) -> str:
    """The model card's line on the store's shards (from gather's summary)."""
    if not used or not used.get("shards"):
        return ""
    sittings = used["sittings"]
    return (f"- from the committed store `{used['dir']}`: {used['train_shards']} training shards "
            f"({used['train_tokens']:,} tokens) and {used['validation_shards']} held out "
            f"({used['validation_tokens']:,} tokens), from {len(sittings)} sitting{'s' if len(sittings) != 1 else ''} "
            f"({', '.join(sittings)}); {used['restored']} restored by teacher forcing the fp32 target;\n")


def stored_prompts(store: Path | None) -> set[tuple[int, ...]]:
    """The prompts the store holds, as token ids (the data stage leaves their texts out of a new mix)."""
    from .teacher_forcing import split

    found: set[tuple[int, ...]] = set()
    for path in shard_store.shards(store) if store is not None else []:
        c = shard_store.read(path)
        found |= {tuple(p) for p in split(c["prompts"], c["prompt_lens"])}
    return found
