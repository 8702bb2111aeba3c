"""The `/generate` endpoint as Gradio sees it: app/api.py's `generate` with the signature
gr.api reads its parameters from, a bad input answered with a gr.Error carrying the message.
A visitor's mistake is logged as one line, never a traceback (anyone could fill the log with them);
a run whose client left ends early (view/visitor.py)."""
from __future__ import annotations

import logging

import gradio as gr

from ..app.api import generate
from ..app.state import AppState
from ..errors import SpecvizError
from .visitor import visitor_gone

log = logging.getLogger(__name__)


def generate_endpoint(app: AppState):
    """`generate` bound to this app, with the signature gr.api reads its parameters from."""
    def generate_api(prompt: str, preset: str, k: int = 4, temperature: float = 0.0, top_k: int = 0,
                     top_p: float = 1.0, max_new_tokens: int = 64, seed: int = 0, drafter: str = "model",
                     chat: bool | None = None, confidence_stop: float | None = None) -> dict:
        """One speculative generation: text, token ids, stop reason and stats."""
        try:
            return generate(app, prompt, preset, k, temperature, top_k, top_p, max_new_tokens, seed, drafter, chat,
                            confidence_stop, stop=visitor_gone())
        except SpecvizError as err:
            log.info("/generate refused: %s", str(err).replace("\n", " ")[:300])
            raise gr.Error(str(err), print_exception=False) from None
    return generate_api
