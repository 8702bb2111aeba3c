"""The draft gate: a new draft ships only if it beats the current one on prompts neither trained on.

Both drafts are measured in one process on the same prompts (bench/expect.py: greedy, pooled acceptance
per kind). The candidate passes only if

    a_chat(candidate) > a_chat(current) beyond the noise    and    a_code(candidate) >= a_code(current)

(a pair with no chat figure, such as the bundled Python model, needs a_code higher beyond the noise: a
draft that changes nothing is not shipped). "Beyond the noise": the gain is at least Z_MIN standard
errors of a difference of two proportions, sqrt(p (1 - p) (1/n_candidate + 1/n_current)) with p the
pooled acceptance and n the judged drafts. The judged drafts of one prompt are not independent, so this
is a floor under the noise, not a full test: with ~500 judged drafts a kind, a gain under about 0.05 is
not enough. Before any model loads, the gate leaves out every gate prompt whose text is among the
candidate's training prompts (a training work folder's prompts.json and questions.json, the committed
store's prompts, when given): a figure there would be a memory, not a prediction. Each one left out is
named, and the gate refuses when a kind would keep fewer than half its prompts. Shipping (`ship`) replaces the current draft's
folder with the candidate's files, writes its expect.json and, where a SHA256SUMS beside the folder
lists it, that folder's lines of the sums.
"""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

from ..models import integrity
from .draft_prompts import normal_text
from ..models.expect import KINDS, write_expect

Z_MIN = 1.645     # one-sided 95% for a difference of two proportions


def training_prompts(work_dir: str | Path) -> list[str]:
    """The prompt texts a training work folder planned: prompts.json ([kind, text] pairs, texts, or
    {"text"} objects) and questions.json (the self-instruct requests), where present."""
    folder = Path(work_dir)
    found = [folder / name for name in ("prompts.json", "questions.json") if (folder / name).is_file()]
    if not found:
        raise FileNotFoundError(f"--work-dir {folder}: no prompts.json or questions.json there")
    texts = []
    for path in found:
        for item in json.loads(path.read_text(encoding="utf-8")):
            if isinstance(item, str):
                texts.append(item)
            elif isinstance(item, (list, tuple)) and item and isinstance(item[-1], str):
                texts.append(item[-1])
            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                texts.append(item["text"])
    return texts


def overlaps(prompts: list[dict], trained: list[str]) -> list[str]:
    """The gate prompts whose text (whitespace and case aside) is, or is inside, a training prompt."""
    seen = [normal_text(t) for t in trained]
    return [p["text"] for p in prompts if any(normal_text(p["text"]) in t for t in seen)]


def store_prompts(store: str | Path, decode) -> list[str]:
    """The prompt texts of the committed store's shards (shard_store.py), decoded with `decode` (the
    target's tokenizer.decode): what a candidate trained on the store saw, whichever sitting wrote it."""
    from ..training import shard_store
    texts = []
    for path in shard_store.shards(Path(store)):
        shard = shard_store.read(path)
        start = 0
        for n in shard["prompt_lens"].tolist():
            texts.append(decode(shard["prompts"][start:start + n].tolist()))
            start += n
    return texts


def untrained(prompts: list[dict], trained: list[str]) -> tuple[list[dict], list[str], str | None]:
    """(the prompts the candidate never trained on, the texts left out, why the gate refuses or None).
    It refuses when a kind keeps fewer than half of its prompts: the rest would not speak for the kind."""
    found = set(overlaps(prompts, trained))
    kept = [p for p in prompts if p["text"] not in found]
    for kind in sorted({p.get("kind") for p in prompts}):
        before = sum(p.get("kind") == kind for p in prompts)
        after = sum(p.get("kind") == kind for p in kept)
        if 2 * after < before:
            return kept, sorted(found), f"only {after} of the {before} {kind} prompts were never trained on"
    return kept, sorted(found), None


