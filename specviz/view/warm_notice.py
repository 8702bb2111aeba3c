"""The page's line while the default pair warms up, and the first race that starts by itself after it.

A page opened while the app is still warming up its default pair (app/warming.py) shows, in the title
line, "Warming up (about N s): loading <pair> ..." counting down as it goes; once the pair is ready the
line goes and, if the visitor has not raced yet, the page presses Run itself (AUTORUN), so a lesson's
first race starts the moment it can. A page opened after warm-up shows nothing. The pair's label is
escaped (gr.HTML does not sanitize).
"""
from __future__ import annotations

import html
import time

from ..app.state import AppState
from ..app.warming import warming_text

POLL_S = 1.0          # how often the line is brought up to date while the pair warms up
READY = '<div class="warm-notice" data-warm="ready" hidden></div>'
# After the notice's last update: a page that waited for warm-up and has not raced yet starts its race.
AUTORUN = ("() => { const ready = document.querySelector('#warm-notice [data-warm=ready]');"
           " const raced = document.querySelector('#status .status-done, #status .status-error, #status [data-live]');"
           " const run = document.querySelector('#run');"
           " if (ready && !raced && run) run.click(); return []; }")


def notices(app: AppState, poll_s: float = POLL_S):
    """The notice's HTML over time: nothing when the default pair is ready; else the warming line, again
    every `poll_s` with the time left, then READY (which AUTORUN reads)."""
    key = app.pairs.default_preset().key
    left = app.pairs.warming.left(key)
    if left is None:
        yield ""
        return
    while left is not None:
        label, seconds = left
        yield f'<div class="warm-notice" data-warm="warming" role="status">{html.escape(warming_text(label, seconds))}</div>'
        time.sleep(poll_s)
        left = app.pairs.warming.left(key)
    yield READY
