"""The benchmark runs end to end on tiny models (its figures come from real runs, not tests)."""
import json

import pytest

from specviz.engine.metrics import theory

from .helpers import bench


def test_builtin_prompt_set_has_three_kinds_from_heldout_files():
    from specviz.bench.prompts import builtin_prompts, heldout_code_prompts
    from specviz.training.corpus import split_corpus
    prompts = builtin_prompts()
    assert {p["kind"] for p in prompts} == {"code", "grounded", "free text"} and len(prompts) >= 6
    _, heldout = split_corpus()
    for code in heldout_code_prompts():
        assert code.endswith(":") and any(code in text for text in heldout)


@pytest.mark.parametrize("name, content, says", [
    ("missing.json", None, "cannot read it"),
    ("bad.json", "[1,", "not valid JSON"),
    ("object.json", '{"a": 1}', "not a JSON object"),
    ("empty.json", "[]", "holds no prompts"),
    ("item.json", '["fine", {"kind": "code"}]', "item 1 is not"),
    ("blank.json", '["  "]', "item 0 is not"),
    ("empty.txt", "---\n\n---\n", "holds no prompts"),
])
def test_a_bad_prompt_file_is_one_clear_error(tmp_path, name, content, says):
    from specviz.bench.prompts import load_prompts
    from specviz.errors import ConfigError
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=says):
        load_prompts(str(path))


def test_prompt_files_of_both_shapes_load(tmp_path):
    from specviz.bench.prompts import load_prompts
    (tmp_path / "p.json").write_text(json.dumps(["a", {"kind": "chat", "text": "b", "chat": True}, {"text": "c"}]))
    assert load_prompts(str(tmp_path / "p.json"), chat=False) == [
        {"kind": "file", "text": "a", "chat": False}, {"kind": "chat", "text": "b", "chat": True},
        {"kind": "file", "text": "c", "chat": False}]
    (tmp_path / "p.txt").write_text("one\n---\ntwo\n----\nstill two\n")     # only a line of exactly --- separates
    assert [p["text"] for p in load_prompts(str(tmp_path / "p.txt"))] == ["one\n", "two\n----\nstill two\n"]


@pytest.mark.slow    # a benchmark in a subprocess
def test_bench_compares_all_methods(tiny_dirs, tmp_path):
    out = tmp_path / "bench.json"
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps([{"kind": "code", "text": "def add(a, b):\n    return"},
                                   {"kind": "grounded", "text": "x = 1\ny = 2\nx = 1\n"},
                                   {"kind": "free text", "text": "This module provides"}]))
    result = bench("--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"], "--max-new-tokens", "24",
                   "--repeats", "1", "--out", str(out), "--prompts", str(prompts), "--fast")
    assert json.loads(out.read_text()) == result
    summary = result["rows"][0]["summary"]
    assert set(summary["tokens_per_s"]) == {"specviz plain", "specviz speculative", "hf generate", "hf assisted",
                                            "specviz plain (fast)", "specviz speculative (fast)"}
    assert {"fast_speedup", "fast_vs_default_plain", "fast_vs_default_speculative"} <= set(summary)
    assert all(s > 0 for s in result["fast_first_use_s"]["4"].values())
    assert all(v > 0 for v in summary["tokens_per_s"].values())
    assert 0 < summary["acceptance_rate"] <= 1 and summary["theory_tokens_per_round"] >= 1
    assert {"specviz_vs_hf_assisted", "specviz_plain_vs_hf_generate", "theory_speedup"} <= set(summary)
    assert abs(sum(result["breakdown"]["share"].values()) - 1) < 1e-6
    assert {"code", "grounded", "free text"} == {p["kind"] for p in result["rows"][0]["per_prompt"]}
    # The draft's path is what the speculative lanes recorded, not re-derived from the device.
    recorded = {p["draft_path"] for p in result["rows"][0]["per_prompt"]}
    assert len(recorded) == 1
    path = recorded.pop()
    assert result["draft_step"]["path"] == ("transformers' forward" if path == "eager" else path)
    # One verdict, the page's rule: each prompt's from its own run, the k's over every prompt's interval.
    from specviz.bench.report import table
    from specviz.bench.suite import prompts_interval
    from specviz.engine.analysis.verdict import verdict
    rows = result["rows"][0]["per_prompt"]
    assert all(r["verdict"] == verdict(r["ratios"]["speedup"], r["speedup_interval"])[0] for r in rows)
    interval = prompts_interval(rows)
    assert summary["speedup_interval"] == list(interval) and summary["ledger"]["verdict"] == summary["verdict"]
    assert summary["verdict"] == verdict(summary["speedup"], interval)[0]
    assert f"k=4: {summary['verdict']}, {summary['speedup']:.2f}x" in table(result)


