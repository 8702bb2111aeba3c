"""The share link (view/share.py): a race's settings in the address, checked like the form's own."""
from __future__ import annotations

from urllib.parse import parse_qs

from specviz.app.state import AppState
from specviz.models.presets import Preset
from tests.helpers import app_with
from specviz.view.form_fill import FILLED, opened
from specviz.view.share import form_defaults, link_query, read_link


def _open_link(app, params):
    """The page's load as a tuple, in form_fill.FILLED's order."""
    got = opened(app, params)
    return tuple(got[name] for name in FILLED)


def _query(preset, prompt, k, temperature, seed, pinned=False, prompts=(), tree=None, app=None, **more):
    values = {"preset": preset, "prompt": prompt, "k": k, "temperature": temperature, "seed": seed, "tree": tree,
              **more}
    defaults = form_defaults(app, app.pairs.presets[preset]) if app is not None else {"tree": "chain"}
    return link_query(values, defaults, pinned, prompts)


def _app(tiny_dirs) -> AppState:
    code = Preset("code", "code pair", tiny_dirs["target"], tiny_dirs["cut"], 4, ("def add(a, b):",))
    chatty = Preset("chatty", "chat pair", tiny_dirs["target"], tiny_dirs["cut"], 6, ("What is a star?",), chat=True)
    return app_with({"code": code, "chatty": chatty})


def test_a_link_written_for_a_form_reads_back_as_the_same_values(tiny_dirs):
    app = _app(tiny_dirs)
    query = _query("chatty", "Why is the sky blue? <b>&", 3, 0.8, 42.0)
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
    got_open = opened(app, params)
    preset, prompt, k, dataset, note, link = (got_open[n] for n in ("preset", "prompt", "k", "examples", "note", "link"))
    assert preset == {"__type__": "update", "value": "chatty", "interactive": False}
    assert k["value"] == 6 and k["interactive"] is False
    assert prompt == "<script>x</script>" and dataset.raw_samples == [["<script>x</script>"], ["Name three planets."]]
    assert "Class setup" in note and "<script>" not in note and link == {"pinned": True, "prompts": list(got.prompts)}
    again = parse_qs(_query("chatty", prompt, 6, 0, 0, True, got.prompts))
    assert again["class"] == ["1"] and again["prompts"] == list(got.prompts)


def test_no_link_leaves_the_form_and_a_pair_brings_its_own_k_and_example(tiny_dirs):
    app = _app(tiny_dirs)
    fresh = opened(app, None)            # nothing named: nothing moved (the visitor may be typing)
    assert all(value == {"__type__": "update"} for name, value in fresh.items()
               if name not in ("note", "link", "lock", "use_examples"))       # gr.skip() each
    assert fresh["note"] == "" and fresh["link"]["pinned"] is False and fresh["lock"] is False
    preset, prompt, k, *_ = _open_link(app, {"pair": "chatty"})        # another pair: its own k and example
    assert preset["value"] == "chatty" and k["value"] == 6 and prompt == "What is a star?"
    note = opened(app, {"k": "x"})["note"]
    assert "Link: k must be a whole number" in note and "status-error" in note


def test_a_tree_shape_travels_in_the_link_and_a_bad_one_is_named(tiny_dirs):
    app = _app(tiny_dirs)
    query = _query("code", "def f():", 4, 0.0, 0, tree=" 2, 2,1 ")
    assert "tree=2%2C2%2C1" in query
    got = read_link(app, parse_qs(query))
    assert got.tree == "2,2,1" and got.problems == []
    assert opened(app, parse_qs(query))["tree"] == "2,2,1"                 # into the draft shape box
    assert "tree=" not in _query("code", "x", 4, 0.0, 0, tree="chain")   # a chain is the default: left out
    assert "tree=" not in _query("code", "x", 4, 0.0, 0, tree="2,x")     # a shape the race refuses: left out
    bad = read_link(app, {"tree": "9,9,9"})
    assert bad.tree is None and "draft shape 9,9,9 has" in " ".join(bad.problems)


def test_every_field_changed_from_its_default_travels_and_reads_back(tiny_dirs):
    app = _app(tiny_dirs)
    changed = {"drafter": "prompt_lookup", "adaptive_k": True, "top_k": 40.0, "top_p": 0.9, "max_new_tokens": 77,
               "stop_strings": "\n\nEND\n<b>", "chat": False, "confidence_stop": 0.3}
    query = _query("chatty", "Hi", 3, 0.7, 5, app=app, **changed)
    got = read_link(app, parse_qs(query))
    assert got.problems == []
    assert {name: getattr(got, name) for name in changed} == {**changed, "top_k": 40, "stop_strings": "END\n<b>"}
    fill = opened(app, parse_qs(query))
    assert fill["drafter"] == "prompt_lookup" and fill["max_new_tokens"] == 77 and fill["stop_strings"] == "END\n<b>"
    assert fill["chat"].value is False and fill["confidence_stop"] == 0.3 and fill["adaptive_k"] is True
    # at their defaults (the pair's own chat and confidence stop included) the fields stay out of the link
    plain = _query("chatty", "Hi", 3, 0.7, 5, app=app, drafter="model", adaptive_k=False, top_k=0, top_p=1.0,
                   max_new_tokens=128, stop_strings="", chat=True, confidence_stop=0.0)
    assert set(parse_qs(plain)) == {"pair", "prompt", "k", "temperature", "seed"}


