"""Issue 27: no visitor can hold the app.

Each test here failed on the code before its fix: tiny temperatures and top-p crashed a run
with NaN probabilities; long jobs (lossless, step decode, /generate, workshop) held the only
decoding slot to the end and ignored Stop; one session could fill the whole queue; a failed
load was forgotten and tried again by every visitor; rejected values logged tracebacks.
"""
from __future__ import annotations

from dataclasses import replace
import pytest
import torch

from specviz.engine.loop.config import MIN_TEMPERATURE, SpecConfig
from specviz.engine.loop.sampling import warp


def test_a_tiny_top_p_keeps_the_most_likely_token():
    logits = torch.tensor([[3.0, 1.0, -2.0, 0.5]])
    for top_p in (1e-300, 1e-45, 1e-9):
        probs = warp(logits, SpecConfig(temperature=1.0, top_p=top_p))
        assert torch.isfinite(probs).all() and probs[0, 0] == 1.0
    probs = warp(torch.tensor([[80.0, -80.0, 0.0]]), SpecConfig(temperature=MIN_TEMPERATURE, top_p=1e-300))
    assert torch.isfinite(probs).all() and probs[0, 0] == 1.0


# --- 1, 2: long jobs run in slices and yield the slot --------------------------------------
import copy  # noqa: E402
import re  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from specviz.app.slots import FairSlots, Stopped, sliced  # noqa: E402


def test_slots_go_to_the_longest_waiter():
    slots = FairSlots(1)
    assert slots.acquire()
    order = []

    def wait(name):
        slots.acquire()
        order.append(name)
        slots.release()
    threads = []
    for name in "abc":
        threads.append(threading.Thread(target=wait, args=(name,)))
        threads[-1].start()
        time.sleep(0.1)
    slots.release()
    for t in threads:
        t.join(5)
    assert order == ["a", "b", "c"]


def test_a_sliced_job_lets_a_waiter_in_between_slices_and_stops():
    slots = FairSlots(1)
    log, stop = [], threading.Event()

    def long_job():
        for i in range(10_000):
            time.sleep(0.01)
            yield i
    def run_long():
        try:
            for i in sliced(slots, long_job(), stop.is_set, slice_s=0.05):
                log.append("long")
        except Stopped:
            log.append("stopped")
    runner = threading.Thread(target=run_long)
    runner.start()
    time.sleep(0.2)
    short = list(sliced(slots, iter(range(3)), slice_s=0.05))     # waits one slice at most
    log.append("short")
    assert short == [0, 1, 2] and runner.is_alive()
    stop.set()
    runner.join(2)
    assert not runner.is_alive() and log[-1] == "stopped" and "short" in log
    assert not slots.busy()                                       # every slot came back


# --- the app's long jobs, on the tiny pair ------------------------------------------------
from specviz.app.api import generate  # noqa: E402
from specviz.app.request import RunRequest  # noqa: E402
from specviz.models.presets import Preset  # noqa: E402
from specviz.view.tabs.lossless import run_lossless  # noqa: E402
from specviz.view.tabs.step import step_round  # noqa: E402
from tests.helpers import FORM, LONG_GENERATE, form_values, generate_fn, join_from, tiny_app, wait_for  # noqa: E402

def _in_thread(gen, sink: list):
    def drain():
        try:
            for item in gen:
                sink.append(item)
        except Exception as err:            # noqa: BLE001 (the test reads it)
            sink.append(err)
    t = threading.Thread(target=drain, daemon=True)
    t.start()
    return t


def test_a_long_lossless_check_lets_others_decode_and_honours_stop(tiny_dirs):
    app = tiny_app(tiny_dirs)
    updates: list = []
    check = _in_thread(run_lossless(app, 2000, **FORM), updates)
    wait_for(lambda: any(isinstance(u[-1], threading.Event) for u in updates if isinstance(u, tuple)))
    t0 = time.monotonic()
    out = generate(app, RunRequest(prompt="def f(x):\n", preset="tiny", max_new_tokens=16))   # another visitor
    assert out["stop_reason"] in ("max_tokens", "eos") and time.monotonic() - t0 < 5
    assert check.is_alive()                                              # the check was still running
    cancel = next(u[-1] for u in updates if isinstance(u, tuple) and isinstance(u[-1], threading.Event))
    cancel.set()                                                         # Stop
    check.join(5)
    assert not check.is_alive()
    assert "Stopped after" in updates[-1][0] and "2000" not in updates[-1][0]
    assert not app.decoders.busy()


