"""The form's inputs, with Gradio's own value checks left to the app.

gr.Slider, gr.Number, gr.Dropdown and gr.Radio check a value in `preprocess`, before any handler
runs: an API client that sends k = -1 gets Gradio's "Value -1 is less than minimum value 1", a seed
sent as "7" a TypeError, and the page's status line stays on "Starting …". The components made here
are Gradio's own (drawn the same, the page's slider keeps its range on screen) with a `preprocess`
that passes the value through untouched, so the app's one check (app/settings.py, through
request.prepare) sees it and answers in one line naming the field and its range ("k must be between
1 and 12, not 100"); a numeric string such as seed="7" is read as its number there.

An out-of-range value is refused, never clamped: a clamped run would not be the run that was asked
for, and the one-line refusal already says what is allowed.

(Plain instances with `preprocess` replaced, not subclasses: Gradio writes a .pyi file beside the
module of every component subclass it sees.)
"""
from __future__ import annotations

from typing import TypeVar

import gradio as gr

C = TypeVar("C", bound=gr.components.Component)


def unchecked(component: C) -> C:
    """`component` with its value handed to the handler as the client sent it."""
    component.preprocess = _as_sent
    return component


def _as_sent(payload):
    return payload


def Slider(*args, **kwargs) -> gr.Slider:          # noqa: N802 (reads as the component it makes)
    return unchecked(gr.Slider(*args, **kwargs))


def Number(*args, **kwargs) -> gr.Number:          # noqa: N802 (no rounding: 7.5 is refused by name)
    return unchecked(gr.Number(*args, **kwargs))


def Dropdown(*args, **kwargs) -> gr.Dropdown:      # noqa: N802 (single choice, by value: the app checks its menu)
    return unchecked(gr.Dropdown(*args, **kwargs))


def Radio(*args, **kwargs) -> gr.Radio:            # noqa: N802
    return unchecked(gr.Radio(*args, **kwargs))
