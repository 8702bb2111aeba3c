"""Each lane's own clock, and the marks that split a round into phases, at one device sync a round.

A lane is a generator; its clock runs only while the lane is working (between being resumed and
yielding), so time spent in the other lane of a race, or by the consumer, is never counted. On the
CPU the host's `perf_counter` is the clock: nothing runs after the host has moved on. On CUDA the
device runs behind the host, so each working segment is bracketed by two CUDA events recorded on the
stream (`start` and `stop`): the segment lasts from when the device reached the first (the previous
lane's queued work done) to when it reached the second (this lane's work done, its host work
included: an idle device reaches an event when the host records it). Nothing waits for them when
they are recorded: a segment is read once its stop event has completed, which the next round's
device-to-host read guarantees (events complete in stream order), so a round's one host read (the
acceptance verdict) is its only sync. The lane's total waits once, at its end, for its last event.

`PhaseMarks` splits a round likewise. Marks before the round's host read are CUDA events, complete
once `read()` has made that read (it records one more event just before it); marks after it are host
times, since the device is then caught up and idle, and the host's work (building the round's events,
launching the caches' crops) is what the phase holds. So a round's phases cost no sync of their own.
Devices other than CUDA and the CPU (MPS) synchronize before each clock read, as before.
"""
from __future__ import annotations

import time
from typing import Callable

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


def device_events(device: torch.device) -> Callable | None:
    """A maker of timing events recorded on `device`'s current stream, or None where the host's clock
    is the device's (the CPU) or no such events exist (MPS: synchronized instead)."""
    if device.type == "cuda":
        return lambda: torch.cuda.Event(enable_timing=True)
    return None


class LaneClock:
    """The seconds of a lane's own work: the sum of its segments (`start` to `stop`)."""

    def __init__(self, device: torch.device):
        self.device = device
        self._event = device_events(device)
        self._settled = 0.0                    # seconds of the segments already read
        self._closed: list = []                # (start event, stop event, host seconds) not yet read
        self._start: float | None = None       # host time the running segment started
        self._start_event = None
        self._last_read = 0.0

    def start(self) -> None:
        self._start = time.perf_counter()
        if self._event is not None:
            self._start_event = self._event()
            with GATE.shared():                # a lane starts outside its step's gate: no capture meanwhile
                self._start_event.record()

    def stop(self) -> None:
        """End the running segment. On CUDA a stop event is recorded and nothing waits; elsewhere the
        device is synchronized first (a no-op on the CPU)."""
        if self._start is None:
            return
        host = time.perf_counter() - self._start
        if self._event is not None:
            end = self._event()
            end.record()
            self._closed.append((self._start_event, end, host))
            self._start_event = None
        else:
            synchronize(self.device)
            self._settled += time.perf_counter() - self._start
        self._start = None

    def _settle(self, wait: bool) -> None:
        """Read the closed segments whose stop event has completed (`query` waits for nothing); with
        `wait`, wait for the last one first (once, at the lane's end)."""
        if wait and self._closed:
            with GATE.shared():                # never during another thread's capture
                self._closed[-1][1].synchronize()
        while self._closed and self._closed[0][1].query():
            begin, end, _ = self._closed.pop(0)
            self._settled += begin.elapsed_time(end) / 1000.0     # ms between the two events

    @property
    def total(self) -> float:
        """The lane's seconds over its closed segments, each on the device's clock."""
        self._settle(wait=True)
        return self._settled

    def read(self) -> float:
        """Seconds so far, the running segment included (by the host's clock from its start): a
        timestamp for the round's events, never a wait. Closed segments not yet completed on the
        device count their host seconds until they are read. Never goes back."""
        self._settle(wait=False)
        now = self._settled + sum(host for _, _, host in self._closed)
        if self._start is not None:
            now += time.perf_counter() - self._start
        self._last_read = max(self._last_read, now)
        return self._last_read


class PhaseMarks:
    """Marks between a round's phases; `seconds()` gives the time between consecutive marks. On CUDA
    the round's host read goes through `read()`, which makes the marks before it readable.

    A phase may be interrupted: `pause()` ends the part of the running phase counted so far, `resume()`
    starts counting it again, and the time between belongs to no phase (a round whose draft was made
    during the previous round is resumed when it runs: its draft is charged to its own draft phase, and
    neither the previous round's rest nor the other lane's turn counts as its target pass)."""

    def __init__(self, device: torch.device):
        self._event = device_events(device)
        self.marks: list = []                  # (event or None, host time, "mark" | "pause" | "resume")
        self._read: tuple | None = None        # (the event recorded just before the host read, host time after)
        self.mark()

    def _add(self, kind: str) -> None:
        event = None
        if self._event is not None and self._read is None:     # before the host read: on the device's clock
            event = self._event()
            event.record()
        self.marks.append((event, time.perf_counter(), kind))

    def mark(self) -> None:
        """End the running phase (its time from the last mark or resume) and start the next."""
        self._add("mark")

    def pause(self) -> None:
        """Stop counting the running phase until `resume()`."""
        self._add("pause")

    def resume(self) -> None:
        """Count the paused phase again from now."""
        self._add("resume")

    def read(self, values: torch.Tensor) -> list:
        """`values.tolist()`: the round's one device-to-host read. The stream's work before it, and so
        every mark before it, has completed when it returns."""
        edge = None
        if self._event is not None:
            edge = self._event()
            edge.record()
        out = values.tolist()
        self._read = (edge, time.perf_counter())
        return out

    def seconds(self) -> list[float]:
        """Each phase's seconds: the spans between marks, a paused stretch (pause to resume) left out."""
        out, running = [], 0.0
        for (a, b), span in zip(zip(self.marks, self.marks[1:]), self._spans()):
            kind = b[2]
            if kind != "resume":               # the stretch ending at a resume belongs to no phase
                running += span()
            if kind == "mark":
                out.append(running)
                running = 0.0
        return out

    def _spans(self):
        """The seconds between consecutive marks, each read only when asked (a paused stretch never is)."""
        if self._event is None:
            return [lambda a=a, b=b: b - a for (_, a, _), (_, b, _) in zip(self.marks, self.marks[1:])]
        if self._read is None:                 # no read went through `read()`: wait for the last mark
            self.marks[-1][0].synchronize()
            pairs = zip(self.marks, self.marks[1:])
            return [lambda a=a, b=b: a.elapsed_time(b) / 1000.0 for (a, _, _), (b, _, _) in pairs]
        edge, after = self._read
        spans = []
        for (a, host_a, _), (b, host_b, _) in zip(self.marks, self.marks[1:]):
            if b is not None:                  # both before the read: device time
                spans.append(lambda a=a, b=b: a.elapsed_time(b) / 1000.0)
            elif a is not None:                # across the read: device time to it, host time after it
                spans.append(lambda a=a, host_b=host_b: a.elapsed_time(edge) / 1000.0 + host_b - after)
            else:                              # both after: host time (the device is caught up)
                spans.append(lambda host_a=host_a, host_b=host_b: host_b - host_a)
        return spans