def test_the_lossless_check_refuses_more_work_than_its_budget_in_one_line(tiny_dirs):
    app = tiny_app(tiny_dirs, lossless_token_budget=10_000)
    last = list(run_lossless(app, 2000, **{**FORM, "prompt": "import os\nimport sys\n" * 3}))[-1]
    assert "status-error" in last[0] and "at most" in last[0] and "samples" in last[0]
    assert "<br>" not in last[0]


def test_generate_and_step_end_when_the_visitor_is_gone(tiny_dirs):
    from specviz.app.slots import Stopped
    app = tiny_app(tiny_dirs)
    calls = []
    def gone():
        calls.append(1)
        return len(calls) > 3
    with pytest.raises(Stopped):
        generate(app, RunRequest(prompt="def f(x):\n", preset="tiny", max_new_tokens=200), stop=gone)
    assert not app.decoders.busy()
    pane, explain, state = step_round(app, None, **{**FORM, "temperature": 0.0}, stop=lambda: True)
    assert state is None and "stopped" in explain.lower()


def test_one_visitors_step_clicks_take_turns_and_others_run_beside_them(tiny_dirs, monkeypatch):
    """Step mode runs without a Gradio concurrency limit, so two clicks of one visitor may come at once:
    they share one state object and take its turn, so the run is decoded once and the two clicks show
    rounds 1 and 2, never round 1 twice."""
    from specviz.app import gpu_calls
    app = tiny_app(tiny_dirs)
    run_stream, decodes = gpu_calls.run_stream, []

    def slow_stream(*args, **kwargs):
        decodes.append(1)
        for record in run_stream(*args, **kwargs):
            time.sleep(0.01)
            yield record
    monkeypatch.setattr(gpu_calls, "run_stream", slow_stream)
    state, shown = {}, []
    form = {**FORM, "temperature": 0.0, "max_new_tokens": 24}
    clicks = [threading.Thread(target=lambda: shown.append(step_round(app, state, **form)[1])) for _ in range(2)]
    for t in clicks:
        t.start()
    for t in clicks:
        t.join(60)
    assert len(decodes) == 1 and len(shown) == 2
    assert sorted(re.search(r"Round (\d+):", e).group(1) for e in shown) == ["1", "2"]
    assert copy.deepcopy(state)["next"] == state["next"]        # the state (with its turn) still copies


def test_workshop_runs_go_in_slices_and_end_when_the_visitor_is_gone(tiny_dirs):
    from specviz.app.slots import Stopped
    from specviz.app import workshop
    app = tiny_app(tiny_dirs)
    app.pairs.presets["bundled"] = app.pairs.presets["tiny"]           # the exercises' "fast" pair
    done = threading.Event()
    endless = iter(lambda: time.sleep(0.02), 1)            # another visitor's endless job, in slices
    def hold():
        with pytest.raises(Stopped):
            for _ in app.decoders.sliced(endless, done.is_set):
                pass
    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    t0 = time.monotonic()
    assert workshop.race_stats(app, "bundled", max_new_tokens=16).tokens["spec"][-1] > 0
    assert time.monotonic() - t0 < 20                      # it got its turns
    with app.decoders.job(lambda: True), pytest.raises(Stopped):     # the visitor left
        workshop.race_stats(app, "bundled", max_new_tokens=16)
    done.set()
    holder.join(2)
    assert not holder.is_alive() and not app.decoders.busy()


