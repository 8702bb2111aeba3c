"""A class of thirty behind one address: turns go round robin by address and, inside an address, by
tab; a job waiting for the device learns its place in line as the line moves; the page says it in
words. Nothing here measures time: each test counts places and orders."""
from __future__ import annotations

import threading

from specviz.app.slots import FairSlots, InLine, Stopped, sliced
from specviz.view.line_text import about, line_status, ordinal
from tests.helpers import wait_for


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


def test_the_line_is_said_in_words():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 102, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "102nd", "111th"]
    assert about(3.2) == "about 4 s" and about(22) == "about 25 s" and about(70) == "about 1 min"
    text = line_status(InLine(12, 66.0))
    assert text.startswith("12th in line, about 1 min") and "12 runs ahead of yours" in text
    assert "1 run ahead of yours" in line_status(InLine(1, 2.0))