def test_draft_step_reports_the_recorded_paths_and_builds_nothing():
    from types import SimpleNamespace

    import torch

    from specviz.bench.suite import draft_step
    draftless = SimpleNamespace(draft=None)
    assert draft_step(draftless, [{"draft_path": ""}, {}]) is None          # prompt lookup / no draft model
    unbuilt = SimpleNamespace(draft=torch.nn.Linear(1, 1))                  # no lean weights built for it
    assert draft_step(unbuilt, [{"draft_path": "eager"}]) == {"path": "transformers' forward"}
    assert draft_step(unbuilt, [{"draft_path": "lean eager, int8 weights"}, {"draft_path": "eager"}]) == \
        {"path": "transformers' forward, lean eager, int8 weights"}


@pytest.mark.slow    # a benchmark in a subprocess
def test_k_sweep_and_forced_acceptance_on_random_pair(tmp_path):
    prompts = tmp_path / "p.json"
    prompts.write_text(json.dumps(["w1 w2 w3 w4", "w5 w6"]))
    result = bench("--random-pair", "tiny", "--forced-acceptance", "0.8", "--k-sweep", "--max-new-tokens", "16",
                   "--repeats", "1", "--prompts", str(prompts))
    assert result["not_lossless"] and [r["k"] for r in result["rows"]] == list(range(1, 9))
    # The engine really accepted about 80% of the drafts it verified (counted, not the setting echoed back).
    verified = sum(p["verified"] for r in result["rows"] for p in r["per_prompt"])
    accepted = sum(p["accepted"] for r in result["rows"] for p in r["per_prompt"])
    assert verified > 50 and abs(accepted / verified - 0.8) < 0.15
    # The theory's best k is the one function's, priced with the measured verify ratio v.
    assert result["best_k"] in range(1, 9)
    s = next(r["summary"] for r in result["rows"] if r["k"] == result["best_k"])
    assert result["theory_best_k"] == theory.best_k(0.8, s["cost_ratio"], s["verify_ratio"], 8)
    assert s["theory_speedup"] == pytest.approx(
        theory.expected_speedup(0.8, result["best_k"], s["cost_ratio"], s["verify_ratio"]))


@pytest.mark.parametrize("k, stop", [(2, 0.0), (5, 0.5)])
def test_transformers_assisted_generation_runs_the_same_rounds(pair, k, stop):
    """transformers reads k and the confidence stop from the assistant's generation config (not from
    generate()'s arguments): the bench sets them there for the call, and puts the draft's back after."""
    from transformers.generation import candidate_generator

    from specviz import SpecConfig
    from specviz.bench.runner import hf_run
    from specviz.engine.loop.output import encode_prompt

    seen = []
    original = candidate_generator.AssistedCandidateGenerator.get_candidates

    def spy(self, input_ids, *args, **kwargs):
        seen.append((self.num_assistant_tokens, self.generation_config.assistant_confidence_threshold))
        return original(self, input_ids, *args, **kwargs)

    before = pair.draft.generation_config.to_dict()
    candidate_generator.AssistedCandidateGenerator.get_candidates = spy
    try:
        hf_run(pair, encode_prompt(pair, "def add(a, b):\n    return"),
               SpecConfig(k=k, max_new_tokens=12, confidence_stop=stop), assisted=True)
    finally:
        candidate_generator.AssistedCandidateGenerator.get_candidates = original
    assert seen and set(seen) == {(k, stop)}
    assert pair.draft.generation_config.to_dict() == before


def test_assisted_generation_hides_transformers_warning_about_its_own_call(pair, monkeypatch):
    """transformers 5's candidate generator calls the draft's generate() with a generation_config and
    generation arguments together, and logs a deprecation warning about that call of its own: the bench
    hides that one record (and only while assisted generation runs), since no bench user passed anything."""
    import logging

    from specviz import SpecConfig
    from specviz.bench import runner
    from specviz.engine.loop.output import encode_prompt

    log = logging.getLogger("transformers.generation.utils")
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    log.addHandler(handler)

    def assisted_run() -> list[str]:
        seen.clear()
        logging.Logger.warning_once.cache_clear()          # transformers logs it once per process
        runner.hf_run(pair, encode_prompt(pair, "def add(a, b):\n    return"), SpecConfig(k=3, max_new_tokens=8),
                      assisted=True)
        return [m for m in seen if m.startswith("Passing `generation_config` together")]

    try:
        assert assisted_run() == []
        assert runner._not_assisted_own_call not in log.filters      # removed after the call
        monkeypatch.setattr(runner, "_not_assisted_own_call", lambda record: True)
        assert len(assisted_run()) == 1                               # the control: transformers does log it
    finally:
        log.removeHandler(handler)


def test_page_parity_refuses_a_prompt_file_it_would_not_use():
    """scripts/page_parity.py ran the bundled pair's own prompts when given --prompt-file, silently: a
    run meant for a file's prompts measured others. It now refuses before starting anything."""
    import subprocess
    import sys
    from pathlib import Path
    script = Path(__file__).resolve().parent.parent / "scripts" / "page_parity.py"
    run = subprocess.run([sys.executable, str(script), "--preset", "bundled", "--prompt-file",
                          "benchmarks/unseen-prompts.json"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "--prompt-file is for --preset smollm2" in run.stderr, run.stderr
