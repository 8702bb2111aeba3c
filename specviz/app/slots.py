"""The device's decoding slots, lent in slices: no visitor's job can hold the device to itself.

`FairSlots` hands slots out by client, round robin: a released slot goes straight to the first
job of the client that has waited longest for its turn (no barging), and a client with more jobs
waiting goes to the back of the round, so a client with 16 jobs gets one turn in each round, as a
client with one does. A job that releases and asks again queues behind every other client that
was already waiting. Jobs that name no client are each their own client (first come, first served). `sliced` runs any job given as an iterator (a race's events, a lossless
check's tallies, one run's records) in slices of about SLICE_S seconds of slot time: after each
slice it gives the slot back and queues again, so other visitors' jobs interleave, and it
checks `stop` (Stop pressed, the visitor gone) between items, while it waits and before it
takes each slot: a job whose visitor left, or never came to read its results, takes no further
slot. A job
shorter than a slice (a 64-token race) runs in one go, as before; a 2000-sample lossless check
becomes hundreds of slices with everyone else's work in between.

The engine's lanes time only their own compute (runtime/timing.py), so the pauses between
slices never enter a race's clocks. Where a host allows more than one decoding at once
(`concurrency_per_device` > 1), two jobs can compute side by side and slow each other; a job that
passes a `Sharing` note is told whether any of its slices overlapped another holder's, so a race
can say its figure was taken on a shared device.

Turns go round robin at two levels: between clients (a served app's client is an address, which a
whole classroom behind one school router shares), and inside a client between its sessions (each
tab of that room), so thirty tabs of one address are served in turn while a hostile address beside
them still gets one turn in each round. `line()` says the order in which the waiting jobs will be
served, and `sliced(..., line=True)` yields an `InLine` (the job's place and the seconds its wait is
likely to last) while a job waits for its first slot, each time its place changes, so the page can
say "3rd in line, about 20 s" and update it as the line moves.

A job can end a slice early once its visitor has something to look at (`first_until`: a race's
first token): it then goes to the back of the line, and while it waits for that short first turn
its tab goes ahead of its client's tabs whose jobs have started (`fresh`), so in a full room every
job shows its first result before any job of its address goes on, and the last of thirty tabs waits
for thirty first results (and the other addresses' turns between them), not for thirty whole slices,
however late it joined.

A tab holds one run in line: a newer request of the tab (Run pressed again while its run waits) takes
its place in line (`replace`), and the older one ends (Replaced), so impatient clicks never lengthen
the line nor lose the tab its place.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from itertools import count
from typing import Callable, Iterator, TypeVar

from ..errors import SpecvizError
from . import heap

SLICE_S = 2.0        # slot time a job may use before it lets the next waiter in
POLL_S = 0.2         # how often a waiting job looks at its stop check

T = TypeVar("T")


class Stopped(SpecvizError):
    """The job was stopped (Stop, or its visitor left) before it finished."""


class Replaced(Stopped):
    """The job was still waiting for its first slot when a newer request of its tab took its place in line."""


def never() -> bool:
    return False


def no_check() -> Callable[[], bool]:
    return never


# What a decoding job checks when its caller gave no stop: a factory called in the job's own thread.
# The web view sets it to its "is the visitor gone?" check (view/visitor.py), so every decoding path
# ends when its visitor leaves; elsewhere (the CLI, tests) nothing stops a job.
default_stop: Callable[[], Callable[[], bool]] = no_check
# Who a decoding job serves, for the round robin: a factory called in the job's own thread (the web
# view sets it to the request's client key, view/visitor.py); None makes each job its own client.
default_client: Callable[[], str | None] = lambda: None
# Which of its client's sessions (one browser tab) a job serves, for the round robin inside a client
# (the web view sets it to the request's session, view/visitor.py); None: the client's jobs in order.
default_session: Callable[[], str | None] = lambda: None
TYPICAL_S = 5.0      # the slot time a job is taken to need before any job has ended
_anonymous = count()


class Sharing:
    """A job's note: did it hold a slot while some other job held one too?"""

    def __init__(self):
        self.shared = False


