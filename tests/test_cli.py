"""`python -m specviz run` on small models saved to disk: JSON events, colored text, errors."""
import json
import re

import pytest
import torch

from .helpers import cli

pytestmark = pytest.mark.slow    # each test starts python -m specviz in a subprocess


def test_run_json_streams_events_and_ends_with_done(tiny_dirs):
    r = cli("run", "--prompt", "def add(a, b):", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"],
            "--k", "3", "--max-new-tokens", "24", "--json")
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert events[-1]["kind"] == "done" and len(events[-1]["token_ids"]) == 24
    assert {"drafted", "round_end"} <= {e["kind"] for e in events}
    pieces = "".join(e["piece"] for e in events if e["kind"] in ("accepted", "resampled", "bonus"))
    assert pieces == events[-1]["text"]


def test_run_with_baseline_reports_speedup(tiny_dirs):
    r = cli("run", "--prompt", "import os", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"],
            "--max-new-tokens", "20", "--baseline")
    assert r.returncode == 0, r.stderr
    assert "measured speedup" in r.stdout and "\x1b[" in r.stdout
    # The page's headline: a greedy race wrote the same text in fewer target passes.
    assert re.search(r"Same text, \d+ target passes instead of \d+: \d+\.\d\d× the speed\.", r.stdout)
    # The time ledger: the cause in one sentence, then each lane's phases.
    assert "why: " in r.stdout and "target passes" in r.stdout and "break-even a = " in r.stdout


def test_run_json_baseline_tags_lanes(tiny_dirs):
    r = cli("run", "--prompt", "x = 1", "--target", tiny_dirs["target"], "--drafter", "prompt_lookup",
            "--max-new-tokens", "10", "--baseline", "--json")
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert {e["lane"] for e in events if e["kind"] == "done"} == {"spec", "base"}
    assert events[-1]["kind"] == "ledger" and events[-1]["verdict"] in ("faster", "about even", "slower")


def test_bad_arguments_exit_nonzero_without_traceback(tiny_dirs):
    for args in (["run", "--prompt", "x", "--k", "0", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"]],
                 ["run", "--prompt", "x", "--k", "many"],
                 ["run", "--prompt", "x", "--target", "/no/such/dir", "--draft", "/no/such/dir"],
                 ["run", "--prompt", " ", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"]],
                 ["run", "--prompt", "x", "--temperature", "9", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"]],
                 ["run", "--prompt", "x", "--device", "tpu", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"]],
                 ["bench", "--k", "0", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"]],   # was run at k = 4
                 ["bench", "--prompts", "/no/such/prompts.json", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"]]):
        r = cli(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert "Traceback" not in r.stderr and r.stderr.strip()
    if not torch.cuda.is_available():       # a device this machine lacks: one line, before any model loads
        r = cli("run", "--prompt", "x", "--device", "cuda", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"])
        assert r.returncode == 2 and "sees no CUDA GPU" in r.stderr and "Traceback" not in r.stderr


def _bench_json(tmp_path, *args):
    prompts = tmp_path / "p.json"
    prompts.write_text(json.dumps([{"kind": "code", "text": "def add(a, b):"}]))
    r = cli("bench", *args, "--prompts", str(prompts), "--max-new-tokens", "6", "--repeats", "1", "--json")
    return r, (json.loads(r.stdout) if r.returncode == 0 else None)


def test_bench_applies_the_preset(tmp_path):
    # The bundled preset: its pair and its k (4), where `bench` used to take neither from --preset.
    r, result = _bench_json(tmp_path, "--preset", "bundled")
    assert r.returncode == 0, r.stderr
    assert result["models"]["target"].endswith("models/target") and [row["k"] for row in result["rows"]] == [4]
    led = result["rows"][0]["summary"]["ledger"]
    assert led["spec"]["tokens"] == 6 and led["plain"]["target_passes"] == 6 and led["cause"]
    r, result = _bench_json(tmp_path, "--preset", "bundled", "--k", "2")
    assert [row["k"] for row in result["rows"]] == [2]            # an explicit --k still wins
    assert result["settings"]["confidence_stop"] == 0.0           # the bundled preset drafts all k


def test_confidence_stop_reaches_run_and_bench(tiny_dirs, tmp_path):
    pair = ["--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"]]
    r = cli("run", "--prompt", "def add(a, b):", *pair, "--k", "6", "--confidence-stop", "0.9",
            "--max-new-tokens", "24", "--json")
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    rounds = [e for e in events if e["kind"] == "round_end"]
    # A doubted draft ended some rounds early that had room for all 6 (not the budget's last rounds).
    assert any(e["drafted"] < 6 and e["total_tokens"] - e["emitted"] + 7 <= 24 for e in rounds)
    r, result = _bench_json(tmp_path, *pair, "--confidence-stop", "0.9")
    assert r.returncode == 0, r.stderr
    assert result["settings"]["confidence_stop"] == 0.9
    r = cli("run", "--prompt", "x", *pair, "--confidence-stop", "1.5")
    assert r.returncode != 0 and "confidence_stop must be between" in r.stderr and "Traceback" not in r.stderr


def test_bench_chat_prompt_on_a_model_without_template_is_one_line(tmp_path):
    prompts = tmp_path / "chat.json"
    prompts.write_text(json.dumps([{"kind": "chat", "chat": True, "text": "Hello?"}]))
    r = cli("bench", "--preset", "bundled", "--prompts", str(prompts), "--max-new-tokens", "4", "--repeats", "1")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "no chat template" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_run_and_bench_apply_the_smollm2_preset(smollm2_fetched, tmp_path):
    # Its target, its draft and its chat switch reach both subcommands (the prompt goes through the template).
    r = cli("run", "--preset", "smollm2", "--prompt", "Say hi.", "--max-new-tokens", "4", "--json")
    assert r.returncode == 0, r.stderr
    done = json.loads(r.stdout.splitlines()[-1])
    assert done["kind"] == "done"
    prompts = tmp_path / "p.json"
    prompts.write_text(json.dumps([{"kind": "chat", "text": "Say hi."}]))   # no "chat" key: the preset's switch
    r = cli("bench", "--preset", "smollm2", "--prompts", str(prompts), "--max-new-tokens", "4", "--repeats", "1",
            "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["models"]["target"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    from specviz.models.presets import get_preset
    assert result["models"]["draft"].endswith("smollm2-draft")
    assert [row["k"] for row in result["rows"]] == [get_preset("smollm2").k]
