"""Every page function answers an unexpected failure in one line, in the reply and in the log.

A handler's own refusals are one line already (app/settings.py, the tabs' status lines); what is left
is a value no check foresaw reaching code that fails on it (a list where a menu's key goes, a text
where the k box's number goes, sent straight to an event of the page by a script). Gradio then prints
the failure's traceback and answers with no message. `guard(demo)` wraps every function of the page
so that such a failure is logged as one line (the event, the kind of failure, its first 120
characters) and answered as a gr.Error of one line that prints no traceback. Generators stay
generators, so Gradio streams them as before; gr.Error (a handler's own message) passes through.
Gradio's own checks of a value before any handler runs (a menu value not among its choices, a
slider's value out of its range) raise a gr.Error that prints its traceback: `guard` also wraps the
page's `preprocess_data` (for every session, whatever its components' updates) so that those are
logged and answered in one line, cut to 160 characters.
"""
from __future__ import annotations

import functools
import inspect
import logging

import gradio as gr

from ..app.visitor_text import one_line

log = logging.getLogger("specviz.requests")
ANSWER = "This request could not be served: one of its values is not one the page sends."


def guard(demo: gr.Blocks) -> gr.Blocks:
    for block_fn in demo.fns.values():
        if block_fn.fn is not None and not getattr(block_fn.fn, "_one_line", False):
            block_fn.fn = _guarded(block_fn.fn, str(block_fn.api_name))
    if not getattr(demo.preprocess_data, "_one_line", False):
        demo.preprocess_data = _checked(demo.preprocess_data)
    return demo


def _checked(preprocess_data):
    """Gradio's reading of an event's values, its refusals in one line without a traceback."""
    @functools.wraps(preprocess_data)
    async def checked(block_fn, *args, **kwargs):
        try:
            return await preprocess_data(block_fn, *args, **kwargs)
        except Exception as err:     # noqa: BLE001 - gr.Error included: Gradio prints those in full
            name = str(getattr(block_fn, "api_name", "?"))
            text = one_line(getattr(err, "message", err), 160)
            log.warning("event %s refused a value: %s", name, text)
            raise gr.Error(text if isinstance(err, gr.Error) else ANSWER, print_exception=False) from None
    checked._one_line = True
    return checked


def _fail(name: str, err: Exception) -> gr.Error:
    text = " ".join(str(err).split())
    log.warning("event %s refused: %s: %s", name, type(err).__name__, text[:120])
    return gr.Error(ANSWER, print_exception=False)


def _guarded(fn, name: str):
    if inspect.isasyncgenfunction(fn) or inspect.iscoroutinefunction(fn):
        return fn              # the page has none; left as Gradio calls them
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def generator(*args, **kwargs):
            try:
                yield from fn(*args, **kwargs)
            except gr.Error:
                raise
            except Exception as err:     # noqa: BLE001 - the point: one line, never a traceback
                raise _fail(name, err) from None
        wrapper = generator
    else:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except gr.Error:
                raise
            except Exception as err:     # noqa: BLE001
                raise _fail(name, err) from None
    wrapper._one_line = True
    return wrapper