# --- 2, 3: the queue is shared fairly; a failing load is remembered --------------------------
def test_a_failed_load_is_remembered_for_a_while_and_answered_at_once():
    from specviz.app.pair_cache import PairCache
    now = [100.0]
    cache = PairCache(2, remember_failures_s=60, clock=lambda: now[0])
    calls = []

    def failing():
        calls.append(1)
        raise OSError("offline: could not reach the hub")
    for _ in range(3):
        with pytest.raises(OSError, match="offline"):
            cache.get("hub", failing)
    assert calls == [1]                       # tried once, then answered from memory
    now[0] += 61
    assert cache.get("hub", lambda: "loaded") == "loaded"


def test_the_app_answers_a_pair_that_failed_to_load_without_loading_it_again(tiny_dirs, monkeypatch, tmp_path):
    # A pair whose folder holds no model fails with a one-line LoadError; the next visitors asking for it
    # get the same line at once, and the load is not tried again while the failure is remembered.
    from specviz.app import pairs
    from specviz.models.presets import Preset
    from specviz.errors import LoadError
    app = tiny_app(tiny_dirs)
    broken = Preset("broken", "broken pair", str(tmp_path / "missing"), str(tmp_path / "missing"), 4, ("x",))
    app.pairs.presets["broken"] = broken
    tries = []
    real = pairs.load_pair
    monkeypatch.setattr(pairs, "load_pair", lambda *a, **kw: tries.append(1) or real(*a, **kw))
    for _ in range(3):
        with pytest.raises(LoadError, match="broken pair could not be loaded") as err:
            app.pairs.pair(broken)
        assert "\n" not in str(err.value) and str(tmp_path) not in str(err.value)
    assert tries == [1]


