"""A class of thirty behind one address: turns go round robin by address and, inside an address, by
tab; a job waiting for the device learns its place in line as the line moves; the page says it in
words. Nothing here measures time: each test counts places and orders."""
from __future__ import annotations

import threading
from types import SimpleNamespace

from specviz.app.slots import FairSlots, InLine, Stopped, sliced
from specviz.view.line_text import about, line_status, ordinal
from tests.helpers import tiny_app, wait_for


def _queue_up(slots: FairSlots, jobs: list[tuple[str, str, str | None]]) -> list[threading.Event]:
    """Join the line with each (name, client, session) in order; the slot is held by someone else."""
    return [slots.join(None, client, session) for _, client, session in jobs]


def test_turns_go_round_by_address_then_by_tab():
    slots = FairSlots(1)
    assert slots.acquire()
    jobs = [("a1", "A", "tab1"), ("a2", "A", "tab1"), ("a3", "A", "tab1"), ("a4", "A", "tab2"), ("b1", "B", None)]
    turns = _queue_up(slots, jobs)
    names = {id(t): name for t, (name, _, _) in zip(turns, jobs)}
    planned = [names[id(t)] for t in slots.line()]
    served = []
    for _ in jobs:
        slots.release()
        granted = [t for t in turns if t.is_set() and names[id(t)] not in served]
        assert len(granted) == 1
        served.append(names[id(granted[0])])
    assert served == planned == ["a1", "b1", "a4", "a2", "a3"]


def test_a_class_on_one_address_and_a_hostile_address_share_turns_by_address():
    """Thirty tabs of one school address, each with one run, and a hostile address with thirty runs:
    the hostile address gets one turn in each round, never more; every student keeps its place."""
    slots = FairSlots(1)
    assert slots.acquire()
    jobs = []
    for i in range(30):
        jobs.append((f"student-{i}", "school", f"tab-{i}"))
        jobs.append((f"hostile-{i}", "hostile", f"invented-{i}"))
    turns = _queue_up(slots, jobs)
    names = {id(t): name for t, (name, _, _) in zip(turns, jobs)}
    order = [names[id(t)] for t in slots.line()]
    assert order[0::2] == [f"student-{i}" for i in range(30)]
    assert all(name.startswith("hostile") for name in order[1::2])
    assert slots.place(turns[jobs.index(("student-29", "school", "tab-29"))]) == 59   # 29 rounds of two first


def test_a_job_waiting_for_the_device_learns_its_place_as_the_line_moves():
    slots = FairSlots(1)
    assert slots.acquire()
    ahead = [slots.join(None, f"other-{i}", None) for i in range(3)]
    seen: list = []
    done = threading.Event()

    def mine():
        for item in sliced(slots, iter(["token"]), line=True, client="me", session="tab", slice_s=5.0):
            seen.append(item)
        done.set()
    runner = threading.Thread(target=mine)
    runner.start()
    wait_for(lambda: seen and seen[-1].place == 4)
    for place in (3, 2, 1):
        slots.release()                                      # the one on the device ends; the next is served
        wait_for(lambda p=place: seen[-1].place == p)
    slots.release()                                          # the last one ahead ends: its turn
    assert done.wait(10)
    runner.join(10)
    assert [s.place for s in seen[:-1]] == [4, 3, 2, 1] and seen[-1] == "token"
    assert all(isinstance(s, InLine) and s.wait_s > 0 for s in seen[:-1])
    assert seen[0].wait_s > seen[3].wait_s                   # the estimate falls as the line moves
    for turn in ahead:                                       # the others were served before, in order
        assert turn.is_set()
    assert not slots.busy()


def test_a_job_closed_or_stopped_while_in_line_leaves_it():
    slots = FairSlots(1)
    assert slots.acquire()
    job = sliced(slots, iter(range(3)), line=True, client="me")
    assert isinstance(next(job), InLine) and slots.waiting() == 1
    job.close()                                              # the visitor left while waiting
    assert slots.waiting() == 0
    stop = threading.Event()
    job = sliced(slots, iter(range(3)), stop.is_set, line=True, client="me")
    assert next(job).place == 1
    stop.set()
    try:
        next(job)
        raise AssertionError("a stopped job went on")
    except Stopped:
        pass
    assert slots.waiting() == 0
    slots.release()
    assert not slots.busy()


