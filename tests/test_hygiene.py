"""Issue 27, the rest: what a visitor's odd value, a broken file or a crowded disk costs.

Each test here failed before its fix: out-of-range values on /race, /step and /lossless were
refused by Gradio's own component checks before the app saw them (the page's status stuck on
"Starting …"); a seed sent as text was a TypeError; /generate without its defaulted fields was a
generic error; ...
"""
from __future__ import annotations

import html

import pytest

from .test_fair_service import FORM, tiny_app


# --- 5a, 5b: the app checks every value itself and answers in one line ----------------------
@pytest.fixture(scope="module")
def served(tiny_dirs):
    from gradio_client import Client
    from specviz.view.serve import serve
    demo, url = serve(tiny_app(tiny_dirs))
    yield Client(url, verbose=False)
    demo.close()


def _race(client, **changes):
    """The race's status line, unescaped."""
    return html.unescape(client.predict(*{**FORM, "chat": False, "max_new": 8, **changes}.values(), api_name="/race")[0])


@pytest.mark.parametrize("changes, message", [
    (dict(k=-1), "k must be between 1 and 12, not -1"),
    (dict(k=100), "k must be between 1 and 12, not 100"),
    (dict(max_new=99999), "max new tokens must be between 1 and 256, not 99999"),
    (dict(top_p=0), "top_p"),
    (dict(seed="seven"), "seed must be a whole number"),
    (dict(preset="nope"), "unknown model pair 'nope'"),
])
def test_an_out_of_range_race_value_gets_one_line_naming_the_field(served, changes, message):
    status = _race(served, **changes)
    assert "status-error" in status and message in status and "\n" not in status
    assert "Value" not in status and "Starting" not in status and "Racing" not in status


def test_a_numeric_string_is_read_as_its_number(served):
    assert "race-summary" in _race(served, seed="7")


def test_step_and_lossless_answer_out_of_range_values_in_one_line(served):
    form = {**FORM, "chat": False}
    pane, explain = served.predict(*{**form, "k": -1}.values(), api_name="/step")
    assert "status-error" in explain and "k must be between 1 and 12, not -1" in explain
    result, _ = served.predict(10, *form.values(), api_name="/lossless")
    assert "status-error" in result and "samples must be between 50 and 2000, not 10" in result


# --- 5c: /generate fills in the fields a client left out, or names the missing one ------------
def _call(url, api, data):
    import httpx
    r = httpx.post(f"{url}/gradio_api/call/{api}", json={"data": data}, timeout=10)
    if r.status_code != 200:
        return r.status_code, r.json()["detail"]
    return 200, httpx.get(f"{url}/gradio_api/call/{api}/{r.json()['event_id']}", timeout=60).text


def test_generate_applies_its_defaults_and_names_a_missing_field(served):
    status, text = _call(served.src.rstrip("/"), "generate", ["def f():", "tiny"])
    assert status == 200 and "event: complete" in text and "stop_reason" in text
    status, detail = _call(served.src.rstrip("/"), "generate", ["def f():"])
    assert status == 400 and detail == "/generate needs preset (after prompt): it has no default"
