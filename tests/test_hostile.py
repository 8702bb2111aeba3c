"""No visitor can hold the app, third round: every event bounded by client, turns round robin by
client, replays bounded like decodes, sessions that stay while they are in use, the upload route
closed, trace links that live their hour, and bad values answered in one short line.

Each test counts, refuses or looks at what a response holds; none measures time. Each fails on the
code before its fix (the load figures are scripts/load_test.py --hostile's)."""
from __future__ import annotations

import asyncio
import json
import threading
from types import SimpleNamespace

import pytest

from specviz.app.slots import FairSlots
from tests.helpers import LONG_GENERATE, form_values, generate_fn, join_from, tiny_app, wait_for


def _waiting(slots: FairSlots) -> int:
    return slots.waiting()


# --- turns go round robin between clients, not jobs ----------------------------------------
def test_a_client_with_many_jobs_gets_one_turn_in_each_round():
    slots = FairSlots(1)
    assert slots.acquire()
    order, threads = [], []

    def wait(name, client):
        slots.acquire(client=client)
        order.append(name)
        slots.release()
    for name, client in (("a1", "A"), ("a2", "A"), ("a3", "A"), ("b1", "B"), ("c1", "C"), ("b2", "B")):
        threads.append(threading.Thread(target=wait, args=(name, client)))
        threads[-1].start()
        wait_for(lambda n=len(threads): _waiting(slots) == n)      # joined in this order
    slots.release()
    for t in threads:
        t.join(10)
    assert order == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_jobs_without_a_client_are_still_served_in_the_order_they_asked():
    slots = FairSlots(1)
    assert slots.acquire()
    order, threads = [], []
    for name in "xyz":
        threads.append(threading.Thread(target=lambda n=name: (slots.acquire(), order.append(n), slots.release())))
        threads[-1].start()
        wait_for(lambda k=len(threads): _waiting(slots) == k)
    slots.release()
    for t in threads:
        t.join(10)
    assert order == ["x", "y", "z"]


def test_a_served_decoding_job_takes_its_turn_as_its_clients(tiny_dirs, monkeypatch):
    """The client key reaches the slots from the request (view/visitor.py's current_client)."""
    from specviz.app import slots
    from specviz.view.serve import serve
    monkeypatch.setenv("SPECVIZ_TRUST_FORWARDED", "1")
    app = tiny_app(tiny_dirs)
    seen = []
    acquire = app.decoders.slots.acquire

    def noting(stop=slots.never, holder=None, client=None, session=None, **more):
        seen.append(client)
        return acquire(stop, holder, client, session, **more)
    app.decoders.slots.acquire = noting
    demo, url = serve(app)
    try:
        from gradio_client import Client
        Client(url, verbose=False, headers={"X-Forwarded-For": "198.51.100.77"}).predict(
            "def f(x):\n", "tiny", 4, 0.0, 0, 1.0, 8, 0, "model", False, api_name="/generate")
        assert seen and set(seen) == {"198.51.100.77"}
    finally:
        demo.close()
        slots.default_client = lambda: None


# --- every event through the per-client bounds ----------------------------------------------
def _event(client, session="s", group="decode", alive=True):
    request = SimpleNamespace(client=SimpleNamespace(host=client), headers={})
    return SimpleNamespace(request=request, session_hash=session, concurrency_id=group, alive=alive)


def test_the_per_client_cap_counts_stop_replays_and_clicks_too():
    from specviz.app.profile import Limits
    from specviz.view.fair_queue import admission
    limits = Limits(jobs_per_address=3, queue_size=32)
    held = [_event("6.6.6.6", f"s{i}", group) for i, group in enumerate(("stop", "replay", "ui"))]
    refusal = admission(held, "new", "6.6.6.6", limits, work=False)       # one more Stop
    assert refusal and "Your address already has 3 requests" in refusal
    assert admission(held, "new", "7.7.7.7", limits, work=False) is None   # another client is not touched


def test_replays_count_in_the_servers_total():
    from specviz.app.profile import Limits
    from specviz.view.fair_queue import admission
    limits = Limits(jobs_per_address=100, queue_size=4)
    held = [_event("10.1.1.1", f"s{i}", "replay") for i in range(4)]
    assert "server is full" in admission(held, "new", "10.1.1.1", limits, work=True)