def _two_tabs_in_line(first_until) -> tuple[list[str], dict]:
    """Two tabs of one address join the line while the slot is held; each job's parts are logged as they
    are computed (only a slot's holder computes), so the log is the order the device served them."""
    slots = FairSlots(1)
    assert slots.acquire()
    log: list[str] = []
    slots.turns = {}                  # counted from here on: the turns the two tabs get

    def job(name):
        for part in ("prefill", "token", "rest", "end"):
            if name == "B" and part == "token" and first_until is not None:
                assert wait_for(lambda: slots.waiting() == 1)      # A is back in line (no race of threads)
            log.append(f"{name}:{part}")
            yield part

    def run(name):
        for _ in sliced(slots, job(name), client="school", session=name, slice_s=1e9, first_until=first_until):
            pass
    threads = []
    for n, name in enumerate("AB"):
        threads.append(threading.Thread(target=run, args=(name,)))
        threads[-1].start()
        assert wait_for(lambda n=n: slots.waiting() == n + 1)
    slots.release()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads) and not slots.busy()
    return log, slots.turns


def test_a_jobs_first_result_ends_its_slice_so_every_tab_in_line_starts_before_any_goes_on():
    """A room's last tab waits for the others' first results, not their whole slices: each job's first
    token ends its first slice and it queues again behind everyone waiting (app/slots.py)."""
    assert _two_tabs_in_line(lambda part: part == "token") == ([
        "A:prefill", "A:token", "B:prefill", "B:token", "A:rest", "A:end", "B:rest", "B:end"], {"school": 4})
    # without it a job keeps its slice (here as long as the job) to its end
    assert _two_tabs_in_line(None) == ([
        "A:prefill", "A:token", "A:rest", "A:end", "B:prefill", "B:token", "B:rest", "B:end"], {"school": 2})


def test_a_tab_that_joins_late_starts_before_its_classmates_races_go_on():
    """Inside one address a job waiting for its short first turn (`fresh`) goes ahead of the tabs whose
    next turn continues a started race, behind the other fresh ones; between addresses nothing changes."""
    slots = FairSlots(1)
    assert slots.acquire()
    going_on = slots.join(None, "school", "tab-a")               # its race started: a later slice
    late = slots.join(None, "school", "tab-c", fresh=True)
    later = slots.join(None, "school", "tab-d", fresh=True)
    other = slots.join(None, "elsewhere", "tab-x")
    names = {id(going_on): "a goes on", id(late): "c starts", id(later): "d starts", id(other): "elsewhere"}
    assert [names[id(t)] for t in slots.line()] == ["c starts", "elsewhere", "d starts", "a goes on"]
    for turn in (going_on, late, later, other):
        slots.leave(turn)
    slots.release()
    assert not slots.busy()


def test_a_tabs_second_run_while_its_first_waits_takes_its_place_and_ends_the_first():
    """Run pressed twice in one tab while the device is busy: one run in line, in the first one's place;
    the first ends (Replaced); the other tabs keep their places."""
    from specviz.app.slots import Replaced
    slots = FairSlots(1)
    assert slots.acquire()
    ended: dict = {}
    order: list[str] = []

    def run(name, session):
        work = (order.append(name) or name for _ in range(1))      # computed only once granted
        try:
            ended[name] = [x for x in sliced(slots, work, client="school", session=session, line=True, replace=True)
                           if not isinstance(x, InLine)]
        except Replaced:
            ended[name] = "replaced"
    threads = []
    for name, session, ready in (("first", "tab1", lambda: slots.waiting() == 1),
                                 ("other", "tab2", lambda: slots.waiting() == 2),
                                 ("again", "tab1", lambda: "first" in ended)):
        threads.append(threading.Thread(target=run, args=(name, session)))
        threads[-1].start()
        assert wait_for(ready)
    assert ended == {"first": "replaced"} and slots.waiting() == 2
    next_slice = slots.join(None, "school", "tab1")     # a join that does not replace (a slice's next turn): queued
    assert slots.waiting() == 3 and not slots.replaced(next_slice)
    slots.leave(next_slice)
    slots.release()
    for t in threads:
        t.join(10)
    assert order == ["again", "other"]                  # the newer run in the first one's place
    assert ended == {"first": "replaced", "again": ["again"], "other": ["other"]}
    assert not slots.busy()


