"""The k sweep's figure: the measured races (app/sweep.py's fold) on the theory's curves, best k marked."""
from __future__ import annotations

import plotly.graph_objects as go

from ..app.sweep import Sweep
from .plots import BASE, SPEC, THEORY, _fig


def sweep_figure(sweep: Sweep) -> go.Figure:
    fig = _fig("k sweep: measured races on the theory's curves", "k (drafts per round)", "")
    curve = sweep.theory_curve()
    ks = [p.k for p in sweep.points]
    if curve:
        fig.add_scatter(x=list(curve), y=[s for _, s in curve.values()], mode="lines", name="speedup, theory",
                        line=dict(color=THEORY))
        fig.add_scatter(x=list(curve), y=[e for e, _ in curve.values()], mode="lines", name="tokens/round, theory",
                        line=dict(color=THEORY, dash="dot"))
    fig.add_scatter(x=ks, y=[p.speedup for p in sweep.points], mode="markers", name="speedup, measured",
                    marker=dict(color=SPEC, size=10, symbol="circle"))
    fig.add_scatter(x=ks, y=[p.tokens_per_round for p in sweep.points], mode="markers",
                    name="tokens/round, measured", marker=dict(color=BASE, size=9, symbol="square"))
    for k, label, color in ((sweep.best_measured(), "best k measured", SPEC), (sweep.best_theory(), "best k, theory",
                                                                               THEORY)):
        if k is not None:
            fig.add_vline(x=k, line=dict(color=color, dash="dash", width=1),
                          annotation_text=f"{label}: {k}", annotation_position="top")
    fig.update_layout(height=340)
    fig.update_xaxes(dtick=1)
    return fig
