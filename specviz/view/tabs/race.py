"""The Race tab: the line of what to expect from the pair (it follows the form's pair menu, view/form.py),
two streaming panes (speculative and plain decoding of the same prompt), their meters, the stats strip,
the ledger, the race's plots (acceptance by kind of token among them, each declared once in
view/race_plots.py), the trace download and "Load a trace" (view/replay.py replays a
downloaded trace here, with no model run, and fills the form with its settings and prompt).
Run clears the last race and shows this tab at once, then view/handlers.py's `run_race` streams
RaceUpdates into it; its outputs are wired by RaceUpdate's field names, so no handler matches a
positional list (a replay fills the same outputs). Stop sets the visitor's cancel flag.
"""
from __future__ import annotations

from functools import partial

import gradio as gr

from ...app import zerogpu
from .. import race_plots
from ..handlers import RaceUpdate, run_race, starting, stop_run
from ..render import LEGEND, hint
from ..live_html import live_html
from ..fair_queue import REPLAY_GROUP
from ..replay import replay_in_turn
from ..trace_read import MAX_BYTES
from ..trace_route import download_html
from . import Shared

# Two plots share a row where both get this width; on a phone each takes the full width, so
# titles and axis labels are not cut.
PLOT_MIN_WIDTH = 340
LOAD_TRACE = ('<label class="trace-load">Load a trace<input type="file" id="trace-file" '
              'accept=".json,application/json"></label><span class="trace-load-note">replays a downloaded '
              'specviz-trace.json here; no model runs</span>')
# The trigger's script: the picked file's text, read here in the browser (a byte past the limit at most),
# and the page's class setup as it is (the handler's second input).
# Run, Race 3x and a replay show the Race tab in the browser, not as an output: Gradio's page refreshes
# the loading state of every component that was ever an event's output, its children too, on each
# message of a streaming event, so gr.Tabs as an output cost a walk of the whole page per update.
SHOW_RACE = "() => { const b = document.querySelector('#race-tab-button'); if (b && b.getAttribute('aria-selected') !== 'true') b.click(); }"
READ_TRACE = f"""async (_, link) => {{
  {SHOW_RACE.split("=> ", 1)[1]}
  const input = document.getElementById("trace-file");
  const file = input && input.files && input.files[0];
  if (!file) return ["", link];
  const text = await file.slice(0, {MAX_BYTES + 1}).text();
  input.value = "";
  return [text, link];
}}"""


def build(shared: Shared) -> gr.Tab:
    """The tab, its components and the Run/Stop listeners."""
    form = shared.form
    with gr.Tab("Race", id="race", elem_id="race-tab") as tab:
        # What to expect from the pair (view/expect_line.py): here, beside the race on every screen, not
        # in the settings, which a phone folds away at load; it follows the pair menu.
        form.show_expect_in(gr.HTML(form.expect_now(), elem_id="pair-expect"))
        status = gr.HTML(elem_id="status")      # the race's own line: not shown over other tabs
        with gr.Row(equal_height=True, elem_id="panes"):
            with gr.Column(min_width=240):
                spec_meter = gr.HTML(elem_id="spec-meter")
                spec_pane = live_html(hint("spec"), elem_id="spec-pane", elem_classes=["token-pane"])
            with gr.Column(min_width=240):
                base_meter = gr.HTML(elem_id="base-meter")
                base_pane = live_html(hint("base"), elem_id="base-pane", elem_classes=["token-pane"])
        # Both lanes on one clock (view/timeline.py), appended live as the panes are.
        timeline = live_html("", elem_id="timeline", elem_classes=["tl-box"])
        gr.HTML(LEGEND, elem_id="legend")
        strip = gr.HTML(elem_id="stats")
        ledger = gr.HTML(elem_id="ledger")
        plots = race_plots.lay_out(PLOT_MIN_WIDTH)        # every race plot, as its registry lays it out
        with gr.Row(elem_id="trace-row"):
            download = gr.HTML(download_html(), elem_id="trace-download", min_width=280)   # by token (trace_route.py)
            gr.HTML(LOAD_TRACE, elem_id="trace-load", min_width=280)      # side by side, stacked on a phone
        # Loading a trace: the page's own file input (assets/page.js presses this hidden trigger), whose
        # script reads the file in the browser and sends its text; the server takes no upload.
        trace_text = gr.Textbox(visible=False)
        trace_go = gr.Button("Replay the trace", visible="hidden", elem_id="trace-load-go")
        api_race = gr.Button(visible=False)          # the API's /race (below)
    outputs = {"status": status, "strip": strip, "spec_meter": spec_meter, "spec_pane": spec_pane,
               "base_meter": base_meter, "base_pane": base_pane, **plots,
               "download": download, "cancel": shared.cancel, "ledger": ledger, "timeline": timeline}
    wired = [outputs[name] for name in RaceUpdate._fields]       # by name (handlers.RaceUpdate)
    # Instant feedback first (and no stale "done" from the previous run), then the race.
    # The page's races stream through their own live feed (view/live_channel.py: Gradio's page does
    # fixed work for every message); the API's /race, on a button the page does not show, through Gradio.
    racing = form.run.click(starting, None, wired, api_name=False, concurrency_limit=None, concurrency_id="ui",
                            show_progress="hidden", js=SHOW_RACE).then(
        partial(run_race, shared.app, live=True), form.inputs, wired, api_name=False, show_progress="hidden",
        **shared.decode)
    api_racing = api_race.click(partial(run_race, shared.app), form.inputs, wired, api_name="race", show_progress="hidden",
                   **shared.decode)
    form.refresh_k_after(racing)
    # "Race 3x": the same race, then two more quietly, for the median and range (view/repeat_races.py).
    racing3 = form.run3.click(starting, None, wired, api_name=False, concurrency_limit=None, concurrency_id="ui",
                              show_progress="hidden", js=SHOW_RACE).then(
        partial(run_race, shared.app, repeat=3, live=True), form.inputs, wired, api_name=False,
        show_progress="hidden", **shared.decode)
    form.refresh_k_after(racing3)
    # A replay costs CPU as a decode does: its own group, with the device's limit, counted in the caps
    # (view/fair_queue.py), computed in the client's turn of the slots; the trace's box emptied after.
    # The replay also fills the form with the trace's settings and prompt, so Run races it again.
    trace_go.click(partial(replay_in_turn, shared.app), [trace_text, form.link], wired + form.filled + [trace_text],
                   js=READ_TRACE,
                   api_name=False, concurrency_limit=shared.app.limits.concurrency_per_device,
                   concurrency_id=REPLAY_GROUP, show_progress="hidden")
    # Stop has its own unlimited group, so it is never queued behind the run it stops. On
    # ZeroGPU the run lives in another process: there Stop also cancels the event itself.
    form.stop.click(stop_run, [shared.cancel], None, api_name="stop", concurrency_limit=None, concurrency_id="stop",
                    cancels=[racing, racing3, api_racing] if zerogpu.ON_ZEROGPU else None)
    return tab
