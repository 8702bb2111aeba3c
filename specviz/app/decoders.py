"""The device's decoding slots as one role: what every decoding path (race, step mode, the lossless
check, the rules tab, the workshop, the k advice's timing) goes through, and nothing else.

`sliced` lends the slots in slices (app/slots.py: turns round robin by client, so no visitor holds
the device) and says a device out of memory in the visitor's words (`OutOfMemory`); `hold` keeps one slot for a short block that cannot be sliced; `job` passes a
visitor's stop check down to logic that knows nothing of requests (the workshop's exercises).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

import torch

from ..errors import SpecvizError
from . import slots
from .slots import SLICE_S, FairSlots, Sharing, sliced

T = TypeVar("T")


class OutOfMemory(SpecvizError):
    """A decoding job ran out of device memory: the page says so in one line, and the next job tries again."""


def _memory_said(items: Iterator[T]) -> Iterator[T]:
    """`items`, with torch's out-of-memory error as an OutOfMemory (closing this closes `items`)."""
    try:
        yield from items
    except torch.OutOfMemoryError:
        raise OutOfMemory("The device ran out of memory: try fewer new tokens or a smaller pair.") from None


class Decoders:
    """`concurrency` decoding slots on the device, lent `slice_s` seconds at a time."""

    def __init__(self, concurrency: int = 1, slice_s: float = SLICE_S):
        self.slots = FairSlots(concurrency)
        self.slice_s = slice_s            # slot time a job may use before the next waiting job's turn
        self._job = threading.local()     # this thread's job's stop check (`job`)

    def busy(self) -> bool:
        """Would decoding wait right now? (for a "waiting" line in the page)"""
        return self.slots.busy()

    @contextmanager
    def job(self, stop: Callable[[], bool]):
        """Within this block, `sliced` in this thread also stops when `stop()` is true (a handler
        passes its visitor's check down to logic that knows nothing of requests, as the workshop's)."""
        previous = getattr(self._job, "stop", None)
        self._job.stop = stop
        try:
            yield
        finally:
            self._job.stop = previous

    def sliced(self, items: Iterator[T], stop: Callable[[], bool] | None = None,
               wait_stop: Callable[[], bool] | None = None, sharing: Sharing | None = None,
               line: bool = False, first_until: Callable[[T], bool] | None = None,
               replace: bool = False) -> Iterator[T]:
        """Run a decoding job (an iterator) in slices of the device's slots (app/slots.py): others
        interleave between slices; Stopped is raised once `stop()` (default: the check set by `job`,
        else slots.default_stop's, which a served app sets to "the visitor is gone") is true.

        Loading a pair happens before, outside any slot, so a visitor whose pair is still loading
        never holds up the others. `sharing` is marked where a slice ran beside another job's
        (a host with concurrency_per_device > 1). A device out of memory raises OutOfMemory.
        `line`: while the job waits for its first slot, slots.InLine items (its place, the likely wait)
        come first, for the page's "3rd in line" (app/slots.py).
        `first_until(item)`: the item that gives the visitor its first result ends that slice (app/slots.py).
        `replace` (with `line`): a newer request of the same tab takes this one's place in line while it still
        waits for its first slot; this one then raises slots.Replaced."""
        stop = stop or getattr(self._job, "stop", None) or slots.default_stop()
        # Turns go round robin between clients (a served app's request names its client), and inside a
        # client between its sessions (tabs), not jobs.
        return _memory_said(sliced(self.slots, items, stop, wait_stop, self.slice_s, sharing, slots.default_client(),
                                   slots.default_session(), line, first_until=first_until, replace=replace))

    def line_length(self) -> int:
        """Jobs waiting for the device now."""
        return self.slots.waiting()

    @contextmanager
    def hold(self):
        """Hold one decoding slot for a whole block (short, unsliceable work only)."""
        self.slots.acquire()
        try:
            yield
        finally:
            self.slots.release()
