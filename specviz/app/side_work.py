"""What this server process does besides racing, so that a race which overlapped it can say so.

`machine_load.OtherLoad` measures other programs' CPU by subtracting this process's own CPU time
from the machine's, so work done *inside* the process is invisible to it: converting a fetched
model (a thread at start, about a minute of CPU) or loading a pair for another visitor (outside
the decoding slot, so that loading never blocks a race). Both take a core and the interpreter's
lock from a race's lanes, unevenly, as other programs do.

Such work registers here by name, from the thread that does it. A race takes a `mark` when it
starts and asks, when it ends, what took at least MIN_CPU_S of CPU *between the two*: work that
had finished its computing before the race, or that only waits on the network meanwhile, is not
named. The CPU counted is the registering thread's own (Linux: /proc/self/task/<tid>/stat while
it runs; torch's worker threads are not counted, so this errs towards saying nothing). Where a
running thread's CPU cannot be read (no /proc), its work is named.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, Iterator

from .machine_load import TICKS_PER_S

MIN_CPU_S = 0.25         # work that took less CPU than this during a race cannot have slowed it visibly
KEEP_ENDED = 64          # finished entries remembered (a race asks only about its own minutes)


def thread_cpu_s(native_id: int) -> float | None:
    """CPU seconds a live thread of this process has used since it started (Linux /proc; None elsewhere
    or once it ended). The same clock as time.thread_time() in that thread, in ticks."""
    try:
        with open(f"/proc/self/task/{native_id}/stat") as f:
            # After the parenthesised name (which may hold spaces and parentheses) comes field 3 of
            # proc(5); utime and stime are fields 14 and 15, so items 11 and 12 here.
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S


@dataclass(frozen=True)
class _Span:
    what: str
    thread: int                  # native id of the thread doing it
    cpu0: float                  # its thread's CPU clock at the start
    ended: float | None = None
    cpu1: float | None = None    # its thread's CPU clock at the end


@dataclass(frozen=True)
class Mark:
    """A race's start: the time, and each running work's thread CPU clock then (None: unreadable)."""
    t0: float
    cpu: dict[int, float | None]


class SideWork:
    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 own_cpu: Callable[[], float] = time.thread_time,
                 live_cpu: Callable[[int], float | None] = thread_cpu_s):
        self._clock, self._own_cpu, self._live_cpu = clock, own_cpu, live_cpu
        self._lock = threading.Lock()
        self._spans: dict[int, _Span] = {}
        self._next = 0

    def begin(self, what: str) -> int:
        """Work starts in the calling thread; `end` must be called from the same thread."""
        span = _Span(what, threading.get_native_id(), self._own_cpu())
        with self._lock:
            self._next += 1
            self._spans[self._next] = span
            return self._next

    def end(self, token: int) -> None:
        cpu = self._own_cpu()
        with self._lock:
            self._spans[token] = replace(self._spans[token], ended=self._clock(), cpu1=cpu)
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

    def mark(self) -> Mark:
        """Taken when a race starts."""
        with self._lock:
            t0, running = self._clock(), {t: s.thread for t, s in self._spans.items() if s.ended is None}
        return Mark(t0, {token: self._live_cpu(thread) for token, thread in running.items()})

    def since(self, mark: Mark) -> list[str]:
        """What took at least MIN_CPU_S of its thread's CPU between `mark` and now, each named once,
        oldest first."""
        with self._lock:
            spans = list(self._spans.items())     # in the order work began (tokens grow); frozen: safe to read after
        names = []
        for token, span in spans:
            if span.ended is not None and span.ended <= mark.t0:
                continue                                      # over before the race began
            start = mark.cpu.get(token, span.cpu0)              # its clock at the mark, if it ran then
            end = span.cpu1 if span.ended is not None else self._live_cpu(span.thread)
            used = float("inf") if start is None or end is None else end - start
            if used >= MIN_CPU_S:
                names.append(span.what)
        return list(dict.fromkeys(names))
