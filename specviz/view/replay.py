"""Replay a downloaded trace in the race tab, with no model run.

The browser sends the file's text (assets/page.js and the race tab's hidden trigger; the server
takes no upload), view/trace_read.py checks it, and its recorded events are folded into a RaceView
exactly as a live race folds the engine's: the same panes, meters, strip, ledger, plots and kinds
chart (handlers.finished), and the same headline and why (handlers._summary). The cost model's
samples the race's ledger read, and whether the machine was busy, travel in the trace's "cost" (a
trace from before it prices from the race's own figures). A file that cannot be replayed is refused
in one line in the race's status, with the last race cleared from view.

A replay costs CPU as a decode does (reading, checking and folding the events, drawing the plots),
so it is bounded like one: its own Gradio group with a limit (view/tabs/race.py), counted in the
per-client and server caps (view/fair_queue.py), and computed only while holding one of the device's
fair slots (app/slots.py: turns round robin by client), so a client looping replays gets one turn
in each round, as everyone else does. The trace's text, sent as the hidden box's value, is emptied
in the session once the race is drawn (Gradio keeps an input's last value there).
"""
from __future__ import annotations

import logging

import gradio as gr

from ..app.run_setup import ran_text, settings_text
from ..app.slots import Stopped
from ..engine.analysis.cost_model import CostModel
from .handlers import RaceUpdate, _refused, _summary, finished
from .form_fill import FILLED, from_trace
from .ledger_view import build as build_ledger
from .race_view import RaceView
from .render import clean, status_html
from .trace_read import Recorded, TraceRefused, read
from .trace_route import download_html

log = logging.getLogger(__name__)


STEP_EVENTS = 200     # events folded between two points where a replay may give the slot up


def replay(recorded: Recorded) -> RaceUpdate:
    """The race tab as the recorded race left it."""
    return list(replaying(recorded))[-1]


def replaying(recorded: Recorded):
    """`replay` in steps: None after every STEP_EVENTS events folded, then the race tab's update (a
    sliced job may give the slot to the next client at each None)."""
    cfg = recorded.config
    view = RaceView(cfg.k)
    for i, event in enumerate(recorded.events, 1):
        view.add(event)
        if i % STEP_EVENTS == 0:
            yield None
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
    yield finished(view, led, status, stopped, download_html(), tree=bool(cfg.tree))._replace(cancel=gr.skip())


def replay_trace(text) -> RaceUpdate:
    """The file's text -> the replayed race, or a one-line refusal."""
    return list(replay_steps(text))[-1]


def replay_steps(text, seen: list | None = None):
    """`replay_trace` in steps (None between them), its last item the update: reading and checking
    the file is one step, then folding its events (`replaying`); the Recorded is added to `seen`."""
    try:
        recorded = read(text)
        if seen is not None:
            seen.append(recorded)
        yield None
        yield from replaying(recorded)
    except TraceRefused as err:
        yield _refused(str(err))
    except Exception as err:   # noqa: BLE001 - events that pass their own checks but make no race
        log.warning("trace replay failed: %s", type(err).__name__)
        yield _refused("This trace could not be replayed: its events do not make up a race.")


def replay_in_turn(app, text, link=None) -> tuple:
    """The hidden trigger's handler: the replayed race (or its refusal) computed in one of the device's
    slots, taken in the client's turn, then the form filled with the trace's settings and prompt
    (form_fill.FILLED's order; nothing changed for a refused file), then an empty value for the trace's
    box (nothing of the file stays in the session). `link`: the page's class setup (its pinned pair and k stay)."""
    update, seen = None, []
    try:
        for step in app.decoders.sliced(replay_steps(text, seen)):      # the slot may pass to the next client between steps
            update = step if step is not None else update
    except Stopped:            # the visitor left, or never came to read it: nothing to draw
        update = _refused("Stopped.")
    filled = from_trace(app, seen[0], link) if seen and "status-error" not in str(update.status) else {}
    return (*update, *(filled.get(name, gr.skip()) for name in FILLED), "")
