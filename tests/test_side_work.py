"""A race says when this server's own work (a fetched model's conversion, a pair loading for another
visitor) ran beside it: other programs' load is measured from /proc minus this process, so work inside
the process would otherwise pass unseen (app/side_work.py)."""
from __future__ import annotations

import re
import threading
import time

import pytest

from specviz.app.side_work import KEEP_ENDED, MIN_CPU_S, SideWork, thread_cpu_s
from specviz.app.state import AppState
from specviz.view.handlers import run_race
from tests.test_blocking import FORM, tiny_presets


class Clocks:
    """A wall clock and per-call CPU readings the test sets by hand."""

    def __init__(self):
        self.wall, self.cpu, self.live = 0.0, 0.0, {}

    def work(self) -> SideWork:
        return SideWork(clock=lambda: self.wall, own_cpu=lambda: self.cpu,
                        live_cpu=lambda tid: self.live.get(tid))


def test_only_work_that_overlapped_and_took_cpu_is_named():
    c = Clocks()
    side = c.work()
    early = side.begin("loading A")
    c.wall, c.cpu = 5.0, 2.0
    side.end(early)                               # ended at 5, 2 s of CPU
    quick = side.begin("loading B")
    c.wall, c.cpu = 6.0, 2.01
    side.end(quick)                               # ended at 6, 0.01 s of CPU (failed at once)
    assert side.since(4.0) == ["loading A"]       # A overlapped [4, now]; B took too little CPU
    assert side.since(5.5) == []                  # A ended before the race began
    c.live[threading.get_native_id()] = 2.01 + MIN_CPU_S
    running = side.begin("converting the fetched M")
    assert side.since(5.5) == ["converting the fetched M"]     # still running, its thread's CPU so far
    c.live[threading.get_native_id()] = 2.02
    assert side.since(5.5) == []                  # running, but it has not yet taken real CPU
    c.live.clear()
    assert side.since(5.5) == ["converting the fetched M"]     # CPU unknown (no /proc): named, to be safe
    c.cpu = 9.0
    side.end(running)
    again = side.begin("loading A")
    c.cpu = 10.0
    side.end(again)
    assert side.since(0.0) == ["loading A", "converting the fetched M"]   # each once, oldest first


def test_finished_work_is_forgotten_beyond_a_bound():
    c = Clocks()
    side = c.work()
    for i in range(KEEP_ENDED + 10):
        c.wall += 1
        token = side.begin(f"job {i}")
        c.cpu += 1
        side.end(token)
    named = side.since(-1.0)
    assert len(named) == KEEP_ENDED and named[-1] == f"job {KEEP_ENDED + 9}"


def test_a_real_threads_cpu_is_read_while_it_runs():
    side = SideWork()
    t0 = side.now()
    started, stop = threading.Event(), threading.Event()

    def spin():
        with side.doing("spinning"):
            started.set()
            while not stop.is_set():
                sum(range(1000))
    worker = threading.Thread(target=spin)
    worker.start()
    started.wait()
    deadline = time.monotonic() + 10
    try:
        while side.since(t0) != ["spinning"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert side.since(t0) == ["spinning"]
        assert thread_cpu_s(worker.native_id) >= MIN_CPU_S
    finally:
        stop.set()
        worker.join()
    assert side.since(t0) == ["spinning"] and side.since(side.now() + 1) == []


def test_a_background_fetch_names_only_its_in_process_stages(monkeypatch):
    from specviz.models import fetch as fetch_module
    c = Clocks()
    side = c.work()
    seen = []

    def fake_fetch(source, progress, pip_output=None):
        progress("download", 0.05, "pip")         # pip's own process: /proc counts it as another program
        seen.append(side.since(-1.0))
        c.wall, c.cpu = 1.0, 0.0
        progress("extract", 0.45, "")
        progress("convert", 0.55, "")
        c.wall, c.cpu = 60.0, 55.0
        progress("ready", 1.0, "")
    monkeypatch.setattr(fetch_module, "fetch", fake_fetch)
    monkeypatch.setattr(fetch_module, "fetched", lambda hub_id: None)
    f = fetch_module.BackgroundFetch(side_work=side).start()
    f.join(10)
    assert f.ready and seen == [[]]
    assert side.since(30.0) == [f"converting the fetched {f.source.hub_id}"] and side.since(61.0) == []

    def failing(source, progress, pip_output=None):
        progress("convert", 0.55, "")
        c.cpu += 1.0
        raise fetch_module.FetchError("disk full")
    monkeypatch.setattr(fetch_module, "fetch", failing)
    c.wall = 100.0
    f = fetch_module.BackgroundFetch(side_work=side).start()
    f.join(10)
    assert f.state["stage"] == "failed" and side.since(99.0) == [f"converting the fetched {f.source.hub_id}"]
    assert all(span.ended is not None for span in side._spans.values())        # a failure ends its span too


def test_a_race_beside_a_load_says_so_and_one_alone_does_not(tiny_dirs):
    c = Clocks()
    app = AppState(presets=tiny_presets(tiny_dirs), device="cpu")
    app.side_work = c.work()
    c.cpu = 0.0
    app.pair(app.presets["tiny"])                 # loading registers itself (own_cpu did not move: 0 s)
    assert [s.what for s in app.side_work._spans.values()] == ["loading tiny"]
    alone = list(run_race(app, **{**FORM, "max_new": 16}))[-1].status
    assert "status-done" in alone and "While it ran" not in alone and "data-side-work" not in alone

    c.live[threading.get_native_id()] = 3.0       # another visitor's load, still running, 3 s of CPU so far
    token = app.side_work.begin("loading tiny, random draft")
    beside = list(run_race(app, **{**FORM, "max_new": 16}))[-1].status
    app.side_work.end(token)
    assert "While it ran, this server was also loading tiny, random draft, which took CPU" in beside
    assert re.search(r'data-side-work="loading tiny, random draft"', beside)


def test_side_work_names_reach_the_page_escaped(tiny_dirs):
    c = Clocks()
    app = AppState(presets=tiny_presets(tiny_dirs), device="cpu")
    app.side_work = c.work()
    c.live[threading.get_native_id()] = 3.0
    app.side_work.begin('loading <img src=x onerror="alert(1)">')
    status = list(run_race(app, **{**FORM, "max_new": 8}))[-1].status
    assert "<img" not in status and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in status


def test_a_visitors_own_model_ids_are_not_named_to_others(tiny_dirs, monkeypatch):
    from specviz.app.state import CUSTOM
    from specviz.errors import SpecvizError
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")                     # the load fails at once: its span stays
    c = Clocks()
    app = AppState(presets=tiny_presets(tiny_dirs), device="cpu", allow_custom_models=True)
    app.side_work = c.work()
    custom = app.choose(CUSTOM, "someone/private-model")
    with pytest.raises(SpecvizError):
        app.pair(custom)
    assert [s.what for s in app.side_work._spans.values()] == ["loading a pair a visitor named"]