def _join(url, fn_index, session, data):
    import httpx
    body = {"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None, "trigger_id": None}
    return httpx.post(f"{url}/gradio_api/queue/join", json=body, timeout=10)


def test_one_session_cannot_fill_the_queue(tiny_dirs):
    from specviz.view.serve import serve
    app = tiny_app(tiny_dirs, queue_size=6, jobs_per_session=2)
    demo, url = serve(app)
    try:
        fn = next(i for i, f in demo.fns.items() if f.api_name == "generate")
        args = ["def f(x):\n", "tiny", 4, 0.0, 0, 1.0, 64, 0, "model", False]
        codes = [_join(url, fn, "flooder", args) for _ in range(6)]
        assert [r.status_code for r in codes[:2]] == [200, 200]
        refused = codes[2:]
        assert all(r.status_code == 400 for r in refused)          # in the app's words (a 503 shows Gradio's "busy")
        assert "at most 2" in refused[0].json()["detail"]
        assert _join(url, fn, "someone-else", args).status_code == 200   # everyone else still gets in
    finally:
        demo.close()


def test_a_loading_pair_holds_up_no_one_on_a_loaded_pair(tiny_dirs, monkeypatch):
    from gradio_client import Client
    from specviz.view.serve import serve
    app = tiny_app(tiny_dirs, queue_size=3)     # the two waiting on the load hold two places (worker threads)
    app.pairs.presets["slow"] = Preset("slow", "slow", "owner/slow-target", None, 4, ("x",))
    release, load = threading.Event(), app.pairs._load

    def slow_load(preset):
        if preset.key == "slow":
            release.wait(60)
            raise OSError("offline")
        return load(preset)
    monkeypatch.setattr(app.pairs, "_load", slow_load)
    demo, url = serve(app)
    try:
        args = ["def f(x):\n", "slow", 4, 0.0, 0, 1.0, 8, 0, "model", False]
        for session in ("a", "b"):                               # two visitors wait on the loading pair
            assert _join(url, next(i for i, f in demo.fns.items() if f.api_name == "generate"), session,
                         args).status_code == 200
        time.sleep(0.5)
        job = Client(url, verbose=False).submit("def f(x):\n", "tiny", 4, 0.0, 0, 1.0, 8, 0, "model", False,
                                                api_name="/generate")
        assert job.result(timeout=20)["stop_reason"] in ("max_tokens", "eos")   # not stuck behind the loads
    finally:
        release.set()
        demo.close()


# --- 6: no uploads -------------------------------------------------------------------------
def test_uploads_are_refused(tiny_dirs):
    import httpx
    from specviz.view.serve import serve
    demo, url = serve(tiny_app(tiny_dirs))
    try:
        r = httpx.post(f"{url}/gradio_api/upload", files={"files": ("big.bin", b"x" * 200_000)}, timeout=10)
        assert r.status_code >= 400
    finally:
        demo.close()


def test_exercise_one_names_the_bigger_of_its_two_round_costs(tiny_dirs):
    """Exercise 1's explanation prices a round as k c + v and names whichever share is bigger (it once
    blamed the draft steps alone, while the verify pass cost far more on a CPU)."""
    from specviz.app import workshop
    from specviz.engine.metrics import measures
    app = tiny_app(tiny_dirs)
    app.pairs.presets["bundled"] = app.pairs.presets["tiny"]
    outcome = workshop.race(app)
    stats = outcome.chart[1]
    c, v = stats.cost_ratio(), stats.verify_ratio()
    k = measures.drafts_per_round(stats.tallies["spec"])
    assert f"a round costs {k * c + v:.2f} plain steps" in outcome.why
    # each part with its own value (it read "3.91 × c = 0.25", as if c were 0.25)
    assert f"{k:.3g} draft steps at c = {c:.3f} each ({k * c:.2f}), then a verify pass at v = {v:.2f}" in outcome.why
    named = "Most of the extra is the verify pass" if v - 1 >= k * c else "Most of the extra is drafting"
    assert named in outcome.why
    # a is accepted / judged, and the passes' yield is the strip's tau (tokens / passes)
    t = stats.tallies["spec"]
    assert f"it accepted {t.accepted / (t.accepted + t.rejected):.0%} of the drafts it judged" in outcome.why
    assert f"each pass yielded {t.tokens / t.rounds:.2f} tokens" in outcome.why


def test_every_workshop_answer_names_the_pair_settings_and_prompt_it_ran(tiny_dirs):
    """A class compares answers: each one says which pair, settings and prompt produced it, the
    answers that measured too little included."""
    from specviz.app.workshop import EXERCISES
    app = tiny_app(tiny_dirs)
    app.pairs.presets["tiny"] = replace(app.pairs.presets["tiny"], label="tiny pair", k=3,
                                  examples=("def add(a, b):\n    return", "import os"))
    ran = {ex.key: ex.run(app).ran for ex in EXERCISES}
    assert all(line.startswith("tiny pair · ") for line in ran.values()), ran
    assert ran["race"] == "tiny pair · k = 3, greedy, 96 new tokens at most · prompt “def add(a, b): …”"
    assert ran["passes"].endswith("prompt “import os”")                       # the pair's last example
    assert ran["lookup"] == ("tiny pair · k = 3, greedy, 48 new tokens at most; then prompt lookup drafting, "
                             "k = 3, greedy, 48 new tokens at most · prompt “def total_price(items): …”")
    assert "greedy, 64 new tokens at most; then k = 3, temperature 1, seed 1, 64" in ran["temperature"]
    assert "then k = 3, greedy, the draft sampling at temperature 2 (seed 3), 64" in ran["bad-draft"]
    assert "k = 1 to 8" in ran["best-k"] and "sampled 300 times" in ran["lossless"]
    assert "k = 4, greedy, 64 new tokens at most; then token tree 2,2,1,1, greedy, 64" in ran["tree"]


def test_the_ran_line_names_every_setting_that_changes_the_run():
    from specviz.app.run_setup import ran_text, settings_text
    from specviz.engine import SpecConfig
    assert settings_text(SpecConfig(k=3, max_new_tokens=96)) == "k = 3, greedy, 96 new tokens at most"
    sampled = SpecConfig(k=4, temperature=0.7, seed=9, top_k=50, top_p=0.9, adaptive_k=True, k_min=1, k_max=12,
                         confidence_stop=0.3, drafter="prompt_lookup", max_new_tokens=20)
    assert settings_text(sampled) == ("prompt lookup drafting, adaptive k from 4 (1–12), temperature 0.7, seed 9, "
                                      "top-k 50, top-p 0.9, drafting stops below p = 0.3, 20 new tokens at most")
    assert ran_text("pair", "k = 1", "\n\n  " + "x" * 60) == f"pair · k = 1 · prompt “{'x' * 48} …”"
    assert ran_text("pair", "k = 1", "   ") == "pair · k = 1"



# --- races that shared the device (concurrency_per_device > 1) -----------------------------

def test_slots_note_which_jobs_held_one_while_another_was_held():
    from specviz.app.slots import Sharing
    slots = FairSlots(2)
    a, b, c = Sharing(), Sharing(), Sharing()
    assert slots.acquire(holder=a)
    slots.release(a)
    assert slots.acquire(holder=b)                 # one at a time: nobody shared
    slots.release(b)
    assert not a.shared and not b.shared
    assert slots.acquire(holder=a) and slots.acquire(holder=c)     # two at once: both are told
    slots.release(a)
    slots.release(c)
    assert a.shared and c.shared and not b.shared
    assert not slots.busy()


def test_a_slot_handed_over_is_not_sharing_and_an_anonymous_holder_counts():
    from specviz.app.slots import Sharing
    slots, first, second = FairSlots(1), Sharing(), Sharing()
    assert slots.acquire(holder=first)
    got = []
    waiter = threading.Thread(target=lambda: got.append(slots.acquire(holder=second)))
    waiter.start()
    deadline = time.monotonic() + 5
    while not slots._waiters and time.monotonic() < deadline:     # queued behind the holder
        time.sleep(0.01)
    assert len(slots._waiters) == 1
    slots.release(first)                           # handed over: one holder at a time
    waiter.join(2)
    assert got == [True] and not first.shared and not second.shared
    slots.release(second)
    wide, job = FairSlots(2), Sharing()
    assert wide.acquire()                          # e.g. Decoders.hold(): a holder with no note
    assert wide.acquire(holder=job)
    wide.release()
    wide.release(job)
    assert job.shared and not wide.busy()


def test_a_race_that_shared_the_device_with_another_says_so(tiny_dirs, quiet_machine):
    from specviz.view.handlers import run_race
    from tests.helpers import app_with, form, tiny_presets
    app = app_with(tiny_presets(tiny_dirs), concurrency_per_device=2)
    alone = list(run_race(app, **form(temperature=0.0, max_new_tokens=16)))[-1].status
    assert "status-done" in alone and "at the same time" not in alone and "data-shared" not in alone
    held, done = threading.Event(), threading.Event()

    def other_job():                               # another job holds the second slot all along
        with app.decoders.hold():
            held.set()
            done.wait(30)
    other = threading.Thread(target=other_job)
    other.start()
    assert held.wait(10)
    try:
        beside = list(run_race(app, **{**FORM, "max_new_tokens": 16}))[-1].status
    finally:
        done.set()
        other.join(5)
    assert "another decoding job ran beside it" in beside and 'data-shared="1"' in beside


def test_a_release_without_its_note_still_frees_the_slot():
    from specviz.app.slots import Sharing
    slots = FairSlots(1)
    assert slots.acquire(holder=Sharing())
    slots.release()                                # the note forgotten: no slot may leak
    assert not slots.busy() and slots.acquire() and slots.busy()
    slots.release()


# --- two pairs loading at once; every load failure is one line -----------------------------
def test_models_built_in_two_threads_at_once_both_load_whole(tiny_dirs):
    from specviz.models.loading import load_model
    solo = load_model(tiny_dirs["target"], torch.device("cpu"), torch.float32).state_dict()
    built, errors = [], []

    def build(name):
        try:
            built.append((name, load_model(tiny_dirs[name], torch.device("cpu"), torch.float32)))
        except Exception as err:          # noqa: BLE001 (the test reads it)
            errors.append(err)
    for _ in range(3):
        threads = [threading.Thread(target=build, args=(n,)) for n in ("target", "cut", "random", "target")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert errors == []
    for name, model in built:
        assert not any(p.is_meta for p in model.parameters())
        if name == "target":                       # the very weights of a load on its own
            assert all(torch.equal(v, solo[k]) for k, v in model.state_dict().items())


def test_an_unexpected_failure_inside_a_load_is_a_transient_one_line_load_error(tiny_dirs, monkeypatch):
    from transformers import AutoModelForCausalLM
    from specviz.errors import LoadError
    from specviz.models.loading import load_model

    def meta(*args, **kwargs):
        raise NotImplementedError("Cannot copy out of meta tensor; no data!\nsecond line")
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", meta)
    with pytest.raises(LoadError) as err:
        load_model(tiny_dirs["target"], torch.device("cpu"), torch.float32)
    assert err.value.transient and "\n" not in str(err.value) and "meta tensor" in str(err.value)


def test_a_transient_load_failure_is_not_remembered():
    from specviz.app.pair_cache import PairCache
    from specviz.errors import LoadError
    cache = PairCache(2, remember_failures_s=60)
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise LoadError("could not load the model: Cannot copy out of meta tensor", transient=True)
        return "loaded"
    with pytest.raises(LoadError):
        cache.get("bundled", flaky)
    assert cache.get("bundled", flaky) == "loaded" and calls == [1, 1]


def test_the_app_turns_any_load_failure_into_a_one_line_load_error_it_retries(tiny_dirs, monkeypatch):
    from specviz.app import pairs
    from specviz.errors import LoadError
    app = tiny_app(tiny_dirs)
    app.pairs.presets["again"] = Preset("again", "again", tiny_dirs["target"], tiny_dirs["cut"], 4, ("x",))
    load, calls = pairs.load_pair, []

    def broken_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("/srv/secret/path went wrong\nmore")
        return load(*args, **kwargs)
    monkeypatch.setattr(pairs, "load_pair", broken_once)
    with pytest.raises(LoadError) as err:
        app.pairs.pair(app.pairs.preset("again"))
    assert "\n" not in str(err.value) and "/srv" not in str(err.value) and err.value.transient
    assert app.pairs.pair(app.pairs.preset("again")) is not None and len(calls) == 2      # tried again at once


def test_generate_answers_an_unexpected_failure_in_one_line(tiny_dirs, monkeypatch, caplog):
    import gradio as gr
    from specviz.view import api
    app = tiny_app(tiny_dirs)

    def boom(*args, **kwargs):
        raise RuntimeError("/srv/app/secret.py exploded")
    monkeypatch.setattr(api, "generate", boom)
    with pytest.raises(gr.Error) as err:
        api.generate_endpoint(app)("def f():", "tiny")
    assert "RuntimeError" in err.value.message and "/srv" not in err.value.message
    assert "\n" not in err.value.message and err.value.print_exception is False


# --- a bound on admitted work that no client can dodge ---------------------------------------
class _Request:
    def __init__(self, host, forwarded=None):
        self.client = type("Client", (), {"host": host})()
        self.headers = {"x-forwarded-for": forwarded} if forwarded is not None else {}


def test_the_client_key_is_the_peer_or_the_rightmost_outside_forwarded_address():
    from specviz.view.client_address import client_key
    assert client_key(_Request("127.0.0.1", "203.0.113.9"), trust_forwarded=False) == "127.0.0.1"
    # behind a trusted proxy: what it appended on the right, past its own internal hops; a forged
    # address the client put first does not count
    seen = client_key(_Request("10.16.3.80", "6.6.6.6, 198.51.100.7, 10.0.0.2"), trust_forwarded=True)
    assert seen == "198.51.100.7"
    assert client_key(_Request("10.16.3.80", "not-an-ip"), trust_forwarded=True) == "10.16.3.80"


def test_new_session_ids_from_one_address_do_not_reset_its_cap(tiny_dirs, monkeypatch):
    from specviz.view.serve import serve
    monkeypatch.setenv("SPECVIZ_TRUST_FORWARDED", "1")
    demo, url = serve(tiny_app(tiny_dirs, queue_size=20, jobs_per_session=2, jobs_per_address=3))
    try:
        fn = generate_fn(demo)
        codes = [join_from(url, fn, f"fresh-{i}", LONG_GENERATE, "198.51.100.7") for i in range(6)]
        assert [r.status_code for r in codes[:3]] == [200] * 3
        assert all(r.status_code == 400 for r in codes[3:])        # in the app's words, never Gradio's "busy" (503)
        assert "Your address already has 3 requests" in codes[3].json()["detail"]
        assert join_from(url, fn, "other", LONG_GENERATE, "198.51.100.8").status_code == 200   # another client gets in
        step = next(i for i, f in demo.fns.items() if f.api_name == "step")        # step mode shares the cap
        r = join_from(url, step, "fresh-step", [None] + form_values(), "198.51.100.7")
        assert r.status_code == 400 and "the most one address may hold" in r.json()["detail"]
    finally:
        demo.close()


def test_requests_nobody_reads_do_not_fill_the_server(tiny_dirs, monkeypatch):
    """A client that joins with a new session id each time and never opens a result stream uses its own
    address's places only: once its joins have gone unread for UNREAD_AFTER_S, they do not count against
    the server's total, and a client that reads its results finds room."""
    from gradio_client import Client
    from specviz.view import fair_queue
    from specviz.view.serve import serve
    monkeypatch.setenv("SPECVIZ_TRUST_FORWARDED", "1")
    now = [time.monotonic()]              # the caps' clock, moved by hand: no join races a wall-clock window
    demo, url = serve(tiny_app(tiny_dirs, queue_size=3, jobs_per_address=10), clock=lambda: now[0])
    try:
        fn = generate_fn(demo)
        codes = [join_from(url, fn, f"unread-{i}", LONG_GENERATE, "198.51.100.7") for i in range(4)]
        assert [r.status_code for r in codes[:3]] == [200] * 3
        assert codes[3].status_code == 400 and "server is full" in codes[3].json()["detail"]   # young: counted
        now[0] += fair_queue.UNREAD_AFTER_S + 60              # unread for longer than UNREAD_AFTER_S: not counted
        assert join_from(url, fn, "unread-4", LONG_GENERATE, "198.51.100.7").status_code == 200
        reader = Client(url, verbose=False, headers={"X-Forwarded-For": "198.51.100.8"})
        out = reader.predict("def f(x):\n", "tiny", 4, 0.0, 0, 1.0, 16, 0, "model", False, api_name="/generate")
        assert out["token_ids"]
    finally:
        demo.close()


def test_a_refused_join_builds_no_session_and_sessions_kept_are_bounded(tiny_dirs, monkeypatch):
    """Gradio builds a session's state (every block's config, ~0.2 MB) for each session id it meets, and
    keeps 10,000 by default: a client inventing one per request grew the server by gigabytes. A join the
    caps refuse builds none, and the app keeps at most SESSIONS_KEPT."""
    from specviz.view.serve import serve
    from specviz.view.ui import SESSIONS_KEPT
    monkeypatch.setenv("SPECVIZ_TRUST_FORWARDED", "1")
    demo, url = serve(tiny_app(tiny_dirs, queue_size=20, jobs_per_address=2))
    try:
        assert demo.state_session_capacity == SESSIONS_KEPT < 10_000
        fn = generate_fn(demo)
        codes = [join_from(url, fn, f"invented-{i}", LONG_GENERATE, "198.51.100.9") for i in range(12)]
        assert [r.status_code for r in codes[:2]] == [200] * 2 and all(r.status_code != 200 for r in codes[2:])
        held = demo.state_holder.session_data
        assert not any(f"invented-{i}" in held for i in range(2, 12))        # the refused ones: no state built
    finally:
        demo.close()


def test_the_queue_limit_counts_decoding_work_already_running(tiny_dirs, monkeypatch):
    """Past queue_size the address that holds the server's places is refused in one line; another address,
    under its fair share, still joins (one address never locks the rest out), up to twice queue_size."""
    from specviz.view.fair_queue import admitted
    from specviz.view.serve import serve
    monkeypatch.setenv("SPECVIZ_TRUST_FORWARDED", "1")
    now = [time.monotonic()]              # held still: unread joins stay counted however slow the machine
    demo, url = serve(tiny_app(tiny_dirs, queue_size=3, jobs_per_address=100), clock=lambda: now[0])
    try:
        fn = generate_fn(demo)
        codes = [join_from(url, fn, f"s{i}", LONG_GENERATE, "198.51.100.1") for i in range(5)]
        assert [r.status_code for r in codes[:3]] == [200] * 3
        wait_for(lambda: len(admitted(demo._queue)) == 3)     # running or waiting for the app's slots
        assert codes[3].status_code == 400 and "server is full" in codes[3].json()["detail"]
        others = [join_from(url, fn, f"o{i}", LONG_GENERATE, f"198.51.100.{i + 2}") for i in range(4)]
        assert [r.status_code for r in others] == [200, 200, 200, 400]     # each under its share, till 2 x 3
    finally:
        demo.close()


def test_a_job_whose_client_never_opens_its_stream_stops(tiny_dirs, monkeypatch):
    from specviz.view import visitor
    from specviz.view.fair_queue import admitted
    from specviz.view.serve import serve
    from specviz.app import gpu_calls
    monkeypatch.setattr(visitor, "OPEN_WITHIN_S", 1.0)
    run_stream, records = gpu_calls.run_stream, []

    def slow_stream(*args, **kwargs):          # about 0.1 s a round: 3 whole runs would take 15 s or more
        for record in run_stream(*args, **kwargs):
            time.sleep(0.1)
            records.append(record)
            yield record
    monkeypatch.setattr(gpu_calls, "run_stream", slow_stream)
    app = tiny_app(tiny_dirs, queue_size=20, jobs_per_session=20, jobs_per_address=20)
    demo, url = serve(app)
    try:
        fn = generate_fn(demo)
        start = time.monotonic()
        for i in range(3):
            assert join_from(url, fn, f"walked-away-{i}", LONG_GENERATE, "x").status_code == 200
        wait_for(lambda: not admitted(demo._queue) and not app.decoders.busy(), timeout=40)
        assert time.monotonic() - start < 6 and records == []     # nobody read them: no slot was taken
    finally:
        demo.close()


def test_a_client_that_reads_its_stream_is_served_beside_one_that_never_does(tiny_dirs, monkeypatch):
    from gradio_client import Client
    from specviz.view import visitor
    from specviz.view.serve import serve
    monkeypatch.setattr(visitor, "OPEN_WITHIN_S", 1.0)
    demo, url = serve(tiny_app(tiny_dirs))
    try:
        assert join_from(url, generate_fn(demo), "walked-away", LONG_GENERATE, "x").status_code == 200
        out = Client(url, verbose=False).predict("def f(x):\n", "tiny", 4, 0.0, 0, 1.0, 32, 0, "model", False,
                                                 api_name="/generate")
        assert out["stop_reason"] in ("max_tokens", "eos") and out["token_ids"]
    finally:
        demo.close()


def test_the_heap_is_trimmed_at_most_once_in_its_gap(monkeypatch):
    from specviz.app import heap
    calls, now = [], [1000.0]
    monkeypatch.setattr(heap, "_malloc_trim", lambda: calls.append)
    monkeypatch.setattr(heap, "_last", [0.0])
    assert heap.trim(lambda: now[0]) and calls == [0]
    now[0] += heap.MIN_GAP_S / 2
    assert not heap.trim(lambda: now[0]) and calls == [0]
    now[0] += heap.MIN_GAP_S
    assert heap.trim(lambda: now[0]) and calls == [0, 0]


def test_the_arena_cap_is_set_unless_the_environment_says(monkeypatch):
    from specviz.app import heap
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert heap.limit_arenas() is False                  # the environment's own setting stands
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    import ctypes.util
    if ctypes.util.find_library("c") and "glibc" in " ".join(__import__("platform").libc_ver()):
        assert heap.limit_arenas() is True               # glibc: mallopt(M_ARENA_MAX, 2) accepted


def test_a_finished_sliced_job_trims_the_heap(monkeypatch):
    from specviz.app import heap
    trims = []
    monkeypatch.setattr(heap, "trim", lambda: trims.append(1))
    assert list(sliced(FairSlots(1), iter(range(3)))) == [0, 1, 2] and trims == [1]
