"""RunStats -> lean plotly figures (few traces, no animation), for the race view (declared, with their
page elements, in view/race_plots.py), the Explain tab's what-if and the lossless check.

Figures are rebuilt from the fold in specviz.engine.analysis.stats; nothing here touches the engine.
"""
from __future__ import annotations

import re

import plotly.graph_objects as go

from ..engine.metrics import measures, theory
from ..engine.loop.detokenize import token_text, visible
from ..engine.analysis.stats import RunStats

SPEC, BASE, THEORY = "#1b7f5b", "#5b6b7f", "#d9822b"
# Transparent backgrounds, mid-grey text and faint grid lines: readable in light and dark mode.
INK, GRID = "#8a8f98", "rgba(138, 143, 152, 0.25)"
LAYOUT = dict(margin=dict(l=48, r=12, t=36, b=72), height=270, template="none",
              paper_bgcolor="rgba(0,0,0,0)", plot_bgcolor="rgba(0,0,0,0)",
              legend=dict(orientation="h", y=-0.38, x=0), font=dict(size=12, color=INK))
AXES = dict(gridcolor=GRID, zerolinecolor=GRID, linecolor=GRID)


def _fig(title: str, x: str, y: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=dict(text=title, x=0.02, font=dict(size=14)), xaxis_title=x, yaxis_title=y, **LAYOUT)
    fig.update_xaxes(**AXES)
    fig.update_yaxes(**AXES)
    return fig


def acceptance_per_round(stats: RunStats) -> go.Figure:
    """Each round's acceptance rate a = accepted / judged (bars) and a over the rounds so far (line): the
    strip's and the ledger's "acceptance rate", the line ending at their figure."""
    fig = _fig("Acceptance rate a, round by round", "round", "a = accepted / judged")
    pts = stats.per_round_acceptance()
    if pts:
        rounds, rates, running = zip(*pts)
        fig.add_bar(x=rounds, y=rates, name="a of this round", marker_color=SPEC, opacity=0.55)
        fig.add_scatter(x=rounds, y=running, name="a so far (the acceptance rate card)", mode="lines",
                        line=dict(color=THEORY, width=3))
    fig.update_yaxes(range=[0, 1.05])
    return fig


def race_chart(stats: RunStats) -> go.Figure:
    fig = _fig("The race: tokens vs. each lane's own clock", "seconds", "tokens")
    for lane, name, color in (("spec", "speculative", SPEC), ("base", "plain target", BASE)):
        fig.add_scatter(x=stats.times[lane], y=stats.tokens[lane], name=name, mode="lines",
                        line=dict(color=color, width=3, shape="hv"))
    return fig


def tokens_per_round_hist(stats: RunStats) -> go.Figure:
    fig = _fig("Accepted drafts per round", "accepted drafts", "share of rounds")
    # Rounds the theory's pmf for k describes: full ones (measures.py) that drafted this k
    # (under adaptive k, rounds of other k are left out rather than mixed in).
    full = [r for r in stats.rounds if r.full and r.drafted == stats.k]
    if full:
        counts = [0] * (stats.k + 1)
        for r in full:
            counts[r.accepted] += 1
        xs = list(range(stats.k + 1))
        fig.add_bar(x=xs, y=[c / len(full) for c in counts], name="measured", marker_color=SPEC)
        a = stats.acceptance_rate
        if a is not None:
            fig.add_scatter(x=xs, y=theory.accepted_pmf(a, stats.k), name=f"theory, a = {a:.2f}",
                            mode="lines+markers", line=dict(color=THEORY, width=3))
    return fig


def acceptance_by_position(stats: RunStats) -> go.Figure:
    fig = _fig("Acceptance a_i by draft position", "position in round", "a_i = accepted / judged there")
    cond = measures.conditional_acceptance(stats.positions.judged, stats.positions.accepted)   # a_i, defined once
    if cond:
        fig.add_bar(x=[p + 1 for p in cond], y=list(cond.values()),
                    marker_color=SPEC, name="measured",
                    customdata=[stats.positions.judged[p] for p in cond],
                    hovertemplate="position %{x}: %{y:.2f} of %{customdata} verified<extra></extra>")
    fig.update_yaxes(range=[0, 1.05])
    return fig


