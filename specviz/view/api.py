"""The `/generate` endpoint as Gradio sees it: app/api.py's `generate` with the signature
gr.api reads its parameters from, a bad input answered with a gr.Error carrying the message."""
from __future__ import annotations

import gradio as gr

from ..app.api import generate
from ..app.state import AppState
from ..errors import SpecvizError


def generate_endpoint(app: AppState):
    """`generate` bound to this app, with the signature gr.api reads its parameters from."""
    def generate_api(prompt: str, preset: str, k: int = 4, temperature: float = 0.0, top_k: int = 0,
                     top_p: float = 1.0, max_new_tokens: int = 64, seed: int = 0, drafter: str = "model",
                     chat: bool = False) -> dict:
        """One speculative generation: text, token ids, stop reason and stats."""
        try:
            return generate(app, prompt, preset, k, temperature, top_k, top_p, max_new_tokens, seed, drafter, chat)
        except SpecvizError as err:
            raise gr.Error(str(err)) from None
    return generate_api
