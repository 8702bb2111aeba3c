"""One visitor never blocks another, and Stop and "Start over" really end the work.

Each test here failed before its fix: the pair cache held one lock through a whole load;
step mode slept between reveals while holding the decoding slot and kept a live generator in
the session state; the record path (ZeroGPU's) ignored Stop; on ZeroGPU the main process ran
models (the warm-up race at start, step mode, the lossless check, /generate).
"""
import pickle
import re
import threading
import time

import pytest

from specviz.app import zerogpu
from specviz.app.pair_cache import PairCache
from specviz.app import gpu_calls as work
from specviz.app.api import generate
from specviz.app.request import RunRequest
from specviz.view.handlers import run_race
from specviz.view.tabs.lossless import run_lossless
from specviz.view.tabs.step import STEP_MAX_TOKENS, reset_steps, step_clicks, step_round
from tests.helpers import app_with, form, tiny_presets

FORM = form(temperature=0.0, max_new_tokens=200)


def test_a_slow_load_blocks_neither_other_pairs_nor_loads_twice():
    cache = PairCache(3)
    ready = object()
    cache.get("ready", lambda: ready)
    started, release = threading.Event(), threading.Event()
    loads = []

    def slow():
        loads.append(1)
        started.set()
        assert release.wait(10)
        return "slow pair"
    got = {}
    first = threading.Thread(target=lambda: got.setdefault("first", cache.get("slow", slow)))
    first.start()
    assert started.wait(5)
    other = threading.Thread(target=lambda: got.setdefault("other", cache.get("ready", lambda: None)))
    other.start()
    other.join(5)
    assert got.get("other") is ready and not release.is_set()     # answered while the slow load runs
    second = threading.Thread(target=lambda: got.setdefault("second", cache.get("slow", slow)))
    second.start()
    release.set()
    first.join(5)
    second.join(5)
    assert got["first"] == got["second"] == "slow pair" and loads == [1]   # the same load, once


def test_a_failed_load_reaches_its_waiters_and_is_tried_again():
    cache = PairCache(2)
    with pytest.raises(RuntimeError):
        cache.get("bad", lambda: (_ for _ in ()).throw(RuntimeError("no such model")))
    assert not cache.cached("bad")
    assert cache.get("bad", lambda: "fixed") == "fixed"


def test_step_mode_never_sleeps_and_keeps_only_plain_data(tiny_dirs, monkeypatch):
    app = app_with(tiny_presets(tiny_dirs))
    monkeypatch.setattr(time, "sleep", lambda s: pytest.fail(f"step mode slept {s} s"))
    pane, explain, state = step_round(app, None, **FORM)
    assert "Round 1:" in explain and 'data-round="1"' in pane
    assert pickle.loads(pickle.dumps(state)) == state              # records, not a live generator
    pane2, explain2, state = step_round(app, state, **FORM)
    unwrap = lambda html: re.sub(r'<span class="new-round">|</span>$', "", html)     # noqa: E731
    assert "Round 2:" in explain2 and unwrap(pane2).startswith(unwrap(pane))
    assert pane2.count('class="new-round"') == 1                  # only the newest round is revealed anew
    assert reset_steps()[2] == {}


def test_step_mode_answers_every_counted_click_in_one_event(tiny_dirs):
    """The page sends its count of clicks; one event reveals every round not yet answered, in order,
    the rounds it revealed animated together; a count already answered answers one click."""
    app = app_with(tiny_presets(tiny_dirs))
    form_k2 = {**FORM, "k": 2}
    _, one, by_one = step_round(app, None, **form_k2)
    for _ in range(3):
        pane_by_one, one, by_one = step_round(app, by_one, **form_k2)
    assert "Round 4:" in one
    pane, explain, state, timeline = step_clicks(app, 1, None, **form_k2)
    assert "Round 1:" in explain and state["clicks"] == 1 and timeline.count('class="tl-b tl-verify"') == 1
    pane, explain, state, timeline = step_clicks(app, 4, state, **form_k2)        # three clicks while one was answered
    assert "Round 4:" in explain and state["clicks"] == 4 and timeline.count('class="tl-b tl-verify"') == 4
    assert explain == one                                               # the same round as one click at a time
    assert pane.count('class="new-round"') == 1
    assert pane.count("data-round=") == pane_by_one.count("data-round=")   # the pane holds rounds 1-4
    new = pane[pane.index('<span class="new-round">'):]
    assert 'data-round="2"' in new and 'data-round="4"' in new and 'data-round="1"' not in new
    pane, explain, state, timeline = step_clicks(app, 0, state, **form_k2)        # a count that started over: one click
    assert "Round 5:" in explain and state["clicks"] == 5
    pane, explain, state, timeline = step_clicks(app, 10**9, state, **form_k2)     # never more rounds than a run has
    assert "Finished" in explain and state["finished"]
    assert state["clicks"] <= 5 + STEP_MAX_TOKENS + 1
    pane, explain, state, timeline = step_clicks(app, "not a number", state, **form_k2)    # after Finished: anew
    assert "Round 1:" in explain


