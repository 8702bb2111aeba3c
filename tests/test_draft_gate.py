"""The draft gate: a candidate ships only if its chat acceptance is higher and its code acceptance not lower
than the current draft's, never when it trained on a gate prompt; shipping replaces the folder, writes its
expect.json and only its own lines of SHA256SUMS."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from specviz.training import draft_gate
from specviz.models import integrity
from specviz.models.expect import draft_fingerprint, read_expect
from tests.helpers import load_script
from tests.test_pair_expect import a_record


def figures(chat: float | None, code: float, judged: int = 100) -> dict:
    out = {"code": {"acceptance": code, "accepted": round(judged * code), "judged": judged}}
    if chat is not None:
        out["chat"] = {"acceptance": chat, "accepted": round(judged * chat), "judged": judged}
    return out


@pytest.mark.parametrize("candidate, current, passes", [
    (figures(0.66, 0.89), figures(0.51, 0.89), True),        # chat higher, code equal
    (figures(0.66, 0.88), figures(0.51, 0.89), False),       # code lower
    (figures(0.51, 0.95), figures(0.51, 0.89), False),       # chat not higher
    (figures(0.56, 0.89), figures(0.51, 0.89), False),       # chat higher, within the noise of 100 drafts
    (figures(0.56, 0.89, 2000), figures(0.51, 0.89, 2000), True),   # the same gain over 2,000 drafts
    (figures(None, 0.89), figures(None, 0.79), True),        # code only: code must be higher
    (figures(None, 0.80), figures(None, 0.79), False),       # ... beyond the noise
    (figures(None, 0.79), figures(None, 0.79), False),
])
def test_the_gate_passes_only_on_higher_chat_and_code_not_lower(candidate, current, passes):
    ok, reasons = draft_gate.verdict(candidate, current)
    assert ok is passes and len(reasons) == len(current)
    table = draft_gate.table(candidate, current)
    assert "candidate" in table and "current" in table and f"({current['code']['accepted']}/{current['code']['judged']})" in table


def test_the_gate_finds_a_gate_prompt_among_the_training_prompts(tmp_path):
    (tmp_path / "prompts.json").write_text(json.dumps([["chat", "Why  do leaves change color in AUTUMN?"],
                                                       ["code", "import os\n\n\ndef walk(top):\n    pass"]]))
    trained = draft_gate.training_prompts(tmp_path)
    prompts = [{"text": "Why do leaves change color in autumn?"}, {"text": "def walk(top):"},
               {"text": "What is a black hole?"}]
    assert draft_gate.overlaps(prompts, trained) == ["Why do leaves change color in autumn?", "def walk(top):"]
    with pytest.raises(FileNotFoundError):
        draft_gate.training_prompts(tmp_path / "nowhere")


def test_prompts_the_candidate_trained_on_are_left_out_and_too_many_refuse():
    prompts = [{"kind": "chat", "text": f"Question {i}?"} for i in range(4)] + [{"kind": "code", "text": "def f():"}]
    kept, left_out, refused = draft_gate.untrained(prompts, ["<user> question 1?  </user>", "Other"])
    assert left_out == ["Question 1?"] and refused is None
    assert [p["text"] for p in kept] == ["Question 0?", "Question 2?", "Question 3?", "def f():"]
    kept, left_out, refused = draft_gate.untrained(prompts, ["Question 0?", "Question 1?", "Question 2?"])
    assert refused == "only 1 of the 4 chat prompts were never trained on"
    assert draft_gate.untrained(prompts, [])[1:] == ([], None)


def test_the_store_s_prompts_are_read_back_as_text(tmp_path):
    """What a candidate trained on the store saw, from every sitting's shards: the prompts, decoded."""
    from specviz.training import shard_store
    from specviz.training.distill_data import save_shard
    from specviz.training.onpolicy import Record

    work = tmp_path / "w"
    (work / "onpolicy").mkdir(parents=True)
    (work / "prompts.json").write_text("[]")
    recs = [Record([1, 2, 3], [9, 9], np.zeros((2, 32), np.uint16), np.zeros((2, 32), np.float16), 0.0),
            Record([4, 5], [9], np.zeros((1, 32), np.uint16), np.zeros((1, 32), np.float16), 0.0)]
    save_shard(work / "onpolicy" / "shard-0000.npz", recs, "chat", "fp32")
    sitting = {"sitting": shard_store.sitting_id(work), "seed": 1}
    name, arrays = shard_store.compact(work / "onpolicy" / "shard-0000.npz", sitting, 0)
    shard_store.write(tmp_path / "store", name, arrays)
    words = {1: "why", 2: "is", 3: "SKY", 4: "def", 5: "f():"}
    texts = draft_gate.store_prompts(tmp_path / "store", lambda ids: " ".join(words[i] for i in ids))
    assert texts == ["why is SKY", "def f():"]
    assert draft_gate.overlaps([{"text": "Why is  the sky"}, {"text": "why is sky"}], texts) == ["why is sky"]


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


@pytest.mark.slow
def test_the_gate_fails_a_copy_of_the_current_draft_and_ships_nothing(tmp_path, monkeypatch, capsys):
    """End to end on the bundled pair: a candidate equal to the current draft does not beat it (exit 1),
    and --ship then leaves the current folder as it was."""
    from specviz.paths import MODELS
    monkeypatch.setenv("SPECVIZ_DRAFT_STEP", "int8")
    shutil.copytree(MODELS / "draft", tmp_path / "candidate")
    shutil.copytree(MODELS / "draft", tmp_path / "models" / "draft")
    before = {p.name: p.read_bytes() for p in (tmp_path / "models" / "draft").iterdir()}
    code = load_script("draft_gate").main(["--candidate", str(tmp_path / "candidate"), "--preset", "bundled",
                                       "--current", str(tmp_path / "models" / "draft"), "--ship"])
    out = capsys.readouterr().out
    assert code == 1 and "FAIL: the current draft stays" in out and "must be higher by 1.645 standard errors (here 0.00): NO" in out
    assert "no --work-dir or --store given" in out and "candidate" in out and "current" in out
    assert {p.name: p.read_bytes() for p in (tmp_path / "models" / "draft").iterdir()} == before


@pytest.mark.slow
def test_pair_expect_writes_what_the_shipped_file_holds(tmp_path, monkeypatch):
    """The script's record for the bundled pair: the shipped expect.json's figures, settings and command."""
    from specviz.paths import MODELS
    monkeypatch.setenv("SPECVIZ_DRAFT_STEP", "int8")
    out = tmp_path / "bundled.json"
    assert load_script("pair_expect").main(["--preset", "bundled", "--out", str(out)]) == 0
    got, shipped = json.loads(out.read_text()), read_expect(MODELS / "draft")
    for key in ("pair", "draft_fingerprint", "prompts", "k", "temperature", "max_new_tokens", "draft_step"):
        assert got[key] == shipped[key], key
    # the shipped file's speedups come from a quiet machine's --speedup run: the counts are compared, not the timing
    assert shipped["command"].startswith(got["command"])
    assert without_speedup(got["kinds"]) == without_speedup(shipped["kinds"])
    assert [without_speedup(row) for row in got["per_prompt"]] == [without_speedup(row) for row in shipped["per_prompt"]]


def without_speedup(record: dict) -> dict:
    return {key: (without_speedup(value) if isinstance(value, dict) else value)
            for key, value in record.items() if key != "speedup"}
