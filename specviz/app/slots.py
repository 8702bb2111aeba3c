"""The device's decoding slots, lent in slices: no visitor's job can hold the device to itself.

`FairSlots` hands slots out first come, first served: a released slot goes straight to the
longest waiter (no barging), so a job that releases and asks again queues behind everyone who
was already waiting. `sliced` runs any job given as an iterator (a race's events, a lossless
check's tallies, one run's records) in slices of about SLICE_S seconds of slot time: after each
slice it gives the slot back and queues again, so other visitors' jobs interleave, and it
checks `stop` (Stop pressed, the visitor gone) between items and while it waits. A job
shorter than a slice (a 64-token race) runs in one go, as before; a 2000-sample lossless check
becomes hundreds of slices with everyone else's work in between.

The engine's lanes time only their own compute (engine/timing.py), so the pauses between
slices never enter a race's clocks.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable, Iterator, TypeVar

from ..errors import SpecvizError

SLICE_S = 2.0        # slot time a job may use before it lets the next waiter in
POLL_S = 0.2         # how often a waiting job looks at its stop check

T = TypeVar("T")


class Stopped(SpecvizError):
    """The job was stopped (Stop, or its visitor left) before it finished."""


def never() -> bool:
    return False


class FairSlots:
    """`n` slots, granted in the order they were asked for."""

    def __init__(self, n: int = 1):
        self._free = n
        self._waiters: deque[threading.Event] = deque()
        self._lock = threading.Lock()

    def busy(self) -> bool:
        """Would `acquire` wait right now?"""
        with self._lock:
            return self._free == 0 or bool(self._waiters)

    def acquire(self, stop: Callable[[], bool] = never) -> bool:
        """Wait for a slot (True), or give up when `stop()` becomes true first (False)."""
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return True
            turn = threading.Event()
            self._waiters.append(turn)
        while not turn.wait(POLL_S):
            if stop():
                with self._lock:
                    if not turn.is_set():
                        self._waiters.remove(turn)
                        return False
                self.release()          # granted just as it gave up: pass the slot on
                return False
        return True

    def release(self) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().set()     # hand the slot over: nobody can barge in between
            else:
                self._free += 1


def sliced(slots: FairSlots, items: Iterator[T], stop: Callable[[], bool] = never,
           wait_stop: Callable[[], bool] | None = None, slice_s: float = SLICE_S) -> Iterator[T]:
    """`items`, computed only while holding a slot, at most about `slice_s` seconds per hold.

    Raises Stopped when `stop()` (checked between items) or `wait_stop()` (checked while waiting
    for the slot; default `stop`) becomes true; `items` is closed in every case."""
    wait_stop = wait_stop or stop
    try:
        while True:
            if not slots.acquire(wait_stop):
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
                slots.release()
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()
