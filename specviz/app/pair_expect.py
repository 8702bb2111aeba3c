"""What a visitor may expect from a pair, in words: its draft's measured acceptance on prompts it never saw.

The figures come from the draft folder's expect.json (models/expect.py reads it and refuses one measured
with other weights; scripts/pair_expect.py writes it). `expected` finds a preset's record (None for a
pair without one: a hub draft, a custom pair, stale figures); `sentence` says it in one line, chat first
("On prompts it never saw, this pair accepts 51% of drafts on chat and 89% on code (k = 3, greedy)."),
with the speedups when a quiet machine measured them; `source` names the file, the prompts, the machine,
the date and the command, so the line is never a claim without its origin. A pair measured on code only
(the bundled Python model) says why it has no chat figure.
"""
from __future__ import annotations

from pathlib import Path

from ..models.expect import EXPECT, pooled_acceptance, preset_draft_folder, read_expect
from ..paths import ROOT

# Why a pair has no chat figure, where its preset says more than "not a chat model".
NO_CHAT = {"bundled": "its target writes Python only, so there is no chat figure."}


def expected(preset) -> dict | None:
    """The preset's draft's expect.json record, or None."""
    if preset is None:
        return None
    folder = preset_draft_folder(preset)
    return read_expect(folder) if folder is not None else None


def percent(a: float) -> str:
    return f"{round(100 * a)}%"


def sentence(record: dict) -> str:
    """The expectation in one line (chat's figure first, where the record has one)."""
    kinds = record["kinds"]
    settings = f"(k = {record['k']}, greedy)"
    if "chat" in kinds and "code" in kinds:
        line = (f"On prompts it never saw, this pair accepts {percent(kinds['chat']['acceptance'])} of drafts on "
                f"chat and {percent(kinds['code']['acceptance'])} on code {settings}.")
    elif "chat" in kinds:
        line = f"On chat prompts it never saw, this pair accepts {percent(kinds['chat']['acceptance'])} of drafts {settings}."
    else:
        line = (f"On code prompts it never saw, this pair accepts {percent(kinds['code']['acceptance'])} of drafts "
                f"{settings}; " + NO_CHAT.get(record["pair"], "its target is not a chat model, so there is no chat figure."))
    speeds = [f"{s:.2f}× on {kind}" for kind, f in kinds.items() if (s := f.get("speedup"))]
    if speeds:
        line += f" Speed against plain decoding, on the machine its source names: {' and '.join(speeds)}."
    return line


def source(record: dict, preset) -> list[str]:
    """Where the line's figures come from, a sentence each: the file and what was measured, where and when,
    the command, and the table that holds them."""
    folder = preset_draft_folder(preset)
    where = _as_repository_names(folder / EXPECT) if folder is not None else EXPECT
    counts = " and ".join(f"{f.get('prompts', '?')} {kind}" for kind, f in record["kinds"].items())
    files = ", ".join(record.get("prompts") or []) or "its prompt files"
    parts = [f"Source: {where}: {counts} prompts of {files}, {record.get('max_new_tokens', '?')} new tokens each",
             f"measured {record['measured']}" if record.get("measured") else "",
             f"on {record['machine']}" if record.get("machine") else ""]
    lines = [", ".join(p for p in parts if p) + "."]
    if record.get("command"):
        lines.append(f"Command: {record['command']}")
    return lines + ["Table: benchmarks/pair-expect.md."]


def assumed_a_words(preset) -> str:
    """Where the a the k advice assumes comes from, in words set against the line above the race: that
    line gives one figure per kind, the advice one a, the kinds pooled (accepted / judged summed over
    them, models/expect.pooled_acceptance). Unsaid, the pooled a reads as a third measurement beside the
    line's two; a preset whose spaces.yaml gives its own `acceptance` says that instead."""
    record = expected(preset)
    if record is None or preset.acceptance is None or pooled_acceptance(record) != preset.acceptance:
        return "on held-out prompts, as its preset in spaces.yaml gives it"
    kinds = list(record["kinds"])
    if len(kinds) == 1:
        return f"on unseen {kinds[0]} prompts: the line above the race's figure"
    return f"on unseen prompts: the line above the race's {' and '.join(kinds)} figures pooled"


def _as_repository_names(path: Path) -> str:
    """A path relative to the repository's root where it is inside it (assets/models/...), else its name."""
    try:
        return path.resolve().relative_to(ROOT.resolve()).as_posix()
    except ValueError:
        return path.name