def test_a_full_server_still_takes_an_address_under_its_share():
    """One hostile address filling the server's places locks nobody else out: another address joins while
    it holds fewer than its fair share (queue_size over the clients holding work), up to twice queue_size."""
    from specviz.app.profile import Limits
    from specviz.view.fair_queue import admission
    limits = Limits(jobs_per_address=1000, queue_size=8)
    held = [_event("6.6.6.6", f"h{i}") for i in range(8)]
    assert "server is full" in admission(held, "h-new", "6.6.6.6", limits)
    for i in range(4):                                    # the school: under its share of 8 / 2
        assert admission(held, f"tab-{i}", "school", limits) is None
        held.append(_event("school", f"tab-{i}"))
    assert "server is full" in admission(held, "tab-4", "school", limits)
    more = [_event(f"10.0.0.{i}", f"x{i}") for i in range(4)]
    assert "server is full" in admission(held + more, "late", "10.9.9.9", limits)    # twice queue_size: the ceiling


def test_a_client_that_left_frees_its_places_at_once():
    from specviz.app.profile import Limits
    from specviz.view.fair_queue import held
    queue = SimpleNamespace(event_ids_to_events={i: _event("6.6.6.6", f"s{i}", alive=i == 0) for i in range(4)})
    assert len(held(queue)) == 1      # Gradio marked three gone: they hold no place
    from specviz.view.fair_queue import admission
    assert admission(held(queue), "new", "6.6.6.6", Limits(jobs_per_address=2)) is None


def test_a_stream_notices_its_client_leaving_within_a_second():
    """Gradio's stream looks whether its client left only between messages (10 s with none): the
    session's queue answers a heartbeat after NOTICE_S, so the stream looks that often."""
    from gradio.server_messages import HeartbeatMessage
    from specviz.view import visitor

    async def read():
        return await visitor.Listened().get()
    assert isinstance(asyncio.run(asyncio.wait_for(read(), 5 * visitor.NOTICE_S)), HeartbeatMessage)


def test_joins_of_any_event_are_capped_per_client_per_second():
    from specviz.view.fair_queue import JOIN_BURST_S, JoinRate
    now = [0.0]
    rate = JoinRate(5, clock=lambda: now[0])
    burst = int(5 * JOIN_BURST_S)
    assert [rate.take("A") for _ in range(burst + 5)] == [True] * burst + [False] * 5
    assert rate.take("B")                        # another client has its own
    now[0] += 1.0
    assert [rate.take("A") for _ in range(6)] == [True] * 5 + [False]


def test_a_served_app_turns_away_a_churn_of_stops_from_one_address(tiny_dirs, monkeypatch):
    from specviz.view.serve import serve
    monkeypatch.setenv("SPECVIZ_TRUST_FORWARDED", "1")
    now = [0.0]                      # the caps' clock, held still: however slow the machine, no join refills
    demo, url = serve(tiny_app(tiny_dirs, joins_per_second=1), clock=lambda: now[0])
    try:
        stop = next(i for i, f in demo.fns.items() if f.api_name == "stop")
        codes = [join_from(url, stop, f"churn-{i}", [None], "203.0.113.5") for i in range(12)]
        refused = [r for r in codes if r.status_code != 200]
        assert len(refused) == 12 - 3         # a burst of 3 seconds' worth, then none till the clock moves
        assert all(r.status_code == 400 for r in refused)     # the app's words in the page, not Gradio's "busy"
        assert "Too many new sessions" in refused[0].json()["detail"]
        now[0] += 1.0
        assert join_from(url, stop, "churn-later", [None], "203.0.113.5").status_code == 200   # a second's worth
        # a session seen before is held only by the joins' own rate
        now[0] += 1.0
        assert join_from(url, stop, "churn-0", [None], "203.0.113.5").status_code == 200
        assert "Too many requests" in join_from(url, stop, "churn-0", [None], "203.0.113.5").json()["detail"]
        held = demo._queue.pending_messages_per_session
        assert not any(f"churn-{i}" in held for i in range(12) if codes[i].status_code != 200)
        assert join_from(url, stop, "someone", [None], "203.0.113.6").status_code == 200
    finally:
        demo.close()


