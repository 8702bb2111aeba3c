"""The settings table (app/form_table.py): every surface made from it, every range inside SpecConfig's,
and a share link that accepts exactly what Run accepts."""
from __future__ import annotations

import inspect
from dataclasses import fields

import pytest

from specviz.app.form_table import (API_FIELDS, BY_NAME, FORM_FIELDS, HOST, OPTIONAL, PAGE_WORDS, PAIR, SETTINGS,
                                    form_default, request_default, span)
from specviz.app.profile import LIMIT_KEYS, Limits
from specviz.app.request import RunRequest
from specviz.app.settings import ENGINE_FIELDS, make_config
from specviz.engine.loop.config import K_RANGE, MAX_NEW_TOKENS_RANGE, SpecConfig
from specviz.errors import ConfigError
from specviz.models.presets import Preset
from specviz.view.api import SIGNATURE
from specviz.view.form_fill import FILLED, opened
from specviz.view.share import form_defaults, read_link
from tests.helpers import app_with

# The largest hosting limits a profile may set (app/profile.py): the widest span a slider can get.
WIDEST = Limits(max_new_tokens=LIMIT_KEYS["max_new_tokens"][1], k_range=(1, 32))


@pytest.fixture(scope="module")
def app(tiny_dirs):
    return app_with({"code": Preset("code", "code pair", tiny_dirs["target"], tiny_dirs["cut"], 4, ("x",))})


def _accepted(name: str, value) -> bool:
    try:
        SpecConfig(**{name: value})
    except ConfigError:
        return False
    return True


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.name in ENGINE_FIELDS], ids=lambda s: s.name)
def test_every_span_and_default_lies_inside_specconfigs_range(setting):
    """A slider's every stop, at the widest host limits, and each default, are values SpecConfig takes."""
    for limits in (Limits(), WIDEST):
        bounds = span(setting, limits)
        if bounds is not None:
            low, high, step = bounds
            stops = [round(low + i * step, 6) for i in range(int(round((high - low) / step)) + 1)]   # as shown
            assert stops[-1] == pytest.approx(high)
            assert all(_accepted(setting.name, int(v) if setting.kind == "int" else v) for v in stops), setting.name
        default = form_default(setting, limits, Preset("p", "p", "t", "d", 4, ()))
        if setting.kind in ("int", "float", "switch", "menu"):
            assert _accepted(setting.name, default)
    if setting.request != PAIR and setting.kind in ("int", "float", "switch", "menu"):
        assert _accepted(setting.name, setting.request)


def test_the_host_limits_that_top_a_slider_lie_inside_specconfigs():
    assert LIMIT_KEYS["max_new_tokens"][1] <= MAX_NEW_TOKENS_RANGE[1] and WIDEST.k_range[1] <= K_RANGE[1]
    assert {s.name for s in SETTINGS if s.span and s.span[1] == HOST} == {"k", "max_new_tokens"}


def test_request_form_fill_link_and_api_are_made_from_the_table():
    assert tuple(f.name for f in fields(RunRequest)) == FORM_FIELDS
    assert all(getattr(RunRequest(), s.name) == request_default(s) for s in SETTINGS)
    assert set(FILLED) >= {s.name for s in SETTINGS if s.link}
    assert tuple(SIGNATURE.parameters) == API_FIELDS
    # /generate's clients send values by position: its order stays as it was published.
    assert API_FIELDS == ("prompt", "preset", "k", "temperature", "top_k", "top_p", "max_new_tokens", "seed",
                          "drafter", "chat", "confidence_stop", "rule")
    params = SIGNATURE.parameters
    assert params["prompt"].default is inspect.Parameter.empty and params["preset"].default is inspect.Parameter.empty
    assert params["chat"].default is None and params["confidence_stop"].default is None
    assert PAGE_WORDS["max_new_tokens"] == "max new tokens" and "seed" not in PAGE_WORDS


