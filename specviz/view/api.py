"""A lean API endpoint (`/generate`): one speculative generation, its text and summary.

For scripts and load tests (gradio_client) that want the output, not the page. It checks
its inputs like the page does (through request.prepare) and answers a bad one with a
gr.Error carrying the message. The decoding itself is view/work.py's, as for the page.
"""
from __future__ import annotations

import gradio as gr

from ..engine.events import from_dict
from ..errors import SpecvizError
from . import work
from .app_state import AppState
from .request import RunRequest, prepare


def generate(app: AppState, prompt: str, preset: str, k: int = 4, temperature: float = 0.0, top_k: int = 0,
             top_p: float = 1.0, max_new_tokens: int = 64, seed: int = 0, drafter: str = "model",
             chat: bool = False) -> dict:
    """Speculative decoding of prompt with a menu pair; returns text, token ids, stop reason and stats.
    chat=True wraps the prompt in the target's chat template (instruct models)."""
    try:
        if not isinstance(preset, str) or preset not in app.presets:
            app.preset(preset)                        # a menu pair only: raises the readable error
        req = RunRequest(prompt=prompt, preset=preset, k=k, temperature=temperature, top_k=top_k, top_p=top_p,
                         max_new=max_new_tokens, seed=seed, drafter=drafter, chat=chat)
        run = prepare(app, req)
        work.bind(app)
        with app.decoding():
            records = work.run_records(run.preset.key, run.ids, run.config.to_dict())
        done = from_dict(records[-1])
    except SpecvizError as err:
        raise gr.Error(str(err)) from None
    return {"text": done.text, "token_ids": done.token_ids, "stop_reason": done.stop_reason, "stats": done.stats}


def generate_endpoint(app: AppState):
    """`generate` bound to this app, with the signature gr.api reads its parameters from."""
    def generate_api(prompt: str, preset: str, k: int = 4, temperature: float = 0.0, top_k: int = 0,
                     top_p: float = 1.0, max_new_tokens: int = 64, seed: int = 0, drafter: str = "model",
                     chat: bool = False) -> dict:
        """One speculative generation: text, token ids, stop reason and stats."""
        return generate(app, prompt, preset, k, temperature, top_k, top_p, max_new_tokens, seed, drafter, chat)
    return generate_api