class InLine:
    """A job's place in the line for the device (1: next), and the seconds its wait is likely to last."""

    __slots__ = ("place", "wait_s")

    def __init__(self, place: int, wait_s: float):
        self.place, self.wait_s = place, wait_s

    def __repr__(self) -> str:
        return f"InLine({self.place}, {self.wait_s:.1f})"


Waiter = tuple[threading.Event, "Sharing | None"]


class FairSlots:
    """`n` slots, granted round robin between clients, inside a client round robin between its
    sessions, each session's jobs in the order they asked."""

    def __init__(self, n: int = 1):
        self.n = n
        self._free = n
        # client -> session -> its waiting jobs; the first client, and its first session, are served next
        self._waiters: OrderedDict[object, OrderedDict[object, deque[Waiter]]] = OrderedDict()
        self._holders: list[Sharing | None] = []      # one entry per slot held (None: a job with no note)
        self._lock = threading.Lock()
        self.typical_s: float | None = None          # slot time of a whole job, a running average
        # Turns granted by client (its key; jobs of no client under None), counted only once a caller sets
        # a dict here (a load test reads how the device was shared: a class against a hostile address).
        self.turns: dict[str | None, int] | None = None
        # Turns of jobs that may be replaced by a newer request of their tab (`join(..., replace=True)`) while
        # they wait for their first slot; and the turns so replaced, until their jobs notice (`replaced`).
        self._replaceable: set[threading.Event] = set()
        self._replaced: set[threading.Event] = set()
        self._fresh: set[threading.Event] = set()     # waiting turns that are their jobs' short first ones

    def note_job(self, slot_s: float) -> None:
        """A job ended having held slots for `slot_s` seconds in all (for the line's estimates)."""
        with self._lock:
            self.typical_s = slot_s if self.typical_s is None else 0.7 * self.typical_s + 0.3 * slot_s

    def turn_s(self, slice_s: float) -> float:
        """The seconds one job ahead in line is likely to hold the device before the next is served: its
        whole job, or one slice of it where jobs are longer (the next in line is served after a slice)."""
        typical = TYPICAL_S if self.typical_s is None else self.typical_s
        return min(typical, slice_s) / max(1, self.n)

    def line(self) -> list[threading.Event]:
        """The waiting jobs' turns in the order they will be served (if none asks meanwhile)."""
        with self._lock:
            return self._order()

    def _order(self) -> list[threading.Event]:
        """(under the lock) the round robin of `release`, played out on a copy."""
        clients = OrderedDict((c, OrderedDict((s, deque(jobs)) for s, jobs in sessions.items()))
                              for c, sessions in self._waiters.items())
        order = []
        while clients:
            client, sessions = clients.popitem(last=False)
            session, jobs = sessions.popitem(last=False)
            order.append(jobs.popleft()[0])
            if jobs:
                sessions[session] = jobs
            if sessions:
                clients[client] = sessions
        return order

    def place(self, turn: threading.Event) -> int:
        """`turn`'s place in line (1: served next; 0: not waiting)."""
        with self._lock:
            order = self._order()
        return order.index(turn) + 1 if turn in order else 0

    def waiting(self) -> int:
        with self._lock:
            return sum(len(jobs) for sessions in self._waiters.values() for jobs in sessions.values())

    def turns_by_client(self) -> dict:
        """A copy of `turns` (empty while they are not counted)."""
        with self._lock:
            return dict(self.turns or {})

    def _count(self, key: tuple) -> None:
        """(under the lock) one more turn for the client of `key` (a waiter's key, as in `join`)."""
        if self.turns is not None:
            client = key[1] if key[0] == "client" else None
            self.turns[client] = self.turns.get(client, 0) + 1

    def _hold(self, holder: Sharing | None) -> None:
        """(under the lock) `holder` now holds a slot: it and everyone holding one share the device."""
        if self._holders:
            for h in (*self._holders, holder):
                if h is not None:
                    h.shared = True
        self._holders.append(holder)

    def busy(self) -> bool:
        """Would `acquire` wait right now?"""
        with self._lock:
            return self._free == 0 or bool(self._waiters)

    def acquire(self, stop: Callable[[], bool] = never, holder: Sharing | None = None,
                client: str | None = None, session: str | None = None, fresh: bool = False) -> bool:
        """Wait for a slot (True), or give up when `stop()` becomes true first (False). `holder`,
        when given, is marked shared if another job holds a slot at any time while this one does;
        `release` must then be given the same note. `client`: whom the job serves (None: nobody
        else's jobs share its turns); `session`: which of the client's sessions (its turns are taken
        in turn with the client's other sessions); `fresh`: as `join`'s."""
        turn = self.join(holder, client, session, fresh=fresh)
        if turn is None:
            return True
        while not turn.wait(POLL_S):
            if stop():
                self.leave(turn, holder)
                return False
        return True

    def join(self, holder: Sharing | None = None, client: str | None = None,
             session: str | None = None, replace: bool = False, fresh: bool = False) -> threading.Event | None:
        """Take a slot now (None), or join the line: the turn returned is set once the slot is the job's.
        `replace`: a tab's newer request (a second Run) takes the place in line of that tab's request still
        waiting for its first slot, if one joined with `replace` too; that one is then `replaced`, so a tab
        holds one run in line however often it clicks, and never loses its place by clicking again.
        `fresh`: the job's first turn, and a short one (it ends at the job's first result, `sliced`'s
        `first_until`): its tab waits ahead of the client's tabs whose next turn continues a job already
        started (behind the client's other fresh ones), so a tab that joins the room late still starts
        before its classmates' races go on. Between clients nothing changes: one turn each in a round."""
        key = ("job", next(_anonymous)) if client is None else ("client", client)
        within = ("session", session) if session is not None else ("any",)
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                self._count(key)
                self._hold(holder)
                return None
            turn = threading.Event()
            sessions = self._waiters.setdefault(key, OrderedDict())
            if within not in sessions and fresh:
                _ahead_of_started(sessions, within, self._fresh)
            jobs = sessions.setdefault(within, deque())
            old = next((i for i, (t, _) in enumerate(jobs) if t in self._replaceable), None) \
                if replace and session is not None else None
            if old is None:
                jobs.append((turn, holder))
            else:
                self._replaceable.discard(jobs[old][0])
                self._replaced.add(jobs[old][0])
                jobs[old] = (turn, holder)          # the newer request waits in the older one's place
            if replace:
                self._replaceable.add(turn)
            if fresh:
                self._fresh.add(turn)
            return turn

    def replaced(self, turn: threading.Event) -> bool:
        """Did a newer request of its tab take `turn`'s place in line?"""
        with self._lock:
            return turn in self._replaced

    def leave(self, turn: threading.Event, holder: Sharing | None = None) -> None:
        """Give up a place in line; a slot granted meanwhile is passed on."""
        with self._lock:
            self._replaceable.discard(turn)
            self._replaced.discard(turn)
            self._fresh.discard(turn)
            if not turn.is_set():
                for key, sessions in list(self._waiters.items()):
                    for within, jobs in list(sessions.items()):
                        if (turn, holder) in jobs:
                            jobs.remove((turn, holder))
                            if not jobs:
                                del sessions[within]
                            if not sessions:
                                del self._waiters[key]
                            return
                return
        self.release(holder)          # granted just as it gave up: pass the slot on

    def release(self, holder: Sharing | None = None) -> None:
        with self._lock:
            # One entry per slot held. A release without the note its acquire was given would find no
            # entry of its own: it still frees a slot (never leak one), taking another entry's place.
            self._holders.remove(holder if holder in self._holders else self._holders[0])
            if self._waiters:
                key, sessions = self._waiters.popitem(last=False)
                within, jobs = sessions.popitem(last=False)
                turn, waiter = jobs.popleft()
                self._replaceable.discard(turn)
                self._fresh.discard(turn)
                if jobs:                          # the session's next job waits for its client's next round
                    sessions[within] = jobs
                if sessions:                      # the client's next job waits a whole round: to the back
                    self._waiters[key] = sessions
                self._count(key)
                self._hold(waiter)                # hand the slot over: nobody can barge in between
                turn.set()
            else:
                self._free += 1


