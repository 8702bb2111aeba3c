"""Loading a downloaded trace replays its race in the page: a race on the bundled pair, its trace saved
and read back, fills the race tab exactly as the race did (panes, meters, strip, ledger, headline and
why, every chart); a file that is not a replayable trace is refused in one line, with its text escaped."""
from __future__ import annotations

import json
import re

import pytest

from specviz.models.presets import tier_presets
from specviz.view import trace_files
from specviz.view.handlers import run_race
from specviz.view.replay import replay_trace
from specviz.view.trace_read import MAX_BYTES
from tests.helpers import ADD, app_with, form

XSS = '<img src=x onerror=alert(1)>"\'><script>alert(2)</script>'
FORM = form(prompt=ADD, preset="bundled", temperature=0.0, max_new_tokens=24)
SHOWN = ("spec_pane", "base_pane", "spec_meter", "base_meter", "strip", "ledger")
PLOTS = ("plot_acceptance", "plot_race", "plot_hist", "plot_position", "plot_kinds")


@pytest.fixture(scope="module")
def app():
    return app_with({"bundled": tier_presets()["bundled"]})


def _race(app, **changes):
    """A race's last update and its saved trace's text."""
    last = list(run_race(app, **{**FORM, **changes}))[-1]
    token = re.search(r"specviz/trace/([0-9a-f]{32})", last.download).group(1)
    return last, trace_files.find(token).read_text(encoding="utf-8")


def _part(status: str, elem_id: str) -> str:
    return re.search(rf'<[^>]* id="{elem_id}"[^>]*>.*?</(div|p)>', status, re.S).group(0)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_a_replayed_trace_shows_the_race_it_records(app, temperature):
    ran, text = _race(app, temperature=temperature)
    again = replay_trace(text)
    assert "status-done" in again.status and 'data-replayed="1"' in again.status
    for name in SHOWN:
        assert getattr(again, name) == getattr(ran, name), name
    assert 'data-kind="accepted"' in again.spec_pane and 'data-kind="target"' in again.base_pane
    for elem_id in ("race-headline", "race-why"):
        assert _part(again.status, elem_id) == _part(ran.status, elem_id), elem_id
    assert re.search(r'data-verdict="[^"]*"', again.status).group(0) == re.search(r'data-verdict="[^"]*"',
                                                                                   ran.status).group(0)
    for name in PLOTS:
        assert getattr(again, name).to_json() == getattr(ran, name).to_json(), name
    assert "specviz/trace/" not in again.download        # a replay offers no download of its own


def test_a_version_1_trace_still_replays(app):
    ran, text = _race(app)
    trace = json.loads(text)
    trace["specviz_trace"] = 1
    del trace["pair"], trace["dtype"]
    again = replay_trace(json.dumps(trace))
    assert again.spec_pane == ran.spec_pane and "status-done" in again.status
    assert trace["models"]["target"] in again.status       # the pair named by its models


def _damaged(text: str, change) -> str:
    trace = json.loads(text)
    change(trace)
    return json.dumps(trace)


BAD = {
    "empty": lambda t: "",
    "not JSON": lambda t: t[: len(t) // 2],
    "a list": lambda t: "[1, 2, 3]",
    "another JSON": lambda t: json.dumps({"name": XSS, "version": 1}),
    "a newer version": lambda t: _damaged(t, lambda d: d.update(specviz_trace=99)),
    "a version of the wrong kind": lambda t: _damaged(t, lambda d: d.update(specviz_trace=XSS)),
    "no settings": lambda t: _damaged(t, lambda d: d.pop("config")),
    "foreign settings": lambda t: _damaged(t, lambda d: d["config"].update({XSS: 1})),
    "settings out of range": lambda t: _damaged(t, lambda d: d["config"].update(k=XSS)),
    "no events": lambda t: _damaged(t, lambda d: d.update(events=[])),
    "an event of no kind": lambda t: _damaged(t, lambda d: d["events"][3].update(kind=XSS)),
    "a probability above 1": lambda t: _damaged(t, lambda d: next(e for e in d["events"] if "p" in e).update(p=2.0)),
    "an event that is not a record": lambda t: _damaged(t, lambda d: d["events"].insert(1, XSS)),
    "one lane only": lambda t: _damaged(t, lambda d: d.update(events=[e for e in d["events"] if e["lane"] == "spec"])),
    "too large": lambda t: t[:-1] + ', "pad": "' + "x" * MAX_BYTES + '"}',
    # valid events that make no one race: a real trace's events repeated (a replay ten times the work)
    "events repeated": lambda t: _damaged(t, lambda d: d.update(events=d["events"] * 3)),
    "rounds out of order": lambda t: _damaged(t, _swap_rounds),
    "more tokens than its max_new_tokens": lambda t: _damaged(t, lambda d: d["config"].update(max_new_tokens=2)),
    "a round padded with events": lambda t: _damaged(t, _pad_round),
}


def _swap_rounds(d):
    """The speculative lane's first two rounds' events in the other order."""
    spec = [i for i, e in enumerate(d["events"]) if e["lane"] == "spec" and e["kind"] != "done"]
    ends = [i for i in spec if d["events"][i]["kind"] == "round_end"]
    first = [d["events"][i] for i in spec if i <= ends[0]]
    second = [d["events"][i] for i in spec if ends[0] < i <= ends[1]]
    rest = [e for i, e in enumerate(d["events"]) if i not in spec or i > ends[1]]
    d["events"] = second + first + rest


def _pad_round(d):
    accepted = next(e for e in d["events"] if e["kind"] == "accepted")
    at = d["events"].index(accepted)
    d["events"][at:at] = [accepted] * 40


@pytest.mark.parametrize("kind", list(BAD))
def test_a_file_that_is_no_replayable_trace_is_refused_in_one_line(app, kind, caplog):
    _, text = _race(app, max_new_tokens=8)
    out = replay_trace(BAD[kind](text))
    assert "status-error" in out.status, (kind, out.status)
    line = re.sub(r"<[^>]+>", "", out.status)
    assert "\n" not in line and "Traceback" not in line and line.strip(), (kind, line)
    assert XSS not in out.status and "<script" not in out.status and "<img" not in out.status
    assert out.spec_pane == out.base_pane == out.ledger == "" and "specviz/trace/" not in out.download
    assert "Traceback" not in caplog.text


def test_model_text_in_a_trace_is_escaped_when_replayed(app):
    _, text = _race(app, max_new_tokens=8)

    def poison(d):
        d["prompt"] = XSS
        d["pair"] = XSS
        for e in d["events"]:
            if "piece" in e:
                e["piece"] = XSS
    out = replay_trace(_damaged(text, poison))
    assert "status-done" in out.status and "&lt;script&gt;" in out.spec_pane
    for name in (*SHOWN, "status"):
        value = getattr(out, name)
        assert "<script" not in value and "<img" not in value, name
