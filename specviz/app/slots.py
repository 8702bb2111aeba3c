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
_anonymous = count()


class Sharing:
    """A job's note: did it hold a slot while some other job held one too?"""

    def __init__(self):
        self.shared = False


class FairSlots:
    """`n` slots, granted round robin between clients, each client's jobs in the order they asked."""

    def __init__(self, n: int = 1):
        self._free = n
        # client -> its waiting jobs; the first client is the next to be served
        self._waiters: OrderedDict[object, deque[tuple[threading.Event, Sharing | None]]] = OrderedDict()
        self._holders: list[Sharing | None] = []      # one entry per slot held (None: a job with no note)
        self._lock = threading.Lock()

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
                client: str | None = None) -> bool:
        """Wait for a slot (True), or give up when `stop()` becomes true first (False). `holder`,
        when given, is marked shared if another job holds a slot at any time while this one does;
        `release` must then be given the same note. `client`: whom the job serves (None: nobody
        else's jobs share its turns)."""
        key = ("job", next(_anonymous)) if client is None else ("client", client)
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                self._hold(holder)
                return True
            turn = threading.Event()
            self._waiters.setdefault(key, deque()).append((turn, holder))
        while not turn.wait(POLL_S):
            if stop():
                with self._lock:
                    if not turn.is_set():
                        jobs = self._waiters[key]
                        jobs.remove((turn, holder))
                        if not jobs:
                            del self._waiters[key]
                        return False
                self.release(holder)          # granted just as it gave up: pass the slot on
                return False
        return True

    def release(self, holder: Sharing | None = None) -> None:
        with self._lock:
            # One entry per slot held. A release without the note its acquire was given would find no
            # entry of its own: it still frees a slot (never leak one), taking another entry's place.
            self._holders.remove(holder if holder in self._holders else self._holders[0])
            if self._waiters:
                key, jobs = next(iter(self._waiters.items()))
                turn, waiter = jobs.popleft()
                del self._waiters[key]
                if jobs:                          # its next job waits a whole round: to the back
                    self._waiters[key] = jobs
                self._hold(waiter)                # hand the slot over: nobody can barge in between
                turn.set()
            else:
                self._free += 1


def sliced(slots: FairSlots, items: Iterator[T], stop: Callable[[], bool] = never,
           wait_stop: Callable[[], bool] | None = None, slice_s: float = SLICE_S,
           sharing: Sharing | None = None, client: str | None = None) -> Iterator[T]:
    """`items`, computed only while holding a slot, at most about `slice_s` seconds per hold;
    `sharing` is marked if any slice overlapped another job's; `client` is whom the job serves
    (its turns are that client's, FairSlots).

    Raises Stopped when `stop()` (checked between items) or `wait_stop()` (checked while waiting
    for the slot; default `stop`) becomes true; `items` is closed in every case."""
    wait_stop = wait_stop or stop
    try:
        while True:
            if wait_stop() or not slots.acquire(wait_stop, sharing, client):
                raise Stopped("stopped")
            try:
                start = time.monotonic()
                while time.monotonic() - start < slice_s:
                    if stop():
                        raise Stopped("stopped")
                    try:
                        item = next(items)
                    except StopIteration:
                        return
                    yield item
            finally:
                slots.release(sharing)
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()
        heap.trim()             # the job's freed tensors back to the system (app/heap.py)