def test_a_race_sends_its_first_token_at_once(tiny_dirs):
    """The race's first token reaches the page in an update of its own (then its slice ends), not with
    the next update ~0.16 s later: the first update whose pane holds a token holds exactly one."""
    from specviz.view.handlers import first_token, run_race
    from tests.helpers import FORM
    panes = [u.spec_pane for u in run_race(tiny_app(tiny_dirs), **{**FORM, "temperature": 0.0, "max_new_tokens": 24})
             if isinstance(u.spec_pane, str)]
    with_tokens = [p for p in panes if "data-kind=" in p]
    assert with_tokens and with_tokens[0].count("data-kind=") == 1
    assert with_tokens[-1].count("data-kind=") > 1                      # the race went on after it
    assert not first_token(SimpleNamespace(lane="base", kind="accepted"))
    assert first_token(SimpleNamespace(lane="spec", kind="bonus"))
    assert not first_token(SimpleNamespace(lane="spec", kind="drafted"))


def test_the_classroom_report_says_each_addresss_turns_before_the_last_first_token():
    """The load test's report (bench/classroom.py): the bound is the class's races alone + 20%, and the
    turns the class and the hostile address had before the last student's first token are said."""
    from specviz.bench.classroom import HOSTILE_LOOPBACK, STUDENTS_ADDRESS, report
    student = {"refusals": [], "pane": "<span data-kind=accepted>x</span>"}
    results = [{**student, "first_token_s": 4.0, "turns_then": {STUDENTS_ADDRESS: 1, HOSTILE_LOOPBACK: 1}},
               {**student, "first_token_s": 9.0, "turns_then": {STUDENTS_ADDRESS: 2, HOSTILE_LOOPBACK: 2}}]
    figures = {"results": results, "hostile": {"accepted": 3, "refused": 0, "message": ""}, "solo_s": 10.0,
               "crossed": []}
    lines, ok = report(figures, 2)
    assert ok and "last first token 9.0 s" in lines[-2] and "+20%: 12.0 s" in lines[-2]
    assert lines[-1].endswith("gave 2 turns to the class's address and 2 to the hostile address")
    figures["solo_s"] = 7.0                                  # 9.0 s is past 7.0 s + 20%
    assert not report(figures, 2)[1]


def test_a_step_click_waiting_for_the_device_says_its_place_then_answers(tiny_dirs):
    """Step mode's "Next round" behind another job: the explanation says its place in line, as a race's
    status does, until the slot is free; then the click's round."""
    from specviz.view.tabs.step import step_clicks_in_line
    from tests.helpers import FORM
    app = tiny_app(tiny_dirs)
    app.pairs.pair(app.pairs.preset("tiny"))            # loaded first: the wait is the device's alone
    assert app.decoders.slots.acquire()                 # another visitor's job holds the device
    seen: list = []
    click = threading.Thread(target=lambda: seen.extend(step_clicks_in_line(app, 1, None, **FORM)))
    click.start()
    try:
        assert wait_for(lambda: app.decoders.slots.waiting() == 1 and seen)
        assert click.is_alive() and len(seen) == 1      # said while it waits (list.extend appends as it goes)
    finally:
        app.decoders.slots.release()
    click.join(60)
    assert not click.is_alive()
    waiting, answer = seen[0], seen[-1]
    assert "1st in line" in waiting[1] and "ahead of yours" in waiting[1]
    assert all(type(v).__name__ != "str" for v in (waiting[0], waiting[2], waiting[3]))   # the rest untouched
    assert "Round 1:" in answer[1] and answer[2]["records"]
    assert not app.decoders.slots.busy()


def test_the_line_is_said_in_words():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 102, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "102nd", "111th"]
    assert about(3.2) == "about 4 s" and about(22) == "about 25 s" and about(70) == "about 1 min"
    text = line_status(InLine(12, 66.0))
    assert text.startswith("12th in line, about 1 min") and "12 runs ahead of yours" in text
    assert "1 run ahead of yours" in line_status(InLine(1, 2.0))