def test_per_surface_defaults_are_the_tables(app):
    """max new tokens: the page's 128 (capped by the host), an API call's 64; the table says so once."""
    assert BY_NAME["max_new_tokens"].default == 128 and BY_NAME["max_new_tokens"].request == 64
    preset = app.pairs.presets["code"]
    assert form_defaults(app, preset)["max_new_tokens"] == min(128, app.limits.max_new_tokens)
    assert form_defaults(app_with({}, max_new_tokens=50), preset)["max_new_tokens"] == 50
    assert set(form_defaults(app, preset)) == set(OPTIONAL)
    assert RunRequest().max_new_tokens == SIGNATURE.parameters["max_new_tokens"].default == 64


def _run_accepts(app, name: str, value) -> bool:
    values = {s.name: request_default(s) for s in SETTINGS}
    values.update({"confidence_stop": 0.0, name: value})
    try:
        make_config(values, app.limits)
    except ConfigError:
        return False
    return True


# The disagreements the two validators had, and the edges of each range.
CASES = [("temperature", "0.0005"), ("temperature", "0.001"), ("temperature", "3"), ("temperature", "5"),
         ("temperature", "5.5"), ("temperature", "0"), ("top_k", "500"), ("top_k", "-1"), ("top_p", "0.01"),
         ("top_p", "0"), ("top_p", "1.5"), ("k", "12"), ("k", "13"), ("max_new_tokens", "256"),
         ("max_new_tokens", "257"), ("seed", "4294967295"), ("seed", "4294967296"), ("confidence_stop", "0.95"),
         ("confidence_stop", "0.96"), ("drafter", "prompt_lookup"), ("drafter", "oracle"), ("tree", "2,2,1,1"),
         ("tree", "9,9,9"), ("stop_strings", "END"), ("stop_strings", "a\nb\nc\nd\ne")]


@pytest.mark.parametrize("name, raw", CASES)
def test_a_link_accepts_exactly_what_run_accepts(app, name, raw):
    got = read_link(app, {name: raw})
    kind = BY_NAME[name].kind
    value = float(raw) if kind == "float" else int(raw) if kind == "int" else raw
    assert (getattr(got, name) is not None) == _run_accepts(app, name, value), got.problems
    assert bool(got.problems) != (getattr(got, name) is not None)


def test_a_link_value_beyond_a_sliders_span_stretches_the_slider(app):
    """temperature 3, top-k 500 and top-p 0.01: the API takes them, so a link may carry them; the slider
    widens to show the value rather than clamp it."""
    got = opened(app, {"temperature": "3", "top_k": "500", "top_p": "0.01", "max_new_tokens": "20"})
    assert got["temperature"]["value"] == 3 and got["temperature"]["maximum"] == 3
    assert got["top_k"]["value"] == 500 and got["top_k"]["maximum"] == 500
    assert got["top_p"]["value"] == 0.01 and got["top_p"]["minimum"] == 0.01
    assert got["max_new_tokens"] == 20 and "status-error" not in got["note"]


def test_the_temperature_top_is_written_once_per_meaning():
    """The engine's (SpecConfig) and the page's slider (the table); the rules tab reads the table's."""
    from specviz.engine.loop.config import TEMPERATURE_MAX
    from specviz.view.tabs.rules import T_MAX
    assert T_MAX == BY_NAME["temperature"].span[1] <= TEMPERATURE_MAX
    assert _accepted("temperature", TEMPERATURE_MAX) and not _accepted("temperature", TEMPERATURE_MAX + 0.1)


def test_the_scripts_build_requests_by_the_tables_names():
    """A script outside the test suite (scripts/zerogpu_check.py needs its own environment) that builds a
    RunRequest by keyword uses the table's names: a renamed field would otherwise fail only there."""
    import ast
    from pathlib import Path

    named = []
    for script in sorted((Path(__file__).resolve().parent.parent / "scripts").glob("*.py")):
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "RunRequest":
                named += [(script.name, k.arg) for k in node.keywords if k.arg is not None]
    assert ("zerogpu_check.py", "max_new_tokens") in named
    assert [(name, arg) for name, arg in named if arg not in FORM_FIELDS] == []