def what_if(a: float, c: float, v: float, k_max: int = 12, width: int = 1, a2: float = 0.0) -> go.Figure:
    """Expected tokens per round and speedup against k, the best k marked (Explain tab).
    v = theory.GPU_IDEAL_V is labelled as the GPU-ideal case in the title. width > 1 adds the speedup of
    a token tree with `width` guesses at the first depth (a2: a later guess kept; theory.py), dashed."""
    ks = list(range(1, k_max + 1))
    priced = "GPU-ideal v = 1" if v == theory.GPU_IDEAL_V else f"v = {v:.2f}"
    fig = _fig(f"What if: a = {a:.2f}, c = {c:.2f}, {priced}", "k (drafts per round, or tree depth)", "")
    fig.add_scatter(x=ks, y=[theory.expected_tokens_per_round(a, k) for k in ks], name="tokens per round",
                    mode="lines+markers", line=dict(color=BASE))
    speed = [theory.expected_speedup(a, k, c, v) for k in ks]
    fig.add_scatter(x=ks, y=speed, name="speedup", mode="lines+markers", line=dict(color=SPEC, width=3))
    best = theory.best_k(a, c, v, k_max)
    if speed[best - 1] > 1.0:     # a star only where speculation pays; else say that no k does
        fig.add_scatter(x=[best], y=[speed[best - 1]], name=f"best k = {best}", mode="markers",
                        marker=dict(color=THEORY, size=14, symbol="star"))
    else:
        fig.add_annotation(x=0.5, y=0.98, xref="paper", yref="paper", showarrow=False,
                           text="no k pays here: every speedup is below 1, plain decoding wins")
    if width > 1:
        tree = [theory.expected_speedup_first_width(a, a2, width, k, c, v) for k in ks]
        fig.add_scatter(x=ks, y=tree, name=f"tree speedup ({width} guesses at depth 1, a2 = {a2:.2f})",
                        mode="lines+markers", line=dict(color=SPEC, width=2, dash="dash"))
    fig.add_hline(y=1.0, line_dash="dot", line_color="#999")
    fig.update_layout(height=320)
    return fig


_SPACE_WORDS = {" ": ("space", "spaces"), "\n": ("newline", "newlines"), "\t": ("tab", "tabs")}
LABEL_MAX = 14      # characters of a token shown on an axis


def readable(text: str) -> str:
    """A token as an axis label a reader can see at plotly's font size: whitespace alone in words
    ("newline + 4 spaces": its glyphs were tiny marks), a token of punctuation alone in quotes ("```"
    read as a speck), anything else as engine/detokenize.visible draws it ("" for a token with no text)."""
    if not text:
        return ""
    if not text.strip():
        runs = [m.group() for m in re.finditer(r"( +|\n+|\t+|.)", text, re.S)]
        words = []
        for run in runs:
            one, many = _SPACE_WORDS.get(run[0], (visible(run[0]), visible(run[0])))
            words.append(one if len(run) == 1 else f"{len(run)} {many}")
        return " + ".join(words)
    shown = visible(text)
    if not any(ch.isalnum() for ch in text):
        return f"\u201c{shown}\u201d"
    return shown


def token_labels(tokenizer, ids) -> list[str]:
    """Axis labels for tokens: each one readable (`readable`), shortened; a token with no text, or a
    label two tokens would share, gets the token id, so different tokens never share a bar."""
    shown = [readable(token_text(tokenizer, i)) for i in ids]
    shown = [s if len(s) <= LABEL_MAX else s[:LABEL_MAX - 1] + "…" for s in shown]
    return [f"{s} #{i}" if s and shown.count(s) > 1 else s or f"id {i}" for s, i in zip(shown, ids)]


def lossless_bars(result, tokenizer, top: int = 12) -> go.Figure:
    """Top tokens by target probability: exact p, the draft's q, and what speculation produced."""
    n = max(1, result.samples)
    ids = sorted(range(result.p.numel()), key=lambda i: -float(result.p[i]))[:top]
    labels = token_labels(tokenizer, ids)
    fig = _fig(f"Next token: {result.samples} speculative samples vs. the target", "token", "probability")
    fig.add_bar(x=labels, y=[float(result.p[i]) for i in ids], name="target p (exact)", marker_color=BASE)
    if result.q is not None:
        fig.add_bar(x=labels, y=[float(result.q[i]) for i in ids], name="draft q (exact)", marker_color="#c9b8e8")
    fig.add_bar(x=labels, y=[result.counts.get(i, 0) / n for i in ids], name="speculative output (observed)",
                marker_color=SPEC)
    fig.update_layout(barmode="group", height=320)
    fig.update_xaxes(type="category")
    return fig
