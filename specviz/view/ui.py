"""build_demo(): the Gradio Blocks of the specviz app, assembled from its parts.

The page: the settings form in a left column (view/form.py: prompt, Run/Stop, pair, drafter and
sampling settings) beside the tabs, one module each in view/tabs/ (race, step mode, the lossless
check, the workshop, the explanation with its what-if calculator, the acceptance rules, and a vLLM
server's view, shown when the host listed one), each of which lays itself out and wires its own
listeners. build_demo() only assembles them, with what several tabs share (view/tabs/__init__.py's
Shared), plus the `/generate` API, the projector switch (in the title line, for every tab) and the
page-level switch that hides the settings column in the workshop. It does not launch: app.py does.
"""
from __future__ import annotations

from functools import partial

import gradio as gr

from ..app import gpu_calls
from ..app.state import AppState
from ..paths import ASSETS
from . import warm_notice
from .api import generate_endpoint
from .form import build_form
from .bad_bodies import exception_handlers
from .closed_routes import routes as closed_routes
from .trace_route import routes as trace_routes
from .live_channel import routes as live_routes
from .tabs import Shared, explain, lossless, race, rules, server, step, workshop

# A phone shows the first sentence only (style.css), so the race stays on the first screen.
INTRO = ("<h1>specviz</h1><p><span class=\"lead\">A small draft model guesses tokens; the big target model checks "
         "them all in one pass.</span> <span class=\"more\">Watch every guess get accepted, rejected or corrected, "
         "racing plain decoding on the same machine.</span></p>")
# The tabs in the page's order; the workshop chooses its own pair and settings.
TABS = (race, step, lossless, workshop, explain, rules, server)   # server: shown when the host listed one


SESSIONS_KEPT = 2000         # ~400 MB of session state at most; far more tabs than the queue serves at once


def launch_options(limits=None) -> dict:
    """Theme, stylesheet and the page's script (panes that follow the newest token, step keys);
    Gradio 6 takes them in launch(). `limits` (the profile's) sizes Gradio's worker threads."""
    return {"max_threads": worker_threads(limits),
            "theme": gr.themes.Soft(primary_hue="emerald", neutral_hue="slate"),
            "css_paths": [str(ASSETS / "style.css")], "js": (ASSETS / "page.js").read_text(encoding="utf-8"),
            "max_file_size": 1,      # the page has no upload component (and the route is closed: closed_routes.py)
            # Sessions whose state Gradio keeps (least recently used dropped first): each holds a copy of
            # every block's config, ~0.2 MB for this page, so Gradio's 10,000 could grow to ~2 GB as new
            # session ids come (a client can invent one per request).
            "state_session_capacity": SESSIONS_KEPT,
            # No run history: Gradio's page would keep each visitor's last 100 runs, prompts and panes,
            # in the browser's storage, re-reading and re-writing all of it on every message of a race
            # (a second of a throttled phone's main thread per race).
            "run_history": False,
            # trace downloads by token (view/trace_route.py); a race's live feed by token
            # (view/live_channel.py); the upload route closed (view/closed_routes.py)
            "app_kwargs": {"routes": trace_routes() + live_routes() + closed_routes(),
                           # a body the server cannot read: one line, no traceback (view/bad_bodies.py)
                           "exception_handlers": exception_handlers()}}


def worker_threads(limits=None) -> int:
    """Gradio's worker threads: one for every work event the fair queue may admit (each waits for its
    turn of the device in its own thread, app/slots.py, saying its place in line) and room for the
    page's quick events beside them. Gradio's 40 would leave a room's races waiting where no place is
    told, behind a hostile address's."""
    if limits is None:
        return 40
    return 2 * limits.queue_size + limits.jobs_per_address + 32


def build_demo(app: AppState | None = None) -> gr.Blocks:
    app = app or AppState()
    gpu_calls.handle(app)       # registered before ZeroGPU forks its worker, as the decoding functions find it
    # No Gradio limit on the decoding group: the decoding itself is bounded by the app's own slots
    # (app.decoders.sliced), so a request whose pair is still loading holds up no one. Requests in
    # flight are bounded by Gradio's worker threads, its queue size and view/fair_queue.py's
    # per-session cap.
    decode = {"concurrency_id": "decode", "concurrency_limit": None}
    with gr.Blocks(title="specviz: speculative decoding, visualized") as demo:
        gr.HTML(INTRO, elem_id="title")
        # Projector mode: the whole page larger for a room, from any tab (in the title line).
        projector = gr.Checkbox(False, label="projector mode", elem_id="projector", container=False)
        # The first minute: while the default pair warms up, a line says so (view/warm_notice.py).
        warm = gr.HTML("", elem_id="warm-notice")
        cancel = gr.State(None)
        progress = workshop.progress_store()     # outside the tabs: mounted, so read, at page load
        with gr.Row(equal_height=False, elem_id="main-row"):
            form = build_form(app, demo)
            with gr.Column(scale=3, elem_id="results"):
                # never an event's output (view/tabs/race.py's SHOW_RACE says why)
                with gr.Tabs(elem_id="tabs"):
                    shared = Shared(app, form, cancel, demo, decode, progress)
                    built = {module: module.build(shared) for module in TABS}
        gr.api(generate_endpoint(app), api_name="generate", **decode)
        # The workshop's exercises choose their own pair and settings: the settings column is hidden
        # while its tab is open (in the page only, no request), and comes back with any other tab.
        for module, tab in built.items():
            js = "add" if module is workshop else "remove"
            tab.select(None, None, None, api_name=False, js=f"() => {{ document.body.classList.{js}('ws-open'); }}")
        # A page opened during warm-up: the line counts down, then its first race starts by itself.
        demo.load(partial(warm_notice.notices, app), None, warm, api_name=False, show_progress="hidden",
                  concurrency_id="ui", concurrency_limit=None).then(
            None, None, None, api_name=False, js=warm_notice.AUTORUN)
        projector.change(None, [projector], None, api_name=False,
                         js="(on) => { document.body.classList.toggle('projector', on); return []; }")
    return demo
