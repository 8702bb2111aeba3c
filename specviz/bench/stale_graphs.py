"""Stand-ins for the graph path's checks (runtime/graph_capture.py): a capturer whose replays read the
host state of their capture, and the k advice's lazy-capture flow. The tests (tests/test_graph_trust.py,
tests/test_graph_aim.py) and scripts/gpu_check.py's trust parts run them: a check aimed right catches the
first and still trusts a correct model through the second. Nothing at run time imports this."""
from __future__ import annotations

import torch

from ..runtime import graph_model
from ..runtime.graph_capture import EagerCapturer


class FrozenHostState(EagerCapturer):
    """A stand-in whose replays see the host state of their capture, as a real graph would if the
    step had read it on the host: the slot's length and the positions its shape was captured at."""

    def capture(self, step):
        bundle, positions = step.func.__self__, step.args[1]
        replay = super().capture(step)
        frozen_length, frozen_positions = bundle.slot.length, positions.clone()

        def run():
            live_length, live_positions = bundle.slot.length, positions.clone()
            bundle.slot.length = frozen_length
            positions.copy_(frozen_positions)
            try:
                return replay.run()
            finally:
                bundle.slot.length = live_length
                positions.copy_(live_positions)
        return type("Frozen", (), {"run": staticmethod(run), "output": replay.output})


def time_like_the_k_advice(model, vocab: int, context: list[int], capturer=None) -> None:
    """What the k advice's timing does (engine/analysis/calibrate.py): a graph cache with no planned
    shapes, fed a context, then 1..4 tokens again and again at one position, each shape captured lazily
    at its first feed."""
    lm = graph_model.GraphCachedModel(model, vocab, positions=len(context) + 64, capturer=capturer)
    try:
        ctx = torch.tensor(context)
        lm.feed(ctx, keep=1)
        for n in (1, 2, 3, 4):
            for _ in range(3):
                lm.feed(ctx[:n], keep=n)
                lm.crop(len(context))
    finally:
        lm.release()
