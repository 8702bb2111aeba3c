"""Each lane's own clock: only the seconds its own compute took, device-synchronized.

A lane is a generator; the clock runs only while the lane is working (between being
resumed and yielding), so time spent in the other lane of a race, or by the consumer,
is never counted. On CUDA the device is synchronized before the clock is read, through the
device gate (graph_capture.py): never while a CUDA graph is being captured in the process.
Within a round, `PhaseMarks` splits the time into phases without adding a sync: on CUDA
it records CUDA events and reads them after the round's one device-to-host read.
"""
from __future__ import annotations

import time

import torch

from .graph_capture import GATE


def synchronize(device: torch.device) -> None:
    """Wait for the device; a capture underway in any thread is waited for first (a device
    synchronize during a capture would invalidate it)."""
    with GATE.shared():
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elif device.type == "mps":
            torch.mps.synchronize()


class LaneClock:
    def __init__(self, device: torch.device):
        self.device = device
        self.total = 0.0
        self._start: float | None = None

    def start(self) -> None:
        self._start = time.perf_counter()

    def stop(self) -> float:
        """Synchronize, stop the clock and return the lane's total seconds."""
        synchronize(self.device)
        if self._start is not None:
            self.total += time.perf_counter() - self._start
            self._start = None
        return self.total

    def read(self) -> float:
        """Seconds so far (includes the running segment; call after a sync for exact device time)."""
        running = time.perf_counter() - self._start if self._start is not None else 0.0
        return self.total + running


class PhaseMarks:
    """Marks between a round's phases; `seconds()` gives the time between consecutive marks.
    Call `seconds()` only after the device has caught up (the round's host read does that)."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.marks: list = []
        self.mark()

    def mark(self) -> None:
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.marks.append(event)
        else:
            self.marks.append(time.perf_counter())

    def seconds(self) -> list[float]:
        pairs = zip(self.marks, self.marks[1:])
        if self.cuda:
            # The last mark may still be queued behind work launched after the host read (cache
            # crops); elapsed_time needs it completed. Waiting on an event moves no data.
            self.marks[-1].synchronize()
            return [a.elapsed_time(b) / 1000.0 for a, b in pairs]
        return [b - a for a, b in pairs]
