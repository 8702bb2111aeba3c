"""The page's tabs, one module each: `build(shared)` lays its tab out inside the page's gr.Tabs and
wires its own listeners to its handlers, and returns the gr.Tab. `Shared` is what several tabs read:
the app, the settings form in the left column (view/form.py), the visitor's cancel flag (the Stop
button sets it), the page's Blocks, the decoding group's queue settings and the
workshop's progress in the browser's storage (made outside the tabs, so it is read at load).
view/ui.py's `build_demo` only assembles them.
"""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from ...app.state import AppState
from ..form import Form


@dataclass
class Shared:
    app: AppState
    form: Form
    cancel: gr.State        # the running job's threading.Event (race, lossless check, rules), for Stop
    demo: gr.Blocks
    decode: dict            # queue settings of the decoding listeners (concurrency group)
    workshop_progress: gr.BrowserState | None = None     # the workshop's stored progress (outside the tabs)