def _ahead_of_started(sessions: OrderedDict, within, fresh: set) -> None:
    """(under the lock) A new fresh session's place in its client's `sessions`: after the sessions whose
    next job is fresh too, ahead of the first whose next turn continues a started job."""
    keys = list(sessions)
    cut = next((i for i, key in enumerate(keys) if sessions[key][0][0] not in fresh), len(keys))
    sessions[within] = deque()
    for key in keys[cut:]:              # the started ones (and any after them) behind it, in their order
        sessions.move_to_end(key)


def sliced(slots: FairSlots, items: Iterator[T], stop: Callable[[], bool] = never,
           wait_stop: Callable[[], bool] | None = None, slice_s: float = SLICE_S,
           sharing: Sharing | None = None, client: str | None = None, session: str | None = None,
           line: bool = False, clock: Callable[[], float] = time.monotonic,
           first_until: Callable[[T], bool] | None = None, replace: bool = False) -> Iterator[T | InLine]:
    """`items`, computed only while holding a slot, at most about `slice_s` seconds per hold;
    `sharing` is marked if any slice overlapped another job's; `client` and `session` are whom the
    job serves (its turns are that client's and, inside it, that session's: FairSlots).

    `line`: while the job waits for its first slot, an InLine (its place, the likely wait) is yielded
    first and again each time its place changes; the items follow once it holds the slot.

    `first_until(item)`: true for the item that gives the visitor its first result (a race's first
    token); once it has been yielded (and taken: the caller asked for the next item) the slice ends
    there, once per job, and the job queues again behind everyone waiting.

    `replace` (with `line`): a newer request of the same tab (session) takes this job's place while it
    waits for its first slot, and this one raises Replaced (FairSlots.join).

    Raises Stopped when `stop()` (checked between items) or `wait_stop()` (checked while waiting
    for the slot; default `stop`) becomes true; `items` is closed in every case."""
    wait_stop = wait_stop or stop
    held_s, first = 0.0, True
    shown = first_until is None          # has the job given its visitor a first result yet?
    try:
        while True:
            if wait_stop():
                raise Stopped("stopped")
            if first and line:
                got = yield from _wait_in_line(slots, wait_stop, sharing, client, session, slice_s, replace,
                                               fresh=first_until is not None)
            else:
                got = slots.acquire(wait_stop, sharing, client, session, fresh=first and first_until is not None)
            if not got:
                raise Stopped("stopped")
            first = False
            start = clock()
            try:
                while clock() - start < slice_s:
                    if stop():
                        raise Stopped("stopped")
                    try:
                        item = next(items)
                    except StopIteration:
                        held_s += clock() - start
                        slots.note_job(held_s)
                        return
                    yield item
                    if not shown and first_until(item):
                        shown = True
                        break             # its first result is out: the next in line is served
            finally:
                held_s += max(0.0, clock() - start)
                slots.release(sharing)
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()
        heap.trim()             # the job's freed tensors back to the system (app/heap.py)


def _wait_in_line(slots: FairSlots, stop: Callable[[], bool], sharing: Sharing | None, client: str | None,
                  session: str | None, slice_s: float, replace: bool = False, fresh: bool = False):
    """Acquire a slot as `acquire` does, yielding an InLine each time the job's place changes; returns
    whether the slot was granted. Closed while it waits, it leaves the line (a slot granted meanwhile
    is passed on); replaced by a newer request of its tab (`replace`), it raises Replaced."""
    turn = slots.join(sharing, client, session, replace, fresh)
    if turn is None:
        return True
    said, granted = 0, False
    try:
        while not turn.is_set():
            if stop():
                return False
            if slots.replaced(turn):
                raise Replaced("a newer request of this tab took its place in line")
            place = slots.place(turn)
            if place and place != said:
                said = place
                yield InLine(place, place * slots.turn_s(slice_s))
            turn.wait(POLL_S)
        granted = True
        return True
    finally:
        if not granted:
            slots.leave(turn, sharing)