# --- bad bodies: one line, no traceback -------------------------------------------------------
BAD_BODIES = [
    b'{"data": [], "fn_index": 1e400, "session_hash": "x"}',
    b'{"data": [], "fn_index": NaN, "session_hash": "x"}',
    b'{"data": [], "fn_index": -Infinity, "session_hash": "x"}',
    b'{"data": [], "fn_index": 1' + b'0' * 5000 + b', "session_hash": "x"}',
    b'{"data": [1e400], "fn_index": 0, "session_hash": "x"}',
    b'{"data": [], "fn_index": 0, "session_hash": "' + b's' * 100_000 + b'"}',
    b'{"data": [], "fn_index": 0, "session_hash": "x", "trigger_id": 1e400}',
    b'{"data": ',
]


def test_bad_bodies_answer_one_line_and_log_no_traceback(tiny_dirs, capfd):
    import httpx
    from specviz.view.serve import serve
    demo, url = serve(tiny_app(tiny_dirs))
    try:
        for body in BAD_BODIES:
            r = httpx.post(f"{url}/gradio_api/queue/join", content=body,
                           headers={"content-type": "application/json"}, timeout=10)
            assert 400 <= r.status_code < 500, (body[:60], r.status_code, r.text[:200])
            detail = r.json().get("detail")
            assert isinstance(detail, str) and "\n" not in detail and len(detail) < 300, (body[:60], detail)
        err = capfd.readouterr().err
        assert "Traceback" not in err and "s" * 300 not in err
    finally:
        demo.close()


def test_ipv6_clients_are_keyed_by_their_64():
    from types import SimpleNamespace
    from specviz.view.client_address import client_key

    def request(host, forwarded=None):
        headers = {"x-forwarded-for": forwarded} if forwarded else {}
        return SimpleNamespace(client=SimpleNamespace(host=host), headers=headers)
    one = client_key(request("2001:db8:1:2::1"), trust_forwarded=False)
    assert one == client_key(request("2001:db8:1:2:ffff:1234:5678:9abc"), trust_forwarded=False) == "2001:db8:1:2::/64"
    assert client_key(request("2001:db8:1:3::1"), trust_forwarded=False) != one      # the next /64: another client
    assert client_key(request("10.16.3.80", "2001:db8:7:7:1::9"), trust_forwarded=True) == "2001:db8:7:7::/64"
    assert client_key(request("::ffff:198.51.100.7"), trust_forwarded=False) == "198.51.100.7"
    assert client_key(request("198.51.100.7"), trust_forwarded=False) == "198.51.100.7"
    assert client_key(request("testclient"), trust_forwarded=False) == "testclient"     # not an address: as it is


def test_a_room_opening_the_page_at_once_is_never_refused(tiny_dirs, monkeypatch):
    """Thirty tabs behind one address open the page: every load event joins, even with caps that would
    refuse the thirtieth of anything else (1 event in hand, 1 join a second); the caps still hold for
    the rest, in the app's words."""
    from specviz.view.fair_queue import load_events
    from specviz.view.serve import serve
    from tests.helpers import join_from
    monkeypatch.setenv("SPECVIZ_TRUST_FORWARDED", "1")
    now = [0.0]
    demo, url = serve(tiny_app(tiny_dirs, joins_per_second=1, jobs_per_address=1), clock=lambda: now[0])
    try:
        loads = sorted(load_events(demo))
        assert loads and all(any(e == "load" for _, e in demo.fns[i].targets) or demo.fns[i].trigger_after is not None
                             for i in loads)
        answers = [join_from(url, i, f"tab-{n}", [getattr(c, "value", None) for c in demo.fns[i].inputs or []],
                             "198.51.100.30")
                   for n in range(30) for i in loads]
        codes = [r.status_code for r in answers]
        assert codes == [200] * len(codes), [(c.status_code, c.text[:200]) for c in answers if c.status_code != 200][:3]
        stop = next(i for i, f in demo.fns.items() if f.api_name == "stop")
        others = [join_from(url, stop, f"tab-{n}", [None], "198.51.100.30") for n in range(5)]
        refused = [r for r in others if r.status_code != 200]
        assert refused and all(r.status_code == 400 and "\n" not in r.json()["detail"] for r in refused)
    finally:
        demo.close()
