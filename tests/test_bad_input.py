"""Every bad input gets a clear message and the app keeps serving: the engine's settings and prompts,
the handlers called directly as the API would call them with values the sliders never send, and raw
queue joins with values of the wrong kind or count. The input validation tests, in one place."""
import gradio as gr
import pytest
import torch

from specviz.view.api import generate_endpoint
from specviz.view.handlers import run_race
from specviz import SpecConfig, decode_baseline, speculate
from specviz.engine.loop.config import MIN_TEMPERATURE
from specviz.errors import ConfigError
from specviz.view.tabs.lossless import run_lossless
from tests.helpers import (ADD, FORM, LONG_GENERATE, app_with, form, form_values, generate_fn, join_from, tiny_app,
                           tiny_preset)

GOOD = form(prompt=ADD, temperature=0.0, max_new_tokens=16)
SMALL = dict(max_prompt_tokens=64, max_new_tokens=100)          # the limits most tests here run under


@pytest.fixture(scope="module")
def app(tiny_dirs):
    return app_with({"tiny": tiny_preset(tiny_dirs, examples=("x",))}, **SMALL)


def outcome(app, **changes) -> tuple[str, str]:
    """(status HTML of the last update, spec pane HTML or '') of one race request."""
    last = None
    for update in run_race(app, **{**GOOD, **changes}):
        last = update
    return last.status, last.spec_pane if isinstance(last.spec_pane, str) else ""


@pytest.mark.parametrize("changes, message", [
    (dict(prompt=""), "empty: type a question or some text to continue"),   # chat pairs ask, raw ones continue
    (dict(prompt=" \n\t "), "empty"),
    (dict(prompt=None), "must be text"),
    (dict(prompt="x = 1\n" * 20), "tokens long; this server accepts at most 64"),
    (dict(prompt="y" * 60_000), "characters long"),
    (dict(k=0), "k must be between 1 and 12"),
    (dict(k=13), "k must be between 1 and 12"),
    (dict(k="four"), "k must be a whole number"),
    (dict(k=2.5), "k must be a whole number"),
    (dict(temperature=-0.5), "temperature must be between"),
    (dict(temperature="warm"), "temperature must be a number"),
    (dict(temperature=float("inf")), "finite"),
    (dict(top_k=-3), "top-k must be between"),
    (dict(top_p=0), "top-p must be greater than 0"),
    (dict(top_p=2), "top-p must be between"),
    (dict(max_new_tokens=0), "max new tokens must be between 1 and 100"),
    (dict(max_new_tokens=10**9), "max new tokens must be between 1 and 100"),
    (dict(max_new_tokens=None), "max new tokens must be a whole number"),
    (dict(seed=-1), "seed must be between"),
    (dict(adaptive_k="yes"), "adaptive k must be true or false"),
    (dict(drafter="oracle"), "drafter must be one of"),
    (dict(preset="gpt-5"), "unknown model pair"),
    (dict(preset=None), "unknown model pair"),
    (dict(custom_target="meta-llama/Llama-3-70B"), "custom models are turned off"),
    (dict(stop_strings="\n".join("abcde")), "at most 4 stop strings"),
    (dict(confidence_stop=1.5), "draft confidence stop must be between 0 (off) and 0.95"),
    (dict(confidence_stop="sure"), "draft confidence stop must be a number"),
])
def test_bad_inputs_get_a_clear_message(app, changes, message):
    status, _ = outcome(app, **changes)
    assert "status-error" in status and message in status.replace("&#x27;", "'")
    # ...and the app keeps serving: the next good request completes.
    status, pane = outcome(app)
    assert "status-done" in status and "data-kind" in pane


def test_a_prompt_past_the_models_context_gets_the_one_server_limit(tiny_dirs):
    """Where the model reads fewer tokens than the server allows, the page's one message names the smaller
    limit (it once said 'models/target reads at most 2048' above one size and 'at most 1,024' below it)."""
    preset = tiny_preset(tiny_dirs, examples=("x",))
    roomy = app_with({"tiny": preset}, max_prompt_tokens=100_000, max_new_tokens=100)
    positions = roomy.pairs.pair(preset).max_positions
    status, _ = outcome(roomy, prompt="x = 1\n" * positions)
    assert "status-error" in status and f"this server accepts at most {positions - 1:,}: shorten it" in status
    assert "reads at most" not in status


def test_a_refused_request_clears_the_last_races_figures(app):
    """After a good race, a refused one leaves no figure of the earlier race on screen (the strip once
    kept 'MEASURED SPEEDUP 1.88×' under the refusal)."""
    outcome(app)
    last = list(run_race(app, **{**GOOD, "prompt": "x = 1\n" * 20}))[-1]
    assert "status-error" in last.status
    assert last.strip == "" and last.ledger == "" and last.spec_pane == "" and last.base_pane == ""
    assert (last.plot_acceptance, last.plot_race, last.plot_hist, last.plot_position) == (None,) * 4


