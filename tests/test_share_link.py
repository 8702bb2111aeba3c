"""The share link (view/share.py): a race's settings in the address, checked like the form's own."""
from __future__ import annotations

from urllib.parse import parse_qs

from specviz.app.state import AppState
from specviz.models.presets import Preset
from specviz.view.form import _open_link
from specviz.view.share import link_query, read_link
from tests.helpers import app_with


def _app(tiny_dirs) -> AppState:
    code = Preset("code", "code pair", tiny_dirs["target"], tiny_dirs["cut"], 4, ("def add(a, b):",))
    chatty = Preset("chatty", "chat pair", tiny_dirs["target"], tiny_dirs["cut"], 6, ("What is a star?",), chat=True)
    return app_with({"code": code, "chatty": chatty})


def test_a_link_written_for_a_form_reads_back_as_the_same_values(tiny_dirs):
    app = _app(tiny_dirs)
    query = link_query("chatty", "Why is the sky blue? <b>&", 3, 0.8, 42.0)
    got = read_link(app, parse_qs(query))
    assert (got.pair, got.prompt, got.k, got.temperature, got.seed) == ("chatty", "Why is the sky blue? <b>&", 3, 0.8, 42)
    assert not got.pinned and got.problems == [] and "seed=42" in query and "pair=chatty" in query


def test_every_bad_value_is_named_and_left_at_its_default(tiny_dirs):
    app = _app(tiny_dirs)
    got = read_link(app, {"pair": "Code pair", "k": "99", "temperature": "nan", "seed": "-1", "prompt": "  "})
    assert (got.pair, got.prompt, got.k, got.temperature, got.seed) == (None,) * 5
    text = " | ".join(got.problems)
    assert len(got.problems) == 5
    for word in ("'Code pair'", "k must be between", "temperature", "seed must be between", "prompt"):
        assert word in text


def test_a_class_link_pins_pair_k_and_prompts_and_escapes_them(tiny_dirs):
    app = _app(tiny_dirs)
    params = {"pair": "chatty", "class": "1", "prompts": ["<script>x</script>", "Name three planets."]}
    got = read_link(app, params)
    assert got.pinned and got.k == 6 and got.prompts == ("<script>x</script>", "Name three planets.")
    (preset, prompt, k, temperature, seed, dataset, chat, stop, note, link, tree) = _open_link(app, params)
    assert preset == {"__type__": "update", "value": "chatty", "interactive": False}
    assert k["value"] == 6 and k["interactive"] is False
    assert prompt == "<script>x</script>" and dataset.raw_samples == [["<script>x</script>"], ["Name three planets."]]
    assert "Class setup" in note and "<script>" not in note and link == {"pinned": True, "prompts": list(got.prompts)}
    again = parse_qs(link_query("chatty", prompt, 6, 0, 0, True, got.prompts))
    assert again["class"] == ["1"] and again["prompts"] == list(got.prompts)


def test_no_link_leaves_the_form_and_a_pair_brings_its_own_k_and_example(tiny_dirs):
    app = _app(tiny_dirs)
    opened = _open_link(app, None)            # nothing named: nothing moved (the visitor may be typing)
    assert all(value == {"__type__": "update"} for value in opened[:8])       # gr.skip() each
    assert opened[-3] == "" and opened[-2]["pinned"] is False and opened[-1] == {"__type__": "update"}
    preset, prompt, k, *_ = _open_link(app, {"pair": "chatty"})        # another pair: its own k and example
    assert preset["value"] == "chatty" and k["value"] == 6 and prompt == "What is a star?"
    *_, note, _, _ = _open_link(app, {"k": "x"})
    assert "Link: k must be a whole number" in note and "status-error" in note


def test_a_tree_shape_travels_in_the_link_and_a_bad_one_is_named(tiny_dirs):
    app = _app(tiny_dirs)
    query = link_query("code", "def f():", 4, 0.0, 0, tree=" 2, 2,1 ")
    assert "tree=2%2C2%2C1" in query
    got = read_link(app, parse_qs(query))
    assert got.tree == "2,2,1" and got.problems == []
    assert _open_link(app, parse_qs(query))[-1] == "2,2,1"                 # into the draft shape box
    assert "tree=" not in link_query("code", "x", 4, 0.0, 0, tree="chain")   # a chain is the default: left out
    assert "tree=" not in link_query("code", "x", 4, 0.0, 0, tree="2,x")     # a shape the race refuses: left out
    bad = read_link(app, {"tree": "9,9,9"})
    assert bad.tree is None and "draft shape 9,9,9 has" in " ".join(bad.problems)
