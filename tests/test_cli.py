"""`python -m specviz run` on small models saved to disk: JSON events, colored text, errors."""
import json
import os
import subprocess
import sys

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.getcwd()}


def cli(*args):
    return subprocess.run([sys.executable, "-m", "specviz", *args], capture_output=True, text=True, env=ENV, timeout=300)


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
    assert "measured speedup" in r.stdout and "same text" in r.stdout and "\x1b[" in r.stdout


def test_run_json_baseline_tags_lanes(tiny_dirs):
    r = cli("run", "--prompt", "x = 1", "--target", tiny_dirs["target"], "--drafter", "prompt_lookup",
            "--max-new-tokens", "10", "--baseline", "--json")
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert {e["lane"] for e in events if e["kind"] == "done"} == {"spec", "base"}


def test_bad_arguments_exit_nonzero_without_traceback(tiny_dirs):
    for args in (["run", "--prompt", "x", "--k", "0", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"]],
                 ["run", "--prompt", "x", "--k", "many"],
                 ["run", "--prompt", "x", "--target", "/no/such/dir", "--draft", "/no/such/dir"],
                 ["run", "--prompt", " ", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"]],
                 ["run", "--prompt", "x", "--temperature", "9", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"]]):
        r = cli(*args)
        assert r.returncode != 0
        assert "Traceback" not in r.stderr and r.stderr.strip()
