"""An API call's arguments, before Gradio reads them: left-out ones filled in, a wrong count or a
wrong type refused in one line.

A client of `/generate` that posts `{"data": ["def f():", "bundled"]}` (Gradio's /call route, curl)
sent what the endpoint's signature needs; Gradio itself checks only that as many values came as the
function has parameters, and answers a short list with a generic error and a traceback in the log.
`complete` runs where a request joins the queue (view/fair_queue.py), before that check: for an
endpoint made by `gr.api` (its inputs are `gr.Api` components, one per parameter) it appends the
defaults of the parameters left out, or returns the one-line refusal naming the first one that has none.

`refuse` then checks what Gradio lets through: more values than the endpoint has inputs (a
`/generate` sent 20 values ran with as many as it has parameters and dropped the rest), and a value
of the wrong kind for a text box or a checkbox (gr.Textbox turns a number or a list into its text,
so stop strings sent as `[".", "\\n"]` ran as the text "['.', '\\n']"). The form's other
fields reach the app's own checks as sent (view/lenient.py, app/settings.py).
"""
from __future__ import annotations

import inspect
import math

import gradio as gr
from gradio.components.api_component import Api


MAX_CHOICE_CHARS = 200     # longer than any menu choice of the page


def complete(body, fn) -> str | None:
    """Fill `body.data` up with `fn`'s defaults; the refusal when a parameter without one is missing, else None."""
    if fn is None or not fn.inputs or not all(isinstance(c, Api) for c in fn.inputs):
        return None
    data = body.data
    try:
        params = list(inspect.signature(fn.fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if not isinstance(data, list) or len(data) >= len(params) or len(params) != len(fn.inputs):
        return None
    for p in params[len(data):]:
        if p.default is inspect.Parameter.empty:
            after = f" (after {params[len(data) - 1].name})" if data else ""
            return f"/{fn.api_name} needs {p.name}{after}: it has no default"
    body.data = data + [p.default for p in params[len(data):]]
    return None


def refuse(body, fn) -> str | None:
    """One line when `body.data` does not fit `fn`'s inputs (count, or a text box / checkbox value, a
    number, a menu value, an example's index), or `fn` runs in the page only; else None."""
    if fn is None:
        return None
    if fn.fn is None:                 # a script of the page's own (Gradio answers a bare IndexError)
        return "This event runs in the page only"
    if fn.inputs is None:
        return None
    data = body.data
    public = isinstance(fn.api_name, str) and fn.api_name and getattr(fn, "api_visibility", "public") != "private"
    name = f"/{fn.api_name}" if public else "this event"
    if not isinstance(data, list):
        return f"{name} takes a list of values"
    if len(data) != len(fn.inputs):
        return f"{name} takes {len(fn.inputs)} values, not {len(data)}"
    for component, value in zip(fn.inputs, data):
        # Gradio's own sliders compare any value with their range before any handler runs, None too
        # (a TypeError with a traceback), as its number boxes do every value but None (the form's own
        # are view/lenient.py's, whose values reach the app's checks as sent).
        checked_by_gradio = "preprocess" not in vars(component)
        if isinstance(component, gr.Slider) and checked_by_gradio and not _number(value):
            return f"{_label(component)} must be a number, not {str(value)[:40]!r}"
        if value is None:
            continue
        if isinstance(component, gr.Textbox) and not isinstance(value, str):
            return f"{_label(component)} must be text, not {type(value).__name__}"
        if isinstance(component, gr.Checkbox) and not isinstance(value, bool):
            return f"{_label(component)} must be true or false, not {str(value)[:40]!r}"
        # Gradio's own refusal of a value not among a menu's choices quotes the value whole, in the
        # answer and the log: a long one is refused here, cut (no choice on the page is this long).
        if isinstance(component, (gr.Radio, gr.Dropdown)) and len(str(value)) > MAX_CHOICE_CHARS:
            return f"{_label(component)} must be one of its choices, not {str(value)[:40]!r}…"
        if isinstance(component, gr.Number) and checked_by_gradio and not _number(value):
            return f"{_label(component)} must be a number, not {str(value)[:40]!r}"
        if isinstance(component, gr.Dataset) and not (type(value) is int and 0 <= value < len(component.samples)):
            return f"{_label(component)} must be the index of one of its examples, not {str(value)[:40]!r}"
    return None


def _number(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _label(component) -> str:
    label = getattr(component, "label", None)
    return str(label).split(" (")[0] if label else "a value"
