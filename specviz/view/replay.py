"""Replay a downloaded trace in the race tab, with no model run.

The browser sends the file's text (assets/page.js and the race tab's hidden trigger; the server
takes no upload), view/trace_read.py checks it, and its recorded events are folded into a RaceView
exactly as a live race folds the engine's: the same panes, meters, strip, ledger, plots and kinds
chart (handlers.finished), and the same headline and why (handlers._summary). The cost model's
samples the race's ledger read, and whether the machine was busy, travel in the trace's "cost" (a
trace from before it prices from the race's own figures). A file that cannot be replayed is refused
in one line in the race's status, with the last race cleared from view.
"""
from __future__ import annotations

import logging

import gradio as gr

from ..app.run_setup import ran_text, settings_text
from ..engine.analysis.cost_model import CostModel
from .handlers import RaceUpdate, _refused, _summary, finished
from .ledger_view import build as build_ledger
from .race_view import RaceView
from .render import clean, status_html
from .trace_read import Recorded, TraceRefused, read
from .trace_route import download_html

log = logging.getLogger(__name__)


def replay(recorded: Recorded) -> RaceUpdate:
    """The race tab as the recorded race left it."""
    cfg = recorded.config
    view = RaceView(cfg.k)
    for event in recorded.events:
        view.add(event)
    cost = recorded.cost or {}
    model = None
    if cost.get("k"):                  # the cost model's samples the race's ledger read, as they were
        model = CostModel(("trace", "", "", ""))
        model.c_samples, model.v_samples = {cost["k"]: cost["c"]}, {cost["k"] + 1: cost["v"]}
    led = build_ledger(view.stats, model, cost.get("busy", ""))
    stopped = "cancelled" in view.stats.stop_reasons.values()
    status = (status_html("Stopped.", "done status-stopped") if stopped
              else _summary(view, led, None, cfg.greedy, recorded.dtype, tree=cfg.tree))
    said = ran_text(recorded.label, settings_text(cfg), recorded.prompt)
    status += (f'<div class="run-setup" id="race-ran" data-replayed="1">Replayed from a trace, no model ran: '
               f'{clean(said)}</div>')
    # The Stop flag stays as it is: a race of this visitor's own may still be running.
    return finished(view, led, status, stopped, download_html(), tree=bool(cfg.tree))._replace(cancel=gr.skip(),
                                                                        tab=gr.Tabs(selected="race"))


def replay_trace(text) -> RaceUpdate:
    """The hidden trigger's handler: the file's text -> the replayed race, or a one-line refusal."""
    try:
        return replay(read(text))
    except TraceRefused as err:
        return _refused(str(err))
    except Exception:          # noqa: BLE001 - events that pass their own checks but make no race
        log.exception("trace replay failed")
        return _refused("This trace could not be replayed: its events do not make up a race.")