def test_stop_ends_a_race_on_the_record_path(tiny_dirs):
    app = app_with(tiny_presets(tiny_dirs), via_records=True)
    updates = run_race(app, **FORM)
    cancel = None
    for update in updates:
        cancel = next((u for u in update if isinstance(u, threading.Event)), None)
        if cancel is not None:
            break
    cancel.set()                                                  # what the Stop button does
    last = list(updates)[-1]
    assert "Stopped." in last[0]
    assert last[3].count('data-kind="') < 20                      # far short of the 200 tokens asked for


def test_zerogpu_emulation_decodes_only_inside_gpu_functions(tiny_dirs, monkeypatch):
    """The ZeroGPU shape, emulated: everything crossing into a `gpu` function is pickled, and
    a model running outside one (the main process, where ZeroGPU has no GPU) fails the test."""
    monkeypatch.setattr(zerogpu, "EMULATE", True)
    monkeypatch.setattr(work, "_warm", set())
    app = app_with(tiny_presets(tiny_dirs), via_records=True, on_zerogpu=True)
    app.pairs.load_all()                                                # start-up: load, never run
    outside = []
    for key in app.pairs.presets:
        pair = app.pairs.pair(app.pairs.preset(key))
        for model in (pair.target, pair.draft):
            model.register_forward_pre_hook(lambda m, a: None if zerogpu.in_worker() else outside.append(m))
    for key in app.pairs.presets:                                       # switching pairs
        form = {**FORM, "preset": key, "max_new_tokens": 24}
        assert "status-done" in list(run_race(app, **form))[-1].status
        assert "Round 1:" in step_round(app, None, **form)[1]
        assert "samples" in list(run_lossless(app, 50, **{**form, "temperature": 1.0}))[-1][0]
        out = generate(app, RunRequest(prompt="def f(x):\n", preset=key, max_new_tokens=8))
        assert out["stop_reason"] in ("max_tokens", "eos")
    assert outside == []
    assert work._warm == set(app.pairs.presets)                         # warmed up in the worker, once per pair
    assert "turned off" in list(run_race(app, **{**FORM, "custom_target": "owner/name"}))[-1].status
    late = app_with(tiny_presets(tiny_dirs), on_zerogpu=True)   # nothing loaded at start
    assert "was not loaded when this Space started" in list(run_race(late, **FORM))[-1].status


def test_the_page_says_why_lanes_differ():
    """Greedy lanes can only part through low-precision rounding (bf16 on a GPU); sampled lanes by chance."""
    from specviz.engine.analysis.ledger import build
    from specviz.engine.loop.events import Done
    from specviz.engine.metrics.measures import LaneStats, LaneTally
    from specviz.view.handlers import _summary
    from specviz.view.race_view import RaceView
    spec_t, base_t = (LaneTally(rounds=2, drafted=8, accepted=5, rejected=2, tokens=8, elapsed_s=0.5),
                      LaneTally(tokens=8, elapsed_s=0.6))
    led = build(spec_t, base_t)
    view = RaceView(4)

    def lanes(spec_ids, base_ids):
        view.dones = {"spec": Done(text="", token_ids=spec_ids, stop_reason="max_tokens", stats=LaneStats(spec_t)),
                      "base": Done(text="", token_ids=base_ids, stop_reason="max_tokens", stats=LaneStats(base_t),
                                   lane="base")}
    lanes(list(range(8)), [*range(7), 99])
    assert "bfloat16" in _summary(view, led, None, True, "torch.bfloat16") and "float32 they are identical" in \
        _summary(view, led, None, True, "torch.bfloat16")
    assert "same distribution" in _summary(view, led, None, False, "torch.float32")
    assert "please report" in _summary(view, led, None, True, "torch.float32")
    lanes(list(range(8)), list(range(8)))
    assert "parted" not in _summary(view, led, None, True, "torch.bfloat16")


def test_step_mode_says_why_a_round_drafted_fewer_than_k(tiny_dirs):
    """A round the confidence stop cut short says so, with the threshold; the last rounds, cut by the
    token budget, say that instead; full rounds say neither."""
    app = app_with(tiny_presets(tiny_dirs))
    form = {**FORM, "k": 6, "max_new_tokens": 40, "confidence_stop": 0.9}
    state, explanations = None, []
    while True:
        _, explain, state = step_round(app, state, **form)
        if state["finished"]:
            break
        explanations.append(explain)
    rounds = [(e, int(m.group(1))) for e in explanations if (m := re.search(r"proposes (\d+) tokens?", e))]
    stopped = [e for e, _ in rounds if "the confidence stop" in e]
    budget = [e for e, _ in rounds if "may still be written" in e]
    assert stopped and all("not k = 6" in e and "a probability below 0.9" in e for e in stopped)
    assert budget and all("may still be written" in e for e, _ in rounds[-len(budget):])   # only the last rounds
    assert all(("not k = 6" in e) == (n < 6) for e, n in rounds)
