"""What a pair is measured to do on prompts it never saw: the expect.json each shipped draft carries (tied
to its weights by a fingerprint, stale figures refused) and the measurement that writes it (pooled greedy
acceptance per kind, through the benchmark's runner)."""
from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from specviz.bench import expect
from specviz.engine import SpecConfig
from specviz.models import integrity
from specviz.models.expect import EXPECT, check_record, draft_fingerprint, read_expect, write_expect
from specviz.models.presets import get_preset
from specviz.paths import MODELS


def a_record(folder, **changes) -> dict:
    record = {"pair": "tiny", "draft_fingerprint": draft_fingerprint(folder), "prompts": ["p.json"], "k": 3,
              "temperature": 0.0, "max_new_tokens": 96, "command": "python scripts/pair_expect.py --preset tiny",
              "measured": "2026-11-29", "machine": "a CPU",
              "kinds": {"chat": {"acceptance": 0.512, "accepted": 100, "judged": 195, "prompts": 8, "speedup": None},
                        "code": {"acceptance": 0.889, "accepted": 160, "judged": 180, "prompts": 8, "speedup": None}}}
    record.update(changes)
    return record


@pytest.fixture
def draft_copy(tiny_dirs, tmp_path) -> Path:
    folder = tmp_path / "draft"
    shutil.copytree(tiny_dirs["cut"], folder)
    return folder


# --- the file and its fingerprint ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["smollm2-draft", "draft"])
def test_the_fingerprint_is_the_trainers_for_both_shipped_drafts(name):
    from specviz.training.smollm2_draft import fingerprint
    assert draft_fingerprint(MODELS / name) == fingerprint(MODELS / name)


def test_a_record_for_these_weights_is_read_and_one_for_other_weights_is_refused_and_logged(draft_copy, caplog):
    write_expect(draft_copy, a_record(draft_copy))
    assert read_expect(draft_copy)["kinds"]["chat"]["acceptance"] == 0.512
    stale = a_record(draft_copy, draft_fingerprint="0123456789ab")
    (draft_copy / EXPECT).write_text(json.dumps(stale))
    with caplog.at_level(logging.WARNING):
        assert read_expect(draft_copy) is None
    assert "stale" in caplog.text and "0123456789ab" in caplog.text


def test_new_weights_make_the_old_record_stale(draft_copy):
    write_expect(draft_copy, a_record(draft_copy))
    weights = next(draft_copy.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes() + b"\0")        # other bytes: other weights
    assert read_expect(draft_copy) is None


@pytest.mark.parametrize("change, problem", [
    (dict(kinds={}), "'kinds'"),
    (dict(kinds={"prose": {"acceptance": 0.5}}), "'kinds'"),
    (dict(kinds={"chat": {"acceptance": 1.5}}), "kinds.chat.acceptance"),
    (dict(kinds={"code": {"acceptance": 0.5, "speedup": -1}}), "kinds.code.speedup"),
])
def test_a_malformed_record_is_named_and_never_shown(draft_copy, change, problem):
    assert problem in check_record(a_record(draft_copy, **change))
    (draft_copy / EXPECT).write_text(json.dumps(a_record(draft_copy, **change)))
    assert read_expect(draft_copy) is None
    (draft_copy / EXPECT).write_text("{not json")
    assert read_expect(draft_copy) is None


def test_expect_json_is_a_note_the_model_sums_leave_out(draft_copy):
    write_expect(draft_copy, a_record(draft_copy))
    assert EXPECT not in {p.name for p in integrity.model_files(draft_copy)}


def test_both_shipped_drafts_carry_current_figures_chat_and_code_for_smollm2_code_only_for_bundled():
    smollm2 = read_expect(MODELS / "smollm2-draft")
    bundled = read_expect(MODELS / "draft")
    assert smollm2 is not None and bundled is not None, "an expect.json is missing or stale: scripts/pair_expect.py"
    assert set(smollm2["kinds"]) == {"chat", "code"} and set(bundled["kinds"]) == {"code"}
    for record in (smollm2, bundled):
        assert record["temperature"] == 0 and record["max_new_tokens"] == 96
        assert record["prompts"] == ["benchmarks/unseen-prompts.json"]
        for figures in record["kinds"].values():
            assert figures["acceptance"] == round(figures["accepted"] / figures["judged"], 4)
    assert smollm2["k"] == get_preset("smollm2").k and bundled["k"] == get_preset("bundled").k


