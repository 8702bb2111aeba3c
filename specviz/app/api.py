"""The lean API (`/generate`) as logic: one speculative generation, its text and summary.

For scripts and load tests (gradio_client) that want the output, not the page. It checks
its inputs like the page does (through request.prepare) and raises a SpecvizError with a
readable message for a bad one; view/api.py turns that into the gr.Error the client sees.
The decoding itself is app/gpu_calls.py's, as for the page.
"""
from __future__ import annotations

from typing import Callable

from ..engine.loop.events import from_dict
from . import gpu_calls
from .slots import never
from .state import AppState
from .request import RunRequest, prepare


def generate(app: AppState, req: RunRequest, stop: Callable[[], bool] = never) -> dict:
    """Speculative decoding of the request's prompt with a menu pair; returns text, token ids, stop
    reason and stats. A bad input raises SpecvizError. The run goes in slices of the decoding slot
    (others interleave) and raises Stopped once `stop()` is true (the client is gone)."""
    if not isinstance(req.preset, str) or req.preset not in app.pairs.presets:
        app.pairs.preset(req.preset)                        # a menu pair only: raises the readable error
    run = prepare(app, req)
    stream = gpu_calls.run_stream(gpu_calls.handle(app), run.preset.key, run.ids, run.config.to_dict())
    records = list(app.decoders.sliced(stream, stop))
    done = from_dict(records[-1])
    return {"text": done.text, "token_ids": done.token_ids, "stop_reason": done.stop_reason, "stats": done.stats.to_dict()}
