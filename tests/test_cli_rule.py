"""The command line's --rule (`run` and `bench`): the settings table's acceptance rules (app/form_table.py), the
block rule reaching the engine's rounds, and a token tree refused with the engine's own one line."""
import json

import pytest

from specviz.app.form_table import BY_NAME
from specviz.cli import build_parser
from specviz.cli.run import apply_preset, config_from
from specviz.engine.loop.config import SpecConfig
from specviz.errors import ConfigError

from .helpers import cli


def _config(*flags):
    args = build_parser().parse_args(["run", "--prompt", "x", *flags])
    apply_preset(args)
    return config_from(args)


def _engine_refusal(**settings) -> str:
    with pytest.raises(ConfigError) as err:
        SpecConfig(**settings)
    return str(err.value)


def test_rule_takes_the_settings_tables_choices_and_default():
    assert BY_NAME["rule"].choices == ("exact", "block")
    assert _config().rule == BY_NAME["rule"].default == "exact"
    assert _config("--rule", "block", "--temperature", "1").rule == "block"
    assert _config("--rule", "block").rule == "block"            # at temperature 0 both rules are the argmax match
    for parser_args in (["run", "--prompt", "x", "--rule", "typical"], ["bench", "--rule", "nope"]):
        with pytest.raises(SystemExit):                              # argparse: "invalid choice", exit status 2
            build_parser().parse_args(parser_args)
    with pytest.raises(ConfigError) as err:
        _config("--rule", "block", "--tree", "2,2")
    assert str(err.value) == _engine_refusal(tree=(2, 2), rule="block")


@pytest.mark.slow
def test_run_and_bench_decode_with_the_block_rule(tiny_dirs, tmp_path):
    pair = ["--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"]]
    r = cli("run", "--prompt", "def add(a, b):", *pair, "--k", "3", "--temperature", "1", "--seed", "3",
            "--max-new-tokens", "16", "--rule", "block", "--json")
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert events[-1]["kind"] == "done" and events[-1]["stats"]["rule"] == "block"
    rounds = [e for e in events if e["kind"] == "round_end" and e["drafted"]]
    # each round's joint test: one (w, h, u) per draft (engine/loop/block.py)
    assert rounds and all(e["block"] is not None and len(e["block"]) == e["drafted"] for e in rounds)
    prompts = tmp_path / "p.json"
    prompts.write_text(json.dumps([{"kind": "code", "text": "def add(a, b):"}]))
    r = cli("bench", *pair, "--prompts", str(prompts), "--max-new-tokens", "6", "--repeats", "1", "--temperature",
            "1", "--rule", "block", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["settings"]["rule"] == "block"


@pytest.mark.slow
def test_a_tree_with_the_block_rule_is_the_engines_one_line(tiny_dirs):
    pair = ["--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"]]
    line = f"error: {_engine_refusal(tree=(2, 2), rule='block')}\n"
    for command in (["run", "--prompt", "x"], ["bench"]):
        r = cli(*command, *pair, "--tree", "2,2", "--rule", "block")
        assert r.returncode == 2 and r.stderr == line, r.stderr
