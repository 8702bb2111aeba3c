"""A lean API endpoint (`/generate`): one speculative generation, its text and summary.

For scripts and load tests (gradio_client) that want the output, not the page. It checks
its inputs like the page does and answers a bad one with a gr.Error carrying the message.
"""
from __future__ import annotations

import gradio as gr

from ..engine import speculate
from ..errors import SpecvizError
from .app_state import AppState
from .settings import check_prompt, make_config, prompt_ids


def generate(app: AppState, prompt: str, preset: str, k: int = 4, temperature: float = 0.0, top_k: int = 0,
             top_p: float = 1.0, max_new_tokens: int = 64, seed: int = 0, drafter: str = "model") -> dict:
    """Speculative decoding of prompt with a menu pair; returns text, token ids, stop reason and stats."""
    try:
        prompt = check_prompt(prompt, app.max_prompt_chars)
        cfg = make_config(drafter, k, False, temperature, top_k, top_p, max_new_tokens, seed, app.limits)
        pair = app.pair(app.preset(preset))
        done = list(speculate(pair, prompt_ids(pair, prompt, app.limits), cfg))[-1]
    except SpecvizError as err:
        raise gr.Error(str(err)) from None
    return {"text": done.text, "token_ids": done.token_ids, "stop_reason": done.stop_reason, "stats": done.stats}
