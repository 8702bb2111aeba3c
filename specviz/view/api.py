"""The `/generate` endpoint as Gradio sees it: the signature gr.api reads its parameters from (made
from the settings table, app/form_table.py: its names are RunRequest's), gathered into one RunRequest for app/api.py's `generate`; a bad input is
answered with a gr.Error carrying the message.
A visitor's mistake is logged as one line, never a traceback (anyone could fill the log with them);
any other failure is logged in full and answered with one line naming its kind (never Gradio's
generic "the upstream Gradio app has raised an exception", never a server path); a run whose client
left ends early (view/visitor.py)."""
from __future__ import annotations

import inspect
import logging

import gradio as gr

from ..app.api import generate
from ..app.form_table import API_FIELDS, BY_NAME, PAIR, request_default
from ..app.request import RunRequest
from ..app.state import AppState
from ..app.visitor_text import without_paths
from ..errors import SpecvizError
from .visitor import visitor_gone

log = logging.getLogger(__name__)


def generate_endpoint(app: AppState):
    """`generate` bound to this app, with the signature gr.api reads its parameters from: one parameter
    per row of the settings table that /generate takes (app/form_table.py `API_FIELDS`, in the order
    clients send them), with its `request` default."""
    def generate_api(*values, **named) -> dict:
        """One speculative generation: text, token ids, stop reason and stats. chat: the target's chat
        template (None: the pair's default); confidence_stop: a round drafts no more after a draft the
        draft model gave less than it (None: the pair's)."""
        bound = SIGNATURE.bind(*values, **named)
        bound.apply_defaults()
        req = RunRequest(**bound.arguments)
        try:
            return generate(app, req, stop=visitor_gone())
        except SpecvizError as err:
            log.info("/generate refused: %s", str(err).replace("\n", " ")[:300])
            raise gr.Error(without_paths(str(err)).split("\n")[0], print_exception=False) from None
        except Exception as err:      # noqa: BLE001 - a bug or a passing state: the log has it, the client one line
            log.exception("/generate failed")
            raise gr.Error(f"/generate failed on the server ({type(err).__name__}): try again in a moment",
                           print_exception=False) from None
    generate_api.__signature__ = SIGNATURE
    generate_api.__annotations__ = {**{p.name: p.annotation for p in SIGNATURE.parameters.values()},
                                    "return": dict}
    return generate_api


# A value's Python type by the setting's kind (gr.api reads it into the endpoint's JSON schema).
TYPES = {"text": str, "menu": str, "int": int, "float": float, "switch": bool}


def _parameter(setting) -> inspect.Parameter:
    """/generate's parameter for a settings row: no default where the request cannot run without one (the
    prompt, the pair), None where the default is the pair's own."""
    default = request_default(setting)
    kind = TYPES[setting.kind]
    if default in ("", None) and setting.request != PAIR:
        return inspect.Parameter(setting.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=kind)
    return inspect.Parameter(setting.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                             annotation=kind | None if default is None else kind)


SIGNATURE = inspect.Signature([_parameter(BY_NAME[name]) for name in API_FIELDS], return_annotation=dict)
