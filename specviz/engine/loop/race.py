"""The race: speculative and plain decoding of one prompt, interleaved on one device.

The two lanes never compute at the same time (one thread, one generator step at a
time) and each keeps its own clock (timing.py), so each lane's times are its isolated
times. The scheduler always advances the lane that is behind on its own clock; the
merged stream therefore shows both lanes at matching moments of their own timelines,
which is what a side-by-side view needs. Events keep their `lane` tag.
"""
from __future__ import annotations

import threading
from typing import Iterator

from .baseline import decode_baseline
from .config import SpecConfig
from .events import Event
from ...runtime.pair import ModelPair
from .speculative import speculate


def race(pair: ModelPair, prompt: str | list[int], config: SpecConfig | None = None,
         cancel: threading.Event | None = None) -> Iterator[Event]:
    """Both lanes' events merged by lane clock; ends after both lanes' `Done`."""
    config = config or SpecConfig()
    lanes = {"spec": speculate(pair, prompt, config, cancel, lane="spec"),
             "base": decode_baseline(pair, prompt, config, cancel, lane="base")}
    return _merge(lanes)


def _merge(lanes: dict[str, Iterator[Event]]) -> Iterator[Event]:
    clocks = {name: 0.0 for name in lanes}
    running = set(lanes)
    try:
        while running:
            name = min(running, key=lambda n: (clocks[n], n))
            event = next(lanes[name])
            clocks[name] = event.t
            if event.kind == "done":
                running.discard(name)
            yield event
    finally:
        for gen in lanes.values():
            gen.close()
