"""The committed store of on-policy data: compact shards that accumulate from sitting to sitting.

A work folder's "full" shard (distill_data.save_shard) keeps the target's top-32 ids and log-probs at
every generated token, ~130 bytes a token, and lives in a local folder that a new sitting does not
have. A compact shard keeps only what cannot be recomputed: the token ids of each prompt and of the
target's continuation (uint16: the 49,152-token vocabulary fits), their lengths, and the provenance
(kind, temperature, how the target's matmuls ran, seeds, the target's id and weights fingerprint,
max_new_tokens, the sitting, machine, creation time, the code). Compressed, ~2 bytes a token, so a
million tokens are a few MB and can be committed. The top-32 distributions come back by teacher
forcing the target over the stored tokens (teacher_forcing.py).

Names are `<sitting>-<index>.npz`: the sitting is a digest of its work folder's prompts.json (which the
data stage writes once, before any shard), so two sittings never share a name, while keeping the same
folder twice gives the same names. The validation split is a hash of that name (about one shard in
VALIDATION_ONE_IN), the same in every sitting and on every machine.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path

import numpy as np

from ..errors import ConfigError

FORMAT = 1
VALIDATION_ONE_IN = 20          # the share of shards held out: a name's hash, not a folder's index
DEFAULT_STORE = Path("data/onpolicy/smollm2")
TOKEN_LIMIT = 1 << 16           # ids must fit in uint16


def sitting_id(work: Path) -> str:
    """10 hex digits of the SHA-256 of the work folder's prompts.json: one id per sitting."""
    prompts = Path(work) / "prompts.json"
    if not prompts.is_file():
        raise ConfigError(f"no prompts.json in {work}: not a work folder of the data stage")
    return hashlib.sha256(prompts.read_bytes()).hexdigest()[:10]


def store_name(sitting: str, index: int) -> str:
    return f"{sitting}-{index:04d}"


def work_index(path: Path) -> int:
    """The index of a work folder's shard (`shard-NNNN.npz`)."""
    return int(Path(path).stem.split("-")[1])


def is_validation(name: str) -> bool:
    """Held out, never trained on: decided by the shard's store name alone, so stable across sittings."""
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % VALIDATION_ONE_IN == 0


def tokens_digest(prompt_lens, gen_lens, prompts, generated) -> str:
    """A digest of a shard's token ids and lengths (the same for its full and compact forms)."""
    digest = hashlib.sha256()
    for part in (prompt_lens, gen_lens, prompts, generated):
        digest.update(np.asarray(part, dtype=np.int64).tobytes())
    return digest.hexdigest()[:16]


def code_version() -> str:
    """The commit of the code that writes a shard (with "+changes" when the checkout is not clean)."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("+changes" if dirty else "")


def compact(full_path: Path, sitting: dict, index: int) -> tuple[str, dict]:
    """(store name, arrays of the compact shard) for a work folder's full shard. `sitting`: the
    sitting's provenance (SittingRecord.as_dict); each shard adds its own kind, temperature,
    precision, seed, lengths and creation time."""
    with np.load(full_path) as z:
        d = {k: z[k] for k in z.files if k not in ("top_ids", "top_logp")}
    for key in ("prompts", "generated"):
        if len(d[key]) and int(d[key].max()) >= TOKEN_LIMIT:
            raise ConfigError(f"{full_path}: token id {int(d[key].max())} does not fit the compact format (uint16)")
    name = store_name(sitting["sitting"], index)
    provenance = dict(sitting, format=FORMAT, name=name, work_shard=Path(full_path).name,
                      kind=str(d["kind"]), temperature=float(d["temperature"]),
                      precision=str(d["precision"]) if "precision" in d else "fp32",
                      # generate_shards seeds shard i with the sitting's seed + i
                      shard_seed=None if sitting.get("seed") is None else sitting["seed"] + index,
                      created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(Path(full_path).stat().st_mtime)),
                      sequences=int(len(d["gen_lens"])), tokens=int(d["gen_lens"].sum()),
                      prompt_tokens=int(d["prompt_lens"].sum()),
                      tokens_sha=tokens_digest(d["prompt_lens"], d["gen_lens"], d["prompts"], d["generated"]))
    arrays = {"prompt_lens": d["prompt_lens"].astype(np.uint32), "gen_lens": d["gen_lens"].astype(np.uint32),
              "prompts": d["prompts"].astype(np.uint16), "generated": d["generated"].astype(np.uint16),
              "provenance": np.array(json.dumps(provenance, sort_keys=True))}
    return name, arrays


def write(store: Path, name: str, arrays: dict) -> Path:
    """Write a compact shard atomically (it appears whole or not at all)."""
    store.mkdir(parents=True, exist_ok=True)
    path = store / f"{name}.npz"
    tmp = store / f"{name}.tmp.npz"
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)
    return path


def read(path: Path) -> dict:
    """A compact shard's arrays (token ids as int64) and its provenance (a dict)."""
    with np.load(path) as z:
        out = {k: z[k].astype(np.int64) for k in ("prompt_lens", "gen_lens", "prompts", "generated")}
        out["provenance"] = json.loads(str(z["provenance"]))
    return out


def provenance(path: Path) -> dict:
    with np.load(path) as z:
        return json.loads(str(z["provenance"]))


def shards(store: Path) -> list[Path]:
    """The store's compact shards, by name."""
    return sorted(p for p in Path(store).glob("*.npz") if not p.name.endswith(".tmp.npz"))


def work_shards(work: Path) -> list[Path]:
    """A work folder's full shards (`onpolicy/shard-NNNN.npz`), by index; a shard being written
    (`shard-NNNN.tmp.npz`, renamed when whole) is not one yet."""
    return sorted(p for p in Path(work, "onpolicy").glob("shard-*.npz") if p.stem.split("-")[1].isdigit())