def test_custom_ids_when_allowed(tiny_dirs):
    app = app_with({"tiny": tiny_preset(tiny_dirs, examples=())}, allow_custom_models=True)
    status, _ = outcome(app, preset="custom", custom_target=tiny_dirs["target"], custom_draft=tiny_dirs["cut"])
    assert "local paths are not accepted" in status
    status, _ = outcome(app, preset="custom", custom_target="../../secret")
    assert "local paths are not accepted" in status
    status, _ = outcome(app, preset="custom", custom_target="specviz-test/not-on-this-machine", custom_draft="")
    assert "status-error" in status and "could not be reached" in status


def test_mismatched_custom_pair_is_reported(tiny_dirs, monkeypatch):
    from specviz.errors import LoadError
    app = app_with({"tiny": tiny_preset(tiny_dirs, examples=())}, allow_custom_models=True)
    def mismatch(*args, **kwargs):
        raise LoadError("the tokenizers of 'a/target' and 'b/draft' differ: a draft must share its target's tokenizer")
    monkeypatch.setattr("specviz.app.pairs.load_pair", mismatch)
    status, _ = outcome(app, preset="custom", custom_target="a/target", custom_draft="b/draft")
    assert "tokenizers of" in status.replace("&#x27;", "'")


def test_odd_but_valid_prompts_run(app):
    for prompt in ("\x00\x07\x1b[31m control", "emoji 😀🎉 and 数据", "right-to-left: שלום עולם مرحبا", "\u202e reversed"):
        status, pane = outcome(app, prompt=prompt)
        assert "status-done" in status and "\x1b" not in pane


def test_injection_payloads_as_prompt_and_stop_string(app):
    payload = '<img src=x onerror=alert(1)><script>alert(1)</script>'
    status, pane = outcome(app, prompt=payload, stop_strings=payload)
    assert "status-done" in status and "<img" not in pane and "<script" not in pane