def test_new_sessions_from_one_client_join_at_an_eighth_of_its_rate_seen_ones_at_the_full(tiny_dirs, monkeypatch):
    """A script inventing a session per Stop makes Gradio build a state per join: new session ids are held to
    an eighth of a client's joins, while the sessions that opened the page (or joined before) keep the full
    rate, so a class behind one address is not slowed by it."""
    from specviz.view.fair_queue import JOIN_BURST_S
    from specviz.view.serve import serve
    monkeypatch.setenv("SPECVIZ_TRUST_FORWARDED", "1")
    now = [0.0]
    demo, url = serve(tiny_app(tiny_dirs, joins_per_second=16), clock=lambda: now[0])
    try:
        stop = next(i for i, f in demo.fns.items() if f.api_name == "stop")
        fresh = [join_from(url, stop, f"new-{i}", [None], "203.0.113.7").status_code for i in range(10)]
        assert fresh.count(200) == int(16 / 8 * JOIN_BURST_S)          # 2 a second, a burst of 6
        again = [join_from(url, stop, f"new-{i % 6}", [None], "203.0.113.7").status_code for i in range(30)]
        assert again.count(200) == 30                              # 6 + 30 joins: inside 16 x 3 s
    finally:
        demo.close()


def test_an_unknown_event_is_refused_in_one_line(tiny_dirs, caplog):
    from specviz.view.serve import serve
    demo, url = serve(tiny_app(tiny_dirs))
    try:
        for fn_index in (10_000, -1, None):
            r = join_from(url, fn_index, "odd", [], "x")
            assert r.status_code == 400 and "no such event" in r.json()["detail"]
        assert "Traceback" not in caplog.text
    finally:
        demo.close()


# --- sessions: a newer session never pushes an active one out -------------------------------
def test_session_churn_does_not_evict_an_active_sessions_queue():
    from specviz.view.fair_queue import KeepActive
    queue = SimpleNamespace(event_ids_to_events={"e1": SimpleNamespace(session_hash="streaming")})
    table = KeepActive(queue, 3)
    table["streaming"] = "its messages"
    table["idle-1"] = "x"
    for i in range(50):                     # a churn of new session ids
        table[f"new-{i}"] = "x"
    assert table["streaming"] == "its messages" and len(table) == 3
    assert "idle-1" not in table


def test_a_read_keeps_a_session_recent():
    from specviz.view.fair_queue import KeepActive
    table = KeepActive(SimpleNamespace(event_ids_to_events={}), 2)
    table["a"], table["b"] = 1, 2
    assert table.get("a") == 1               # used: now the most recent
    table["c"] = 3
    assert "a" in table and "b" not in table


def test_a_race_streams_to_its_end_while_another_client_churns_sessions(tiny_dirs, monkeypatch):
    """With room for only a few sessions, a stream of new session ids (Stop, from another address)
    used to push the streaming visitor's message queue out: its result was lost."""
    from gradio_client import Client
    from specviz.view.serve import serve
    monkeypatch.setenv("SPECVIZ_TRUST_FORWARDED", "1")
    demo, url = serve(tiny_app(tiny_dirs, joins_per_second=1000, jobs_per_address=1000))
    try:
        demo._queue.pending_messages_per_session.max_size = 4
        stop = next(i for i, f in demo.fns.items() if f.api_name == "stop")
        job = Client(url, verbose=False, headers={"X-Forwarded-For": "198.51.100.20"}).submit(
            *LONG_GENERATE[:6], 128, *LONG_GENERATE[7:], api_name="/generate")
        wait_for(lambda: any(e.alive for e in demo._queue.event_ids_to_events.values()))
        for i in range(30):
            assert join_from(url, stop, f"churn-{i}", [None], "203.0.113.9").status_code == 200
        out = job.result(timeout=120)
        assert out["token_ids"]
    finally:
        demo.close()


