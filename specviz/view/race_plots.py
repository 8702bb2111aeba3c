"""The race tab's plots, each declared once: its name (the RaceUpdate field that carries it), the page
element it fills and its draw function (from the folded RaceView, so a replayed trace draws the same).
Every plot is drawn once, when the race ends: a streaming race sends its panes and timeline only, so a
phone's main thread is not spent redrawing charts below the fold. The tab lays them out from here
(`lay_out`), the handlers draw and clear them from here (`figures`, NO_PLOTS); nothing else names them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import gradio as gr
import plotly.graph_objects as go

from . import plots
from .kinds_plot import kinds_figure
from .race_view import RaceView

KINDS_TITLE = "Acceptance by kind of token (this race's speculative lane)"


@dataclass(frozen=True)
class RacePlot:
    name: str                               # the RaceUpdate field (view/handlers.py) that carries its figure
    elem_id: str                            # the page element (assets/style.css, the browser tests find it so)
    draw: Callable[[RaceView], go.Figure]   # the figure from the race folded so far
    wide: bool = False                      # a row of its own; the others go two to a row

    def __post_init__(self):
        if not (self.name.startswith("plot_") and self.elem_id == self.name.replace("_", "-")):
            raise ValueError(f"a race plot is named plot_<what> with the element plot-<what>: {self!r}")


RACE_PLOTS = (
    RacePlot("plot_acceptance", "plot-acceptance", lambda view: plots.acceptance_per_round(view.stats)),
    RacePlot("plot_race", "plot-race", lambda view: plots.race_chart(view.stats)),
    RacePlot("plot_hist", "plot-hist", lambda view: plots.tokens_per_round_hist(view.stats)),
    RacePlot("plot_position", "plot-position", lambda view: plots.acceptance_by_position(view.stats)),
    # Acceptance by kind of token, from the fold's KindTally: whole only once the race has ended.
    RacePlot("plot_kinds", "plot-kinds", lambda view: kinds_figure(view.kinds.table(), KINDS_TITLE), wide=True),
)
NAMES = tuple(p.name for p in RACE_PLOTS)
NO_PLOTS = dict.fromkeys(NAMES)          # every race plot cleared


def figures(view: RaceView) -> dict[str, go.Figure]:
    """The race plots of the folded race, by field name."""
    return {p.name: p.draw(view) for p in RACE_PLOTS}


def lay_out(min_width: int) -> dict[str, gr.Plot]:
    """The plots' components, in order (call inside the tab): two to a row where both get `min_width`
    (on a phone each takes the full width, so titles and axis labels are not cut), a wide one alone."""
    out: dict[str, gr.Plot] = {}
    pending: list[RacePlot] = []

    def flush():
        if pending:
            with gr.Row():
                for p in pending:
                    out[p.name] = gr.Plot(elem_id=p.elem_id, show_label=False, min_width=min_width)
            pending.clear()

    for plot in RACE_PLOTS:
        if plot.wide:
            flush()
            out[plot.name] = gr.Plot(elem_id=plot.elem_id, show_label=False)
            continue
        pending.append(plot)
        if len(pending) == 2:
            flush()
    flush()
    return out
