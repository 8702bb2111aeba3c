"""A race says when this server's own work (a fetched model's conversion, a pair loading for another
visitor) ran beside it: other programs' load is measured from /proc minus this process, so work inside
the process would otherwise pass unseen (app/side_work.py)."""
from __future__ import annotations

import re
import threading
import time

import pytest

from specviz.app.side_work import KEEP_ENDED, MIN_CPU_S, SideWork, thread_cpu_s
from specviz.view.handlers import run_race
from tests.helpers import app_with, form, tiny_presets

FORM = form(temperature=0.0, max_new_tokens=200)

ME = threading.get_native_id()


class Clocks:
    """A wall clock, this thread's CPU clock and the CPU clocks /proc would give, all set by hand."""

    def __init__(self):
        self.wall, self.cpu, self.live = 0.0, 0.0, {}

    def work(self) -> SideWork:
        return SideWork(clock=lambda: self.wall, own_cpu=lambda: self.cpu, live_cpu=lambda tid: self.live.get(tid))


def test_only_cpu_taken_during_the_race_counts():
    c = Clocks()
    side = c.work()
    c.cpu = c.live[ME] = 2.0
    conversion = side.begin("converting M")       # running; its thread's CPU clock at 2.0
    c.wall, c.live[ME] = 10.0, 60.0
    race = side.mark()                            # it computed 58 s before this race ...
    assert side.since(race) == []                 # ... and nothing since
    c.live[ME] = 60.0 + MIN_CPU_S
    assert side.since(race) == ["converting M"]   # a quarter second during the race: named
    c.wall, c.cpu = 11.0, 60.1
    side.end(conversion)                          # it ended 0.1 s of CPU into the race
    assert side.since(race) == []
    c.live.clear()
    side.begin("loading B")                       # running, its CPU unreadable (no /proc): named, to be safe
    assert side.since(side.mark()) == ["loading B"]


def test_work_over_before_the_mark_is_not_named():
    c = Clocks()
    side = c.work()
    token = side.begin("loading A")
    c.wall, c.cpu = 5.0, 9.0
    side.end(token)
    c.wall = 5.5
    assert side.since(side.mark()) == []
    quick = side.begin("loading B")
    c.wall, c.cpu = 6.0, 9.01                     # failed at once
    side.end(quick)
    assert side.since(side.mark()) == []


def test_work_begun_after_the_mark_counts_from_its_start_and_is_named_once():
    c = Clocks()
    side = c.work()
    race = side.mark()
    for what in ("loading A", "converting M", "loading A"):
        token = side.begin(what)
        c.wall, c.cpu = c.wall + 1, c.cpu + 1
        side.end(token)
    assert side.since(race) == ["loading A", "converting M"]       # each once, oldest first


def test_finished_work_is_forgotten_beyond_a_bound():
    c = Clocks()
    side = c.work()
    race = side.mark()
    for i in range(KEEP_ENDED + 10):
        c.wall += 1
        token = side.begin(f"job {i}")
        c.cpu += 1
        side.end(token)
    named = side.since(race)
    assert len(named) == KEEP_ENDED and named[-1] == f"job {KEEP_ENDED + 9}"