# --- replays bounded like decodes ------------------------------------------------------------
def test_the_replay_is_its_own_limited_group_counted_in_the_caps(tiny_dirs):
    from specviz.view.fair_queue import WORK_GROUPS
    from specviz.view.ui import build_demo
    demo = build_demo(tiny_app(tiny_dirs))
    replay = [f for f in demo.fns.values() if getattr(f.fn, "func", None) is not None
              and f.fn.func.__name__ == "replay_in_turn"]
    assert len(replay) == 1 and replay[0].concurrency_id == "replay" in WORK_GROUPS
    assert replay[0].concurrency_limit == 1
    from specviz.bench.hostile_kinds import replay_values
    assert len(replay_values("trace")) == len(replay[0].inputs)     # the load test's replays are not refused


def test_a_replay_waits_for_its_turn_of_the_device(tiny_dirs):
    from specviz.view.replay import replay_in_turn
    app = tiny_app(tiny_dirs)
    app.decoders.slots.acquire()                        # another visitor's decoding holds the slot
    done = []
    t = threading.Thread(target=lambda: done.append(replay_in_turn(app, "not json")))
    t.start()
    wait_for(lambda: _waiting(app.decoders.slots) == 1)   # queued for a turn, not computing beside it
    assert not done
    app.decoders.slots.release()
    t.join(30)
    assert done and "status-error" in done[0][0] and done[0][-1] == ""   # its box emptied in the session


# --- the upload route is closed ------------------------------------------------------------
def test_the_upload_route_writes_nothing_and_names_no_path(tiny_dirs):
    import httpx
    from gradio.utils import get_upload_folder
    from pathlib import Path
    from specviz.view.serve import serve
    folder = Path(get_upload_folder())
    before = set(folder.rglob("*")) if folder.exists() else set()
    demo, url = serve(tiny_app(tiny_dirs))
    try:
        for body in (b"", b"x"):
            r = httpx.post(f"{url}/gradio_api/upload", files={"files": ("empty.txt", body)}, timeout=10)
            assert r.status_code == 403 and "/tmp" not in r.text and "empty.txt" not in r.text
        after = set(folder.rglob("*")) if folder.exists() else set()
        assert not any(p.name == "empty.txt" for p in after - before)
    finally:
        demo.close()


# --- trace links live their hour whatever others do ------------------------------------------
def test_one_clients_many_races_do_not_cut_anothers_link(tmp_path):
    from specviz.view import trace_files
    now = [1000.0]
    theirs = trace_files.save({"n": -1}, tmp_path, now=lambda: now[0], owner="203.0.113.1")
    mine = [trace_files.save({"n": i}, tmp_path, now=lambda: now[0], owner="6.6.6.6", keep=30, per_owner=5)
            for i in range(40)]
    assert trace_files.find(theirs, tmp_path, now=lambda: now[0]) is not None
    assert sum(trace_files.find(t, tmp_path, now=lambda: now[0]) is not None for t in mine) == 5   # its own newest
    assert trace_files.find(mine[-1], tmp_path, now=lambda: now[0]) is not None


def test_a_full_trace_folder_gives_no_new_link_rather_than_cut_one(tmp_path):
    from specviz.view import trace_files
    now = lambda: 1000.0          # noqa: E731
    kept = [trace_files.save({"n": i}, tmp_path, now=now, owner=f"10.0.0.{i}", keep=3) for i in range(3)]
    assert trace_files.save({"n": 9}, tmp_path, now=now, owner="10.0.0.9", keep=3) is None
    assert all(trace_files.find(t, tmp_path, now=now) is not None for t in kept)
    assert trace_files.save({"pad": "x" * 100}, tmp_path, now=now, owner="10.0.0.1", max_bytes=50) is None


# --- bad values: one short line, no traceback ------------------------------------------------
@pytest.mark.parametrize("value", ["x", None])
def test_the_rules_temperature_of_the_wrong_kind_is_one_line(tiny_dirs, value):
    from specviz.view.serve import serve
    demo, url = serve(tiny_app(tiny_dirs))
    try:
        from gradio_client import Client
        html = Client(url, verbose=False).predict(value, *form_values(), api_name="/rules")[0]
        assert "status-error" in html and "temperature must be a number" in html
    finally:
        demo.close()


