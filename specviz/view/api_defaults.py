"""An API call's left-out arguments: the endpoint's defaults, or one line naming the first missing one.

A client of `/generate` that posts `{"data": ["def f():", "bundled"]}` (Gradio's /call route, curl)
sent what the endpoint's signature needs; Gradio itself checks only that as many values came as the
function has parameters, and answers a short list with a generic error and a traceback in the log
`complete` runs where a request joins the queue (view/fair_queue.py), before that check:
for an endpoint made by `gr.api` (its inputs are `gr.Api` components, one per parameter) it appends the
defaults of the parameters left out, or returns the one-line refusal naming the first one that has none.
"""
from __future__ import annotations

import inspect

from gradio.components.api_component import Api


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
