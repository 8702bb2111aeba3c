"""The draft gate: a candidate ships only if its chat acceptance is higher and its code acceptance not lower
than the current draft's, never when it trained on a gate prompt; shipping replaces the folder, writes its
expect.json and only its own lines of SHA256SUMS."""
from __future__ import annotations

import json
import shutil

import pytest

from specviz.bench import draft_gate
from specviz.models import integrity
from specviz.models.expect import draft_fingerprint, read_expect
from tests.test_pair_expect import a_record


def figures(chat: float | None, code: float) -> dict:
    out = {"code": {"acceptance": code, "accepted": round(100 * code), "judged": 100}}
    if chat is not None:
        out["chat"] = {"acceptance": chat, "accepted": round(100 * chat), "judged": 100}
    return out


@pytest.mark.parametrize("candidate, current, passes", [
    (figures(0.66, 0.89), figures(0.51, 0.89), True),        # chat higher, code equal
    (figures(0.66, 0.88), figures(0.51, 0.89), False),       # code lower
    (figures(0.51, 0.95), figures(0.51, 0.89), False),       # chat not higher
    (figures(None, 0.80), figures(None, 0.79), True),        # code only: code must be higher
    (figures(None, 0.79), figures(None, 0.79), False),
])
def test_the_gate_passes_only_on_higher_chat_and_code_not_lower(candidate, current, passes):
    ok, reasons = draft_gate.verdict(candidate, current)
    assert ok is passes and len(reasons) == len(current)
    table = draft_gate.table(candidate, current)
    assert "candidate" in table and "current" in table and f"({current['code']['accepted']}/100)" in table


def test_the_gate_finds_a_gate_prompt_among_the_training_prompts(tmp_path):
    (tmp_path / "prompts.json").write_text(json.dumps([["chat", "Why  do leaves change color in AUTUMN?"],
                                                       ["code", "import os\n\n\ndef walk(top):\n    pass"]]))
    trained = draft_gate.training_prompts(tmp_path)
    prompts = [{"text": "Why do leaves change color in autumn?"}, {"text": "def walk(top):"},
               {"text": "What is a black hole?"}]
    assert draft_gate.overlaps(prompts, trained) == ["Why do leaves change color in autumn?", "def walk(top):"]
    with pytest.raises(FileNotFoundError):
        draft_gate.training_prompts(tmp_path / "nowhere")


def test_shipping_replaces_the_folder_writes_its_figures_and_only_its_sums(tiny_dirs, tmp_path):
    root = tmp_path / "models"
    for name, source_dir in (("current", "random"), ("other", "target")):
        shutil.copytree(tiny_dirs[source_dir], root / name)
    integrity.write_manifest(root)
    other_lines = [line for line in (root / "SHA256SUMS").read_text().splitlines() if "  other/" in line]
    candidate = tmp_path / "candidate"
    shutil.copytree(tiny_dirs["cut"], candidate)
    draft_gate.ship(candidate, root / "current", a_record(candidate))
    assert read_expect(root / "current")["kinds"]["code"]["acceptance"] == 0.889
    assert draft_fingerprint(root / "current") == draft_fingerprint(candidate)
    integrity._verified.clear()
    integrity.verify(root / "current", "current")                 # the sums match the shipped files
    assert [line for line in (root / "SHA256SUMS").read_text().splitlines() if "  other/" in line] == other_lines
    assert not any(p.name.endswith((".shipping", ".replaced")) for p in root.iterdir())