def test_a_long_menu_value_is_refused_cut(tiny_dirs, caplog):
    from specviz.view.serve import serve
    demo, url = serve(tiny_app(tiny_dirs))
    try:
        workshop = next(i for i, f in demo.fns.items() if f.api_name == "workshop")
        r = join_from(url, workshop, "long", ["race", "", "y" * 100_000, {}], "x")
        assert r.status_code == 400 and len(r.json()["detail"]) < 300
        assert "y" * 300 not in caplog.text
    finally:
        demo.close()


@pytest.mark.parametrize("field, value, words", [
    ("k", 1e308, "k is out of range, not 1e+308"),
    ("k", "２", "whole number"),
    ("seed", "٣", "whole number"),
    ("temperature", "１.５", "temperature must be a number"),
    ("tree", "２,２", "draft shape must be chain"),
])
def test_numbers_are_ascii_digits_and_refusals_quote_them_short(tiny_dirs, field, value, words):
    from specviz.view.handlers import run_race
    app = tiny_app(tiny_dirs)
    from tests.helpers import FORM
    last = list(run_race(app, **{**FORM, "tree": "chain", field: value}))[-1]
    assert words in last.status and len(last.status) < 1000, last.status


def test_a_client_inventing_sessions_keeps_the_state_of_a_few_only(tiny_dirs, monkeypatch):
    """Gradio keeps each session's last outputs (some MB after a race or a replay) for 2000 sessions:
    one client's new session per request held them all. Past SESSIONS_PER_CLIENT, its own least
    recently used idle sessions lose theirs; another client's session keeps its own."""
    from specviz.view import fair_queue
    from specviz.view.serve import serve
    monkeypatch.setenv("SPECVIZ_TRUST_FORWARDED", "1")
    monkeypatch.setattr(fair_queue, "SESSIONS_PER_CLIENT", 3)
    demo, url = serve(tiny_app(tiny_dirs, joins_per_second=1000))
    try:
        stop = next(i for i, f in demo.fns.items() if f.api_name == "stop")
        assert join_from(url, stop, "someone", [None], "203.0.113.7").status_code == 200
        for i in range(12):
            assert join_from(url, stop, f"invented-{i}", [None], "203.0.113.8").status_code == 200
            wait_for(lambda: not demo._queue.event_ids_to_events)          # that Stop has run
        held = demo.state_holder.session_data
        assert sum(f"invented-{i}" in held for i in range(12)) <= 3
        assert "invented-11" in held and "someone" in held
    finally:
        demo.close()


def _join_and_read(url, fn_index, data, session):
    """Join an event and read its stream to the end: the completion message."""
    import httpx
    r = join_from(url, fn_index, session, data, "x")
    if r.status_code != 200:
        return {"refused": r.json()["detail"]}
    with httpx.stream("GET", f"{url}/gradio_api/queue/data", params={"session_hash": session}, timeout=60) as s:
        for line in s.iter_lines():
            if line.startswith("data:") and json.loads(line[5:]).get("msg") == "process_completed":
                return json.loads(line[5:])
    return {}


@pytest.mark.slow    # four bad values in every input of every page event, each a raw join to a served page
def test_a_value_no_check_foresaw_is_one_line_and_no_traceback(tiny_dirs, capfd):
    """Raw joins to the page's own events with values of the wrong kind in every place: each is refused
    at the join, or answered in one line; none prints a traceback."""
    from specviz.view.serve import serve
    demo, url = serve(tiny_app(tiny_dirs, joins_per_second=1000, jobs_per_address=1000))
    try:
        n = 0
        for fn_index, fn in demo.fns.items():
            if fn.fn is None or fn.api_name in ("race", "step", "lossless", "rules", "workshop", "generate"):
                continue               # the decoding endpoints have tests of their own
            width = len(fn.inputs or [])
            for place in range(width):
                for bad in ([], {"a": 1}, None, "x"):
                    data = [None] * width
                    data[place] = bad
                    out = _join_and_read(url, fn_index, data, f"odd-{n}")
                    n += 1
                    if "refused" in out:
                        assert "\n" not in out["refused"] and len(out["refused"]) < 300
                    elif out.get("success") is False:
                        error = str(out["output"].get("error"))
                        assert error != "None" and "\n" not in error and len(error) < 300, error
        assert n > 20
        assert "Traceback" not in capfd.readouterr().err
    finally:
        demo.close()
