"""The first minute: while the default pair warms up the page says so, with the time likely left, and
a page opened meanwhile starts its first race by itself once the pair is ready (the browser half is in
tests/test_browser_room.py). Nothing here waits on a wall-clock window: the clock is moved by hand."""
from __future__ import annotations

import threading

from specviz.app.warming import FIRST_GUESS_S, Warming, warming_text
from specviz.view import warm_notice
from tests.helpers import app_with, tiny_preset, wait_for


def test_warming_says_the_time_left_and_learns_the_last_warm_up(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_HOME", str(tmp_path))
    now = [100.0]
    warming = Warming(clock=lambda: now[0])
    assert warming.left("tiny") is None
    warming.began("tiny", "tiny <pair>")
    assert warming.left("tiny") == ("tiny <pair>", FIRST_GUESS_S)
    now[0] += 12
    assert warming.left("tiny")[1] == FIRST_GUESS_S - 12
    warming.ended("tiny")
    assert warming.left("tiny") is None
    warming.began("tiny", "tiny <pair>")               # the next start guesses what the last one took
    assert warming.left("tiny")[1] == 12.0
    text = warming_text("tiny <pair>", 12.0)
    assert text.startswith("Warming up (about 12 s)") and "starts by itself" in text


def test_the_page_line_counts_down_then_says_ready_and_escapes_the_label(tiny_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_HOME", str(tmp_path))
    preset = tiny_preset(tiny_dirs, label='tiny <img src=x onerror=alert(1)>')
    app = app_with({"tiny": preset})
    assert list(warm_notice.notices(app, poll_s=0)) == [""]          # not warming: nothing to say
    release, load = threading.Event(), app.pairs._load

    def slow_load(p):
        release.wait(60)
        return load(p)
    monkeypatch.setattr(app.pairs, "_load", slow_load)
    app.pairs.preload(preset)
    lines = warm_notice.notices(app, poll_s=0.01)
    first = next(lines)
    assert 'data-warm="warming"' in first and "Warming up (about" in first and "<img" not in first
    release.set()
    rest = list(lines)
    assert rest[-1] == warm_notice.READY and app.pairs.loaded("tiny")


def test_a_race_asked_for_during_warm_up_says_so_and_runs_when_ready(tiny_dirs, tmp_path, monkeypatch):
    from specviz.view.handlers import run_race
    from tests.helpers import form
    monkeypatch.setenv("SPECVIZ_HOME", str(tmp_path))
    preset = tiny_preset(tiny_dirs)
    app = app_with({"tiny": preset})
    release, load = threading.Event(), app.pairs._load
    monkeypatch.setattr(app.pairs, "_load", lambda p: (release.wait(60), load(p))[1])
    app.pairs.preload(preset)
    race = run_race(app, **form(temperature=0.0, max_new_tokens=8))
    first = next(race)
    assert "Warming up (about" in first.status
    release.set()
    last = list(race)[-1]
    assert "status-done" in last.status
    wait_for(lambda: app.pairs.warming.left("tiny") is None)


def test_a_warm_up_ends_after_the_pairs_timing_which_holds_the_decoding_slot(tiny_dirs, tmp_path, monkeypatch):
    """The k advice times a loaded pair in a decoding slot; a background warm-up that ended at load would
    leave the first visitor's race waiting behind that timing. It ends once the timing has."""
    monkeypatch.setenv("SPECVIZ_HOME", str(tmp_path))
    preset = tiny_preset(tiny_dirs)
    app = app_with({"tiny": preset})
    release = threading.Event()
    timing = threading.Thread(target=release.wait, args=(60,), daemon=True)
    app.pairs.on_loaded = lambda p, pair: (timing.start(), timing)[1]
    app.pairs.preload(preset)
    wait_for(lambda: app.pairs.loaded("tiny") and timing.is_alive())
    assert app.pairs.warming.left("tiny") is not None           # loaded, but still warming: timing the pair
    release.set()
    wait_for(lambda: app.pairs.warming.left("tiny") is None)


def test_the_advisor_hands_back_its_timing_only_when_it_times(tiny_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_HOME", str(tmp_path))
    app = app_with({"tiny": tiny_preset(tiny_dirs)})
    app.advisor.enabled = False
    assert app.advisor.measure_later(tiny_preset(tiny_dirs), app.pairs.pair(tiny_preset(tiny_dirs))) is None
