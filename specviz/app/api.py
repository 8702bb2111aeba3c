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


def generate(app: AppState, prompt: str, preset: str, k: int = 4, temperature: float = 0.0, top_k: int = 0,
             top_p: float = 1.0, max_new_tokens: int = 64, seed: int = 0, drafter: str = "model",
             chat: bool | None = None, confidence_stop: float | None = None,
             stop: Callable[[], bool] = never) -> dict:
    """Speculative decoding of prompt with a menu pair; returns text, token ids, stop reason and stats.
    chat=True wraps the prompt in the target's chat template, False sends it raw, None (the default)
    does what the pair's preset does (on for instruct models), as the page and the CLI do. confidence_stop
    (None: the preset's) ends a round's drafting after a draft the draft gave less than it. A bad input raises SpecvizError.
    The run goes in slices of the decoding slot (others interleave) and raises Stopped once `stop()`
    is true (the client is gone)."""
    if not isinstance(preset, str) or preset not in app.presets:
        app.preset(preset)                            # a menu pair only: raises the readable error
    req = RunRequest(prompt=prompt, preset=preset, k=k, temperature=temperature, top_k=top_k, top_p=top_p,
                     max_new=max_new_tokens, seed=seed, drafter=drafter, chat=chat, confidence_stop=confidence_stop)
    run = prepare(app, req)
    stream = gpu_calls.run_stream(gpu_calls.handle(app), run.preset.key, run.ids, run.config.to_dict())
    records = list(app.sliced(stream, stop))
    done = from_dict(records[-1])
    return {"text": done.text, "token_ids": done.token_ids, "stop_reason": done.stop_reason, "stats": done.stats.to_dict()}
