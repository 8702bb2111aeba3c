"""Acceptance by kind of token, as one lean plotly bar chart.

The rows are engine/analysis/token_kinds.py's table ({kind, drafted, judged, accepted, acceptance_rate,
draft_acceptance_rate}, folded from a run's events by KindTally): one bar per kind for
a = accepted / judged with its counts written on it, and a marker for a_d = accepted / drafted
(measures.py's definitions). The race tab draws it from its own fold (RaceView.kinds), the workshop
from an exercise's table. Kind names come from the fixed set KINDS; any other row is dropped.
"""
from __future__ import annotations

import plotly.graph_objects as go

from ..engine.analysis.token_kinds import KINDS
from .plots import AXES, LAYOUT, SPEC, THEORY

def kinds_figure(table: list[dict], title: str = "Acceptance by kind of token") -> go.Figure:
    """Bars of a per kind (text: accepted / judged), diamonds of a_d; kinds never judged have no bar."""
    rows = [r for r in table if r.get("kind") in KINDS]
    fig = go.Figure()
    fig.update_layout(title=dict(text=title, x=0.02, font=dict(size=14)), xaxis_title="kind of drafted token",
                      yaxis_title="share kept", **{**LAYOUT, "height": 300})
    fig.update_xaxes(type="category", **AXES)
    fig.update_yaxes(range=[0, 1.12], **AXES)
    if not rows:
        return fig
    # Two-word kinds on two lines: on a phone a one-line "word continuation" was cut at the plot's edge.
    names = [r["kind"].replace("_", "<br>") for r in rows]
    words = [r["kind"].replace("_", " ") for r in rows]
    fig.add_bar(x=names, y=[r["acceptance_rate"] or 0.0 for r in rows], name="a = accepted / judged",
                marker_color=SPEC, text=[f"{r['accepted']}/{r['judged']}" for r in rows], textposition="outside",
                customdata=[[r["drafted"], w] for r, w in zip(rows, words)],
                hovertemplate="%{customdata[1]}: a = %{y:.2f} (%{text} judged, %{customdata[0]} drafted)<extra></extra>")
    fig.add_scatter(x=names, y=[r["draft_acceptance_rate"] or 0.0 for r in rows], mode="markers",
                    name="a_d = accepted / drafted", marker=dict(symbol="diamond", size=9, color=THEORY),
                    customdata=words, hovertemplate="%{customdata}: a_d = %{y:.2f}<extra></extra>")
    return fig