def test_out_of_memory_is_a_message(app, monkeypatch):
    def oom(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory")
    pair = app.pairs.pair(app.pairs.preset("tiny"))
    monkeypatch.setattr(pair.target, "forward", oom)
    status, _ = outcome(app)
    assert "ran out of memory" in status
    monkeypatch.undo()
    assert "status-done" in outcome(app)[0]


def test_generate_api_errors_are_gr_errors(app):
    generate = generate_endpoint(app)
    assert generate("def f():", "tiny", max_new_tokens=8)["stop_reason"] in ("max_tokens", "eos")
    with pytest.raises(gr.Error, match="k must be between"):
        generate("def f():", "tiny", k=99)
    with pytest.raises(gr.Error, match="unknown model pair"):
        generate("def f():", "../../etc/passwd")


def test_a_presets_confidence_stop_is_the_default_and_the_form_overrides_it(tiny_dirs):
    from dataclasses import replace

    from specviz.app.request import RunRequest, settle
    app = app_with({"tiny": tiny_preset(tiny_dirs, examples=("x",), confidence_stop=0.5)}, **SMALL)
    req = RunRequest(prompt="def f():", preset="tiny")
    assert settle(app, req).config.confidence_stop == 0.5                          # left out: the pair's
    assert settle(app, replace(req, confidence_stop=0)).config.confidence_stop == 0.0  # the form's 0 turns it off


def test_generate_api_takes_a_confidence_stop(tiny_dirs):
    from dataclasses import replace
    from specviz.app.api import generate
    from specviz.app.request import RunRequest
    app = app_with({"tiny": tiny_preset(tiny_dirs, examples=("x",))}, **SMALL)
    req = RunRequest(prompt="def add(a, b):", preset="tiny", k=6, max_new_tokens=40)
    full = generate(app, req)["stats"]
    stopped = generate(app, replace(req, confidence_stop=0.9))["stats"]
    assert stopped["drafted"] / stopped["rounds"] < full["drafted"] / full["rounds"]


def test_a_finished_race_names_the_pair_and_settings_it_ran(app):
    """The verdict says which pair and settings it is of: a visitor who changes the menu mid-race
    would otherwise read the old pair's figures under the new pair's name."""
    status, _ = outcome(app, k=3, temperature=0.7)
    assert "status-done" in status
    assert 'id="race-ran">Ran: tiny · k = 3, temperature 0.7, ' in status
    status, _ = outcome(app, drafter="prompt_lookup")
    assert "Ran: tiny · prompt lookup drafting, k = 4, greedy, " in status
    status, _ = outcome(app, adaptive_k=True)
    assert "adaptive k from 4 (1–12)" in status


def test_the_ran_line_escapes_the_pair_name():
    from specviz.engine import SpecConfig
    from specviz.view.handlers import ran_line
    line = ran_line("<img src=x onerror=alert(1)>", SpecConfig())
    assert "<img" not in line and "&lt;img src=x onerror=alert(1)&gt;" in line


def test_one_click_settles_tokenizes_and_builds_the_ledger_once(app, monkeypatch):
    """A race settles its request, tokenizes its prompt and builds its ledger once each; its kinds chart
    comes from the fold and shows the same kinds as the trace it saves."""
    import json
    import re
    from specviz.app import request, settings
    from specviz.view import trace_files
    from specviz.view import handlers
    calls = {"settle": 0, "encode": 0, "ledger": 0}

    def counted(name, fn):
        def wrapper(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return wrapper
    monkeypatch.setattr(handlers, "settle", counted("settle", request.settle))
    monkeypatch.setattr(settings, "encode_prompt", counted("encode", settings.encode_prompt))
    monkeypatch.setattr(handlers, "build_ledger", counted("ledger", handlers.build_ledger))
    last = list(run_race(app, **GOOD))[-1]
    assert "status-done" in last.status and calls == {"settle": 1, "encode": 1, "ledger": 1}
    token = re.search(r'href="specviz/trace/([0-9a-f]{32})"', last.download).group(1)
    trace = json.loads(trace_files.find(token).read_text(encoding="utf-8"))
    shown = [x.replace("<br>", "_") for x in last.plot_kinds.data[0].x]
    assert shown and shown == [r["kind"] for r in trace["acceptance_by_kind"]]


# --- the engine's own checks: settings and prompts --------------------------------------
@pytest.mark.parametrize("bad", [
    dict(k=0), dict(k=33), dict(k=2.5), dict(k=True), dict(temperature=-1), dict(temperature=float("nan")),
    dict(temperature="hot"), dict(top_k=-1), dict(top_p=0), dict(top_p=1.5), dict(max_new_tokens=0),
    dict(max_new_tokens=10**6), dict(seed=-1), dict(drafter="oracle"), dict(k_min=5, k_max=2),
    dict(stop_strings=("",)), dict(adaptive_k="yes"),
])
def test_config_out_of_range(bad):
    with pytest.raises(ConfigError) as err:
        SpecConfig(**bad)
    assert "\n" not in str(err.value) and str(err.value)


@pytest.mark.parametrize("prompt", ["", "   \n\t", [], [10**7], [-1]])
def test_bad_prompts(pair, prompt):
    with pytest.raises(ConfigError):
        speculate(pair, prompt, SpecConfig())
    with pytest.raises(ConfigError):
        decode_baseline(pair, prompt, SpecConfig())


# --- 4: sampling parameters that underflow -------------------------------------------------
@pytest.mark.parametrize("field", ["temperature", "draft_temperature"])
def test_a_temperature_below_the_minimum_is_refused_in_one_line(field):
    with pytest.raises(ConfigError, match=f"^{field} must be 0 .greedy. or at least {MIN_TEMPERATURE:g}") as err:
        SpecConfig(**{field: 1e-39})
    assert "\n" not in str(err.value)
    SpecConfig(**{field: MIN_TEMPERATURE})      # the minimum itself is fine


# --- 5: one line for a visitor's mistake ---------------------------------------------------
def test_a_rejected_generate_value_logs_one_line_and_no_traceback(tiny_dirs, caplog):
    import gradio as gr
    from specviz.view.api import generate_endpoint
    app = tiny_app(tiny_dirs)
    with caplog.at_level("INFO"), pytest.raises(gr.Error) as err:
        generate_endpoint(app)("def f():", "tiny", k=99)
    assert err.value.print_exception is False                  # Gradio prints no traceback for it
    assert [r.getMessage().count("\n") for r in caplog.records] == [0] and "k must be between" in caplog.text


@pytest.mark.parametrize("changes, message", [
    (dict(prompt="abc \ud800 def"), "prompt contains"),
    (dict(seed=10**13), "seed must be between 0 and"),
])
def test_odd_values_get_one_line_naming_the_field(tiny_dirs, changes, message):
    app = tiny_app(tiny_dirs)
    last = list(run_lossless(app, 50, **{**FORM, **changes}))[-1]
    assert "status-error" in last[0] and message in last[0] and str(10**13 * 1_000_003)[:8] not in last[0]


# --- raw queue joins -------------------------------------------------------------------
def test_wrong_kinds_and_counts_of_values_are_refused_in_one_line(tiny_dirs):
    from specviz.view.serve import serve
    demo, url = serve(tiny_app(tiny_dirs))
    try:
        race = next(i for i, f in demo.fns.items() if f.api_name == "race")
        r = join_from(url, race, "s", form_values(stop_strings=[".", "\n"]), "x")
        assert r.status_code >= 400 and "must be text" in r.json()["detail"] and "\n" not in r.json()["detail"]
        r = join_from(url, generate_fn(demo), "s", LONG_GENERATE + [0.5] * 9, "x")
        assert r.status_code >= 400 and "takes 12 values, not 19" in r.json()["detail"]
        r = join_from(url, race, "s", form_values() + ["extra"], "x")
        assert r.status_code >= 400 and "values, not" in r.json()["detail"]
    finally:
        demo.close()
