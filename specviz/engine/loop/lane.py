"""The lane protocol both decoders share: step, stop the clock, yield, and end with `Done`.

Until a stop rule fires or `cancel` is set, a lane runs one step (a speculative round, or one
plain token) on its own clock, compute and event building included, stops the clock and only
then yields the step's events: time spent by whoever consumes them, or by the other lane of a
race, never counts against this lane. The step folds its events into the lane's `LaneTally`
as it builds them (measures.py), so `Done.stats` is the same fold the page and the CLI make.
Models and drafters are released in a `finally`, also when the consumer closes the lane early.
Each step holds the device gate shared (graph_capture.py): no CUDA graph is captured anywhere in the
process while a step runs; the graph path's captures happen before the first step (`prepare`).
"""
from __future__ import annotations

from typing import Callable, Iterator

from ...runtime.cached_model import path_stats
from ...runtime.graph_capture import GATE
from .events import Done, Event
from ..metrics.measures import LaneStats, LaneTally
from .output import Output
from ...runtime.timing import LaneClock


def run_lane(out: Output, cancel, lane: str, clock: LaneClock, tally: LaneTally,
             step: Callable[[LaneClock], list[Event]], target, drafter=None,
             extra_stats: dict | None = None) -> Iterator[Event]:
    first = True
    try:
        while out.stop_reason is None and out.remaining > 0:
            if cancel is not None and cancel.is_set():
                out.stop_reason = "cancelled"
                break
            clock.start()
            if first:           # the graph path captures its shapes now, before any step holds the device
                first = False
                for lm in (target, drafter.lm if drafter is not None else None):
                    getattr(lm, "prepare", lambda: None)()
            with GATE.shared():                 # no capture anywhere in the process during a step
                events = step(clock)
                clock.stop()
            yield from events
    finally:
        target.release()
        if drafter is not None:
            drafter.release()
    tally.elapsed_s = clock.total
    stats = LaneStats.of(tally, target_forwards=target.forwards, draft_forwards=drafter.forwards if drafter else 0,
                         **path_stats(target, drafter.lm if drafter else None), **(extra_stats or {}))
    yield Done(text=out.text, token_ids=out.generated, stop_reason=out.stop_reason or "max_tokens",
               stats=stats, lane=lane, t=clock.total)