def test_a_real_threads_cpu_is_read_while_it_runs():
    side = SideWork()
    started, stop = threading.Event(), threading.Event()

    def spin():
        with side.doing("spinning"):
            started.set()
            while not stop.is_set():
                sum(range(1000))
    worker = threading.Thread(target=spin)
    worker.start()
    started.wait()
    race = side.mark()
    assert race.cpu and all(cpu is not None for cpu in race.cpu.values())      # read from /proc
    deadline = time.monotonic() + 10
    try:
        while side.since(race) != ["spinning"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert side.since(race) == ["spinning"]
        assert thread_cpu_s(worker.native_id) >= MIN_CPU_S
    finally:
        stop.set()
        worker.join()
    assert side.since(race) == ["spinning"]       # ended: its clock at the end, read in its own thread
    assert side.since(side.mark()) == []


def test_a_background_fetch_names_only_its_in_process_stages(monkeypatch):
    from specviz.models import fetch as fetch_module
    c = Clocks()
    side = c.work()
    race = side.mark()
    seen = []

    def fake_fetch(source, progress, pip_output=None):
        progress("download", 0.05, "pip")         # pip's own process: /proc counts it as another program
        seen.append(dict(side._spans))
        progress("extract", 0.45, "")
        progress("convert", 0.55, "")
        c.wall, c.cpu = 60.0, 55.0
        progress("ready", 1.0, "")
    monkeypatch.setattr(fetch_module, "fetch", fake_fetch)
    monkeypatch.setattr(fetch_module, "fetched", lambda hub_id: None)
    f = fetch_module.BackgroundFetch(side_work=side).start()
    f.join(10)
    assert f.ready and seen == [{}]
    assert side.since(race) == [f"converting the fetched {f.source.hub_id}"]

    def failing(source, progress, pip_output=None):
        progress("convert", 0.55, "")
        c.wall, c.cpu = c.wall + 1.0, c.cpu + 1.0
        raise fetch_module.FetchError("disk full")
    monkeypatch.setattr(fetch_module, "fetch", failing)
    c.wall = 100.0
    later = side.mark()
    f = fetch_module.BackgroundFetch(side_work=side).start()
    f.join(10)
    assert f.state["stage"] == "failed" and side.since(later) == [f"converting the fetched {f.source.hub_id}"]
    assert all(span.ended is not None for span in side._spans.values())        # a failure ends its span too


class Ticking(Clocks):
    """The wall clock and this thread's CPU clock move a second at every reading: every load takes real
    CPU, and no two moments are the same."""

    def work(self) -> SideWork:
        def wall():
            self.wall += 1.0
            return self.wall

        def cpu():
            self.cpu += 1.0
            return self.cpu
        return SideWork(clock=wall, own_cpu=cpu, live_cpu=lambda tid: self.live.get(tid))


def test_a_race_beside_a_load_says_so_and_its_own_load_does_not(tiny_dirs, quiet_machine):
    c = Ticking()
    app = app_with(tiny_presets(tiny_dirs), side_work=c.work())
    alone = list(run_race(app, **{**FORM, "max_new_tokens": 16}))[-1].status     # loads its own pair first
    assert [s.what for s in app.side_work._spans.values()] == ["loading tiny"]
    assert "status-done" in alone and "While it ran" not in alone and "data-side-work" not in alone

    c.live[ME] = 1.0                              # another visitor's load, running: its clock moves 3 s
    token = app.side_work.begin("loading tiny, random draft")
    real_mark = app.side_work.mark

    def mark_then_compute():
        m = real_mark()
        c.live[ME] = 4.0
        return m
    app.side_work.mark = mark_then_compute
    beside = list(run_race(app, **{**FORM, "max_new_tokens": 16}))[-1].status
    app.side_work.end(token)
    assert "This machine was busy (this server was loading tiny, random draft)" in beside
    assert re.search(r'data-side-work="loading tiny, random draft"', beside)


def test_side_work_names_reach_the_page_escaped(tiny_dirs):
    c = Clocks()
    app = app_with(tiny_presets(tiny_dirs), side_work=c.work())
    app.pairs.pair(app.pairs.presets["tiny"])
    app.side_work.begin('loading <img src=x onerror="alert(1)">')     # CPU unreadable: named
    status = list(run_race(app, **{**FORM, "max_new_tokens": 8}))[-1].status
    assert "<img" not in status and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in status


def test_a_visitors_own_model_ids_are_not_named_to_others(tiny_dirs, monkeypatch):
    from specviz.app.state import CUSTOM
    from specviz.errors import SpecvizError
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")                     # the load fails at once: its span stays
    c = Clocks()
    app = app_with(tiny_presets(tiny_dirs), allow_custom_models=True, side_work=c.work())
    custom = app.pairs.choose(CUSTOM, "someone/private-model")
    with pytest.raises(SpecvizError):
        app.pairs.pair(custom)
    assert [s.what for s in app.side_work._spans.values()] == ["loading a pair a visitor named"]
