"""What this server process does besides racing, so that a race which overlapped it can say so.

`machine_load.OtherLoad` measures other programs' CPU by subtracting this process's own CPU time
from the machine's, so work done *inside* the process is invisible to it: converting a fetched
model (a thread at start, about a minute of CPU) or loading a pair for another visitor (outside
the decoding slot, so that loading never blocks a race). Both take a core and the interpreter's
lock from a race's lanes, unevenly, as other programs do. Such work registers here by name, from
the thread that does it; a race asks what overlapped its span and took real CPU (a load that
fails at once, or waits on the network, does not count).
"""
from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

MIN_CPU_S = 0.25         # work that took less CPU than this cannot have slowed a race visibly
KEEP_ENDED = 64          # finished entries remembered (a race asks only about its own minutes)
_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def thread_cpu_s(native_id: int) -> float | None:
    """CPU seconds a live thread of this process has used so far (Linux /proc; None elsewhere or once it ended)."""
    try:
        with open(f"/proc/self/task/{native_id}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _HZ        # utime, stime (fields 14 and 15 of stat)


@dataclass
class _Span:
    what: str
    began: float
    thread: int          # native id of the thread doing it
    cpu0: float          # its thread's CPU time at the start
    ended: float | None = None
    cpu: float | None = None     # CPU seconds it took, once ended


class SideWork:
    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 own_cpu: Callable[[], float] = time.thread_time,
                 live_cpu: Callable[[int], float | None] = thread_cpu_s):
        self._clock, self._own_cpu, self._live_cpu = clock, own_cpu, live_cpu
        self._lock = threading.Lock()
        self._spans: dict[int, _Span] = {}
        self._next = 0

    def now(self) -> float:
        return self._clock()

    def begin(self, what: str) -> int:
        """Work starts in the calling thread; `end` must be called from the same thread."""
        span = _Span(what, self._clock(), threading.get_native_id(), self._own_cpu())
        with self._lock:
            self._next += 1
            self._spans[self._next] = span
            return self._next

    def end(self, token: int) -> None:
        cpu = self._own_cpu()
        with self._lock:
            span = self._spans[token]
            span.ended, span.cpu = self._clock(), cpu - span.cpu0
            ended = sorted((s.ended, t) for t, s in self._spans.items() if s.ended is not None)
            for _, old in ended[:max(0, len(ended) - KEEP_ENDED)]:
                del self._spans[old]

    @contextmanager
    def doing(self, what: str) -> Iterator[None]:
        token = self.begin(what)
        try:
            yield
        finally:
            self.end(token)

    def since(self, t0: float) -> list[str]:
        """What ran at some moment from t0 until now (still running, or ended after t0) and took at
        least MIN_CPU_S of CPU, each named once, oldest first."""
        with self._lock:
            spans = sorted(self._spans.values(), key=lambda s: s.began)
        names = []
        for span in spans:
            if span.ended is not None and span.ended <= t0:
                continue
            cpu = span.cpu
            if cpu is None:                 # still running: its thread's CPU so far
                live = self._live_cpu(span.thread)
                cpu = float("inf") if live is None else live - span.cpu0
            if cpu >= MIN_CPU_S:
                names.append(span.what)
        return list(dict.fromkeys(names))
