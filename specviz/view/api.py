"""The `/generate` endpoint as Gradio sees it: the signature gr.api reads its parameters from (its
names are RunRequest's), gathered into one RunRequest for app/api.py's `generate`; a bad input is
answered with a gr.Error carrying the message.
A visitor's mistake is logged as one line, never a traceback (anyone could fill the log with them);
any other failure is logged in full and answered with one line naming its kind (never Gradio's
generic "the upstream Gradio app has raised an exception", never a server path); a run whose client
left ends early (view/visitor.py)."""
from __future__ import annotations

import logging

import gradio as gr

from ..app.api import generate
from ..app.request import RunRequest
from ..engine.loop.drafters import DEFAULT_DRAFTER
from ..app.state import AppState
from ..app.visitor_text import without_paths
from ..errors import SpecvizError
from .visitor import visitor_gone

log = logging.getLogger(__name__)


def generate_endpoint(app: AppState):
    """`generate` bound to this app, with the signature gr.api reads its parameters from."""
    def generate_api(prompt: str, preset: str, k: int = 4, temperature: float = 0.0, top_k: int = 0,
                     top_p: float = 1.0, max_new_tokens: int = 64, seed: int = 0, drafter: str = DEFAULT_DRAFTER,
                     chat: bool | None = None, confidence_stop: float | None = None) -> dict:
        """One speculative generation: text, token ids, stop reason and stats. chat: the target's chat
        template (None: the pair's default); confidence_stop: a round drafts no more after a draft the
        draft model gave less than it (None: the pair's)."""
        req = RunRequest(prompt=prompt, preset=preset, k=k, temperature=temperature, top_k=top_k, top_p=top_p,
                         max_new_tokens=max_new_tokens, seed=seed, drafter=drafter, chat=chat,
                         confidence_stop=confidence_stop)
        try:
            return generate(app, req, stop=visitor_gone())
        except SpecvizError as err:
            log.info("/generate refused: %s", str(err).replace("\n", " ")[:300])
            raise gr.Error(without_paths(str(err)).split("\n")[0], print_exception=False) from None
        except Exception as err:      # noqa: BLE001 - a bug or a passing state: the log has it, the client one line
            log.exception("/generate failed")
            raise gr.Error(f"/generate failed on the server ({type(err).__name__}): try again in a moment",
                           print_exception=False) from None
    return generate_api