# --- the measurement ------------------------------------------------------------------------------
def test_the_bundled_pairs_figures_are_what_the_script_measures(monkeypatch):
    """The shipped file's counts, measured again here: greedy acceptance is a count, not a timing."""
    from specviz.models.loading import load_pair
    from specviz.runtime import lean_draft
    record = read_expect(MODELS / "draft")
    step = (record.get("draft_step") or "").rpartition(", ")[2].split(" ")[0] or "fp32"
    monkeypatch.setenv(lean_draft.ENV, step)                  # the draft step the file was measured with
    pair = load_pair(None, None, device="cpu", dtype="float32")
    preset = get_preset("bundled")
    prompts = expect.kind_prompts(record["prompts"], preset.chat)
    got = expect.measure(pair, prompts, SpecConfig(k=record["k"], max_new_tokens=record["max_new_tokens"]),
                         log=lambda line: None)
    counts = ("acceptance", "accepted", "judged", "prompts")     # the speedup is a timing: not remeasured
    assert {n: got["kinds"]["code"][n] for n in counts} == {n: record["kinds"]["code"][n] for n in counts}


def test_prompts_sent_as_chat_are_left_out_for_a_pair_without_a_chat_template():
    both = expect.kind_prompts(["benchmarks/unseen-prompts.json"], chat_template=True)
    raw = expect.kind_prompts(["benchmarks/unseen-prompts.json"], chat_template=False)
    assert {p["kind"] for p in both} == {"chat", "code"} and len(both) == 16
    assert {p["kind"] for p in raw} == {"code"} and not any(p["chat"] for p in raw) and len(raw) == 4


def test_acceptance_pools_accepted_over_judged_per_kind(pair):
    prompts = [{"kind": "code", "text": "def f(x):\n", "chat": False, "file": "a"},
               {"kind": "code", "text": "import os\n", "chat": False, "file": "a"},
               {"kind": "chat", "text": "class A:\n", "chat": False, "file": "b"}]
    got = expect.measure(pair, prompts, SpecConfig(k=3, max_new_tokens=24), log=lambda line: None)
    rows = got["per_prompt"]
    code = got["kinds"]["code"]
    assert code["accepted"] == rows[0]["accepted"] + rows[1]["accepted"]
    assert code["judged"] == rows[0]["judged"] + rows[1]["judged"] > 0
    assert code["acceptance"] == round(code["accepted"] / code["judged"], 4) and code["prompts"] == 2
    assert got["kinds"]["chat"]["prompts"] == 1 and code["speedup"] is None
    with pytest.raises(ValueError):
        expect.measure(pair, prompts, SpecConfig(k=3, temperature=1.0), log=lambda line: None)


def test_with_speedup_each_kind_gets_the_median_of_its_prompts_ratios(pair):
    prompts = [{"kind": "code", "text": t, "chat": False, "file": "a"} for t in ("def f(x):\n", "import os\n")]
    got = expect.measure(pair, prompts, SpecConfig(k=3, max_new_tokens=16), speedup=True, repeats=1,
                         log=lambda line: None)
    ratios = [row["speedup"] for row in got["per_prompt"]]
    assert all(r > 0 for r in ratios)
    assert got["kinds"]["code"]["speedup"] == pytest.approx(sum(ratios) / 2, abs=1e-4)


def test_a_record_names_its_command_with_the_pinned_draft_step(monkeypatch, draft_copy):
    monkeypatch.setenv("SPECVIZ_DRAFT_STEP", "int8")
    line = expect.command("smollm2", ["benchmarks/unseen-prompts.json"], 96)
    assert line == ("SPECVIZ_DRAFT_STEP=int8 python scripts/pair_expect.py --preset smollm2 "
                    "--prompts benchmarks/unseen-prompts.json --max-new-tokens 96")
    figures = {"kinds": a_record(draft_copy)["kinds"], "per_prompt": [], "draft_step": ["lean eager, int8 weights"]}
    rec = expect.record("tiny", draft_copy, ["p.json"], SpecConfig(k=3, max_new_tokens=96), figures, line)
    assert check_record(rec) is None and rec["draft_fingerprint"] == draft_fingerprint(draft_copy)
    assert rec["draft_step"] == "lean eager, int8 weights" and rec["command"] == line