def test_the_acceptance_rule_travels_where_it_is_not_exact_and_a_bad_one_is_named(tiny_dirs):
    app = _app(tiny_dirs)
    query = parse_qs(_query("code", "def f():", 4, 0.8, 1, app=app, rule="block"))
    assert query["rule"] == ["block"]
    got = read_link(app, query)
    assert got.problems == [] and got.rule == "block" and opened(app, query)["rule"] == "block"
    assert "rule" not in parse_qs(_query("code", "def f():", 4, 0.8, 1, app=app, rule="exact"))
    bad = read_link(app, {"pair": "code", "rule": "<b>lossy"})
    assert bad.rule is None and len(bad.problems) == 1 and "rule" in bad.problems[0]


def test_a_bad_optional_value_is_named_and_a_chat_switch_needs_a_chat_pair(tiny_dirs):
    app = _app(tiny_dirs)
    got = read_link(app, {"pair": "code", "chat": "1", "drafter": "<b>x", "top_p": "0", "adaptive_k": "maybe",
                          "max_new_tokens": "9999"})
    assert (got.chat, got.drafter, got.top_p, got.adaptive_k, got.max_new_tokens) == (None,) * 5
    text = " | ".join(got.problems)
    for word in ("no chat template", "drafter must be one of", "top_p must be greater than 0", "adaptive_k must be 1 or 0",
                 "max_new_tokens must be between"):
        assert word in text
    assert "&lt;b&gt;x" in opened(app, {"drafter": "<b>x"})["note"]          # escaped where it becomes HTML


def _form(**values):
    from specviz.app.request import FORM_FIELDS, RunRequest
    base = RunRequest(preset="code", prompt="def f():", k=4, temperature=0.0, seed=0, tree="chain", chat=False,
                      confidence_stop=0.0, max_new_tokens=128)
    return [values.get(name, getattr(base, name)) for name in FORM_FIELDS]


def test_the_class_options_add_class_and_the_shown_examples_with_the_prompt_first(tiny_dirs):
    from specviz.view.form import _share_query
    app = _app(tiny_dirs)
    link = {"pinned": False, "prompts": []}
    box, panel = _share_query(app, *_form(), link, False, False)
    assert set(parse_qs(box.value)) == {"pair", "prompt", "k", "temperature", "seed"} and panel.visible
    both = parse_qs(_share_query(app, *_form(), link, True, True)[0].value)
    assert both["class"] == ["1"] and both["prompts"] == ["def f():", "def add(a, b):"]
    shown = parse_qs(_share_query(app, *_form(prompt="B"), {"pinned": True, "prompts": ["A", "B"]}, False, True)[0].value)
    assert "class" not in shown and shown["prompts"] == ["A", "B"]        # the page's own examples, its prompt among them


def test_a_trace_fills_every_field_with_its_settings_and_prompt(tiny_dirs):
    from specviz.engine import SpecConfig
    from specviz.view.form_fill import from_trace
    from specviz.view.trace_read import Recorded
    app = _app(tiny_dirs)
    cfg = SpecConfig(k=5, temperature=0.6, top_k=30, top_p=0.8, max_new_tokens=40, seed=9, drafter="prompt_lookup",
                     adaptive_k=True, confidence_stop=0.2, stop_strings=("END",))
    recorded = Recorded(prompt="Why <b>?", label="chat pair", dtype=None, config=cfg, events=[], key="chatty", chat=False)
    fill = from_trace(app, recorded)
    assert (fill["preset"], fill["prompt"], fill["k"], fill["temperature"], fill["seed"]) == ("chatty", "Why <b>?", 5, 0.6, 9)
    assert (fill["top_k"], fill["top_p"], fill["max_new_tokens"], fill["drafter"], fill["adaptive_k"]) == (
        30, 0.8, 40, "prompt_lookup", True)
    assert fill["stop_strings"] == "END" and fill["confidence_stop"] == 0.2 and fill["tree"] == "chain"
    assert fill["chat"].value is False and fill["examples"].raw_samples == [["What is a star?"]]
    assert "Run races it again" in fill["note"] and "status-error" not in fill["note"]
    pinned = from_trace(app, recorded, {"pinned": True, "prompts": ["A"]})       # a class link's pair and k stay
    assert pinned["preset"] == pinned["k"] == pinned["examples"] == {"__type__": "update"}
    assert pinned["prompt"] == "Why <b>?" and "class link" in pinned["note"]
    elsewhere = from_trace(app, Recorded(prompt="x", label="?", dtype=None, config=cfg, events=[], key="<gone>"))
    assert elsewhere["preset"] == {"__type__": "update"} and "&#x27;&lt;gone&gt;&#x27;" in elsewhere["note"]


def test_the_block_rule_travels_in_the_link(tiny_dirs):
    app = _app(tiny_dirs)
    query = _query("code", "def f():", 4, 1.0, 0, app=app, rule="block")
    assert "rule=block" in query
    got = read_link(app, parse_qs(query))
    assert got.rule == "block" and got.problems == []
    assert opened(app, parse_qs(query))["rule"] == "block"                  # into the form's rule choice
    assert "rule=" not in _query("code", "def f():", 4, 1.0, 0, app=app, rule="exact")   # the default: left out
    # refused in one line each, never a crash: a lossy rule alone (it needs temperature > 0), a name no rule has
    bad = read_link(app, {"rule": "typical"})
    assert bad.rule is None and "temperature > 0" in " ".join(bad.problems)
    bad = read_link(app, {"rule": "<b>nope"})
    assert bad.rule is None and "rule must be one of" in " ".join(bad.problems)
    assert "&lt;b&gt;nope" in opened(app, {"rule": "<b>nope"})["note"]     # escaped where it becomes HTML