def gain_z(new: dict, old: dict) -> float:
    """The candidate's gain in acceptance over the current draft's, in standard errors of the difference
    of two proportions (pooled p over both drafts' judged drafts); 0 when nothing was judged."""
    n1, n2 = new["judged"], old["judged"]
    pooled = (new["accepted"] + old["accepted"]) / max(1, n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / max(1, n1) + 1 / max(1, n2)))
    return (new["acceptance"] - old["acceptance"]) / se if se > 0 else 0.0


def verdict(candidate: dict, current: dict) -> tuple[bool, list[str]]:
    """(passes, one reason per kind) from both drafts' figures per kind (measure()'s "kinds")."""
    kinds = [k for k in KINDS if k in candidate and k in current]
    if not kinds:
        return False, ["no kind of prompt was measured for both drafts"]
    reasons, ok = [], True
    strict = {"chat"} if "chat" in kinds else {"code"}          # the kind that must improve
    for kind in kinds:
        new, old = candidate[kind]["acceptance"], current[kind]["acceptance"]
        if kind in strict:
            z = gain_z(candidate[kind], current[kind])
            good, need = new > old and z >= Z_MIN, f"higher by {Z_MIN} standard errors (here {z:.2f})"
        else:
            good, need = new >= old, "not lower"
        ok &= good
        reasons.append(f"{kind}: {new:.3f} against {old:.3f}, must be {need}: {'yes' if good else 'NO'}")
    return ok, reasons


def table(candidate: dict, current: dict, names: tuple[str, str] = ("candidate", "current")) -> str:
    """Both drafts' acceptance per kind (accepted/judged) as a small text table."""
    kinds = [k for k in KINDS if k in candidate or k in current]
    width = max(len(n) for n in names) + 2
    head = f"{'draft':<{width}}" + "".join(f"{k + ' a (accepted/judged)':>28}" for k in kinds)
    rows = [head, "-" * len(head)]
    for name, figures in zip(names, (candidate, current)):
        cells = []
        for kind in kinds:
            f = figures.get(kind)
            cells.append(f"{f['acceptance']:.3f} ({f['accepted']}/{f['judged']})" if f else "-")
        rows.append(f"{name:<{width}}" + "".join(f"{c:>28}" for c in cells))
    return "\n".join(rows)


def ship(candidate: str | Path, current: str | Path, record: dict) -> Path:
    """Replace the current draft's folder with the candidate's files and its expect.json (`record`); update
    the SHA256SUMS beside it where that lists the folder. The old folder is removed only once the new
    one is complete."""
    candidate, current = Path(candidate), Path(current)
    staged = current.with_name(current.name + ".shipping")
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir()
    for path in candidate.iterdir():
        if path.is_file() and path.name != "expect.json":
            shutil.copy2(path, staged / path.name)
    write_expect(staged, record)
    old = current.with_name(current.name + ".replaced")
    shutil.rmtree(old, ignore_errors=True)
    if current.exists():
        current.replace(old)
    staged.replace(current)
    shutil.rmtree(old, ignore_errors=True)
    update_sums(current)
    return current


def update_sums(folder: Path) -> Path | None:
    """Rewrite the lines of `folder` in the SHA256SUMS beside it (when that file lists the folder),
    leaving every other folder's lines as they are."""
    manifest = folder.parent / integrity.MANIFEST
    if not manifest.is_file():
        return None
    lines = manifest.read_text(encoding="utf-8").splitlines()
    prefix = f"{folder.name}/"
    if not any(line.partition("  ")[2].startswith(prefix) for line in lines):
        return None
    kept = [line for line in lines if not line.partition("  ")[2].startswith(prefix)]
    mine = [f"{digest}  {folder.name}/{name}" for name, digest in integrity.sums_of(folder).items()]
    at = next((i for i, line in enumerate(lines) if line.partition("  ")[2].startswith(prefix)), len(kept))
    ordered = kept[:at] + mine + kept[at:]
    manifest.write_text("\n".join(ordered) + "\n", encoding="utf-8")
    return manifest
