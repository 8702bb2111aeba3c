"""The Explain tab: how speculative decoding works (explain.md), a p-and-q toy a student drags
(assets/page.js builds it into #pq-toy: move q, watch the chance a draft is kept and the residual
change, and kept drafts plus corrections sum back to p), and a what-if calculator of the expected
speedup from an acceptance rate a, a cost ratio c and a verify ratio v (never priced below one
step, engine/metrics/theory.priced_v), which can take the figures measured on this machine for the
selected pair (app/k_advice.py).
"""
from __future__ import annotations

from functools import partial
from pathlib import Path

import gradio as gr

from ...app.settings import as_float, as_int
from ...app.advisor import Advisor
from ...app.k_advice import SEEN_DIFFERS
from ...engine.metrics import theory
from ..plots import what_if
from ..render import figures_line
from . import Shared

EXPLAIN = (Path(__file__).resolve().parent.parent / "explain.md").read_text(encoding="utf-8")
# explain.md in two parts: how it works, then how much faster; the toy goes between them.
HOW, HOW_FAST = EXPLAIN.split("<!-- toy -->")
TOY_LEAD = ("#### See why the output stays the target's\n"
            "p is a target's distribution over five tokens, q a draft's. Drag q: the chance a draft is kept "
            "(the overlap, Σ min(p, q)) and the residual max(0, p − q) a correction is drawn from both change, "
            "yet for every token, kept drafts plus corrections add back to exactly p.")
# The calculator's sliders: a up to MAX_ACCEPTANCE, c up to MAX_COST_RATIO, v in V_RANGE.
MAX_ACCEPTANCE = 0.99
MAX_COST_RATIO = 1.0
V_RANGE = (theory.MIN_V, 3.0)    # a verify pass costs at least one plain step
MAX_WIDTH = 4                    # the calculator's tree: guesses at the first depth


def build(shared: Shared) -> gr.Tab:
    """The tab, its components and its listeners."""
    with gr.Tab("Explain", id="explain") as tab:
        gr.Markdown(HOW)
        gr.Markdown(TOY_LEAD)
        gr.HTML('<div id="pq-toy"></div>', elem_id="pq-toy-box")       # assets/page.js builds the toy in it
        gr.Markdown(HOW_FAST)
        with gr.Row():
            # Short labels, the definitions as info under them: a long label beside the number box
            # wrapped to several lines on a laptop.
            a = gr.Slider(0, MAX_ACCEPTANCE, value=0.75, step=0.01, label="acceptance rate a",
                          info="share of judged drafts kept", elem_id="whatif-a")
            c = gr.Slider(0, MAX_COST_RATIO, value=0.1, step=0.01, label="cost ratio c",
                          info="a draft step, in target steps", elem_id="whatif-c")
            v = gr.Slider(*V_RANGE, value=1.0, step=0.05, label="verify ratio v",
                          info="a verify pass, in target steps (1 = GPU-ideal)", elem_id="whatif-v")
            k = gr.Slider(2, 32, value=12, step=1, label="largest k shown", elem_id="whatif-k")
        with gr.Row():
            # A token tree (docs/trees.md): w guesses at the first depth, a chain below each; 1 = no tree.
            width = gr.Slider(1, MAX_WIDTH, value=1, step=1, label="tree width w at depth 1",
                              info="1 = the chain only; more adds a dashed tree curve", elem_id="whatif-width")
            a2 = gr.Slider(0, MAX_ACCEPTANCE, value=0.3, step=0.01, label="a later guess kept a2",
                           info="once the guesses before it were rejected", elem_id="whatif-a2")
        here = gr.Button("Use this machine's figures for the selected pair", size="sm", elem_id="whatif-here")
        here_note = gr.HTML(elem_id="whatif-here-note")
        plot = gr.Plot(elem_id="plot-whatif", show_label=False)
    for control in (a, c, v, k, width, a2):
        control.change(what_if_plot, [a, c, k, v, width, a2], plot, api_name=False, show_progress="hidden")
    shared.demo.load(what_if_plot, [a, c, k, v, width, a2], plot, api_name=False)
    here.click(partial(machine_figures, shared.app.advisor, shared.app.pairs.presets), [shared.form.fields["preset"], k], [a, c, v, here_note],
               api_name=False, show_progress="hidden")
    return tab


def what_if_plot(acceptance, cost_ratio, k_max, verify_ratio=theory.GPU_IDEAL_V, width=1, second=0.3):
    """The what-if calculator: a, c and v as set (v = 1 is the GPU-ideal case, and the title says so);
    a tree width above 1 adds the tree w,1,...,1's curve with a2 = `second` (engine/metrics/theory.py)."""
    a = min(max(as_float("acceptance rate", acceptance), 0.0), MAX_ACCEPTANCE)
    c = min(max(as_float("cost ratio", cost_ratio), 0.0), MAX_COST_RATIO)
    v = min(max(as_float("verify ratio", verify_ratio), V_RANGE[0]), 10.0)     # never below one step
    w = min(max(as_int("tree width", width), 1), MAX_WIDTH)
    a2 = min(max(as_float("a later guess kept", second), 0.0), MAX_ACCEPTANCE)
    return what_if(a, c, v, _chart_k_max(k_max), w, a2)


def _chart_k_max(value) -> int:
    """The what-if chart's largest k, as its slider allows (2..32)."""
    return min(max(as_int("k max", value), 2), 32)


def machine_figures(advisor: Advisor, presets: dict, key, k_max=None):
    """The calculator's a, c and v from what the app measured here for the selected pair (app/k_advice.py):
    its draft's held-out acceptance, and the draft step and verify pass timed at load, at the k offered.
    Outputs: the a, c and v sliders, and a line saying where they come from (or why there are none yet).

    The advice prices each k with that k's own timings (a verify pass of 4 tokens may cost more than one
    of 6 on a CPU, as its kernels block the rows); the chart draws every k with the one c and v set here.
    Where that moves the best k, the line says both; where the advised k lies beyond the chart's
    largest (`k_max`), it says so."""
    p = presets.get(key)
    if p is None:
        return gr.skip(), gr.skip(), gr.skip(), figures_line(
            "Pick one of the listed pairs: a pair of your own is not measured here.")
    advice = advisor.advice.get(p.key)
    if advice is None:
        why = ("this host does not time its pairs" if not advisor.enabled or p.acceptance is None else
               "it is timed once loaded: run a race with it first, then press again")
        return gr.skip(), gr.skip(), gr.skip(), figures_line(f"{p.label} is not measured on this machine yet ({why}).")
    if advice.k is None:
        # Inside their noise or too few: shown with their spread, never set on the sliders.
        return gr.skip(), gr.skip(), gr.skip(), figures_line(f"{p.label}: {advice.line()}")
    c, v = advice.c, advice.v
    # Within the sliders' ranges; the line gives the figures as measured, with their spread.
    sliders = (round(min(advice.a, MAX_ACCEPTANCE), 2), round(min(c, MAX_COST_RATIO), 2),
               round(min(max(v, V_RANGE[0]), V_RANGE[1]), 2))
    # A prediction, named so: what is typical here across races (with its count) and the a it assumes; a
    # race that accepted a clearly different a is named beside it, never mixed in.
    runs = advice.model.runs
    line = (f"{p.label}, typical here (across {runs} race{'' if runs == 1 else 's'} and the timing at load; a "
            f"prediction, not one race's figures): a = {advice.a:.2f} assumed (its draft's acceptance "
            f"{advice.source}), "
            f"{advice.figures()}, at k = {advice.k}, the k advised.")
    seen = getattr(advisor, "seen_a", {}).get(p.key)
    if seen is not None and abs(seen - advice.a) > SEEN_DIFFERS:
        line += (f" The latest race accepted {seen:.2f}, {'above' if seen > advice.a else 'below'} the draft's "
                 f"usual {advice.a:.2f}: set a to it to see that race's case.")
    # The best k with this one c and v at every k, over the same ks the advice weighed and with the same
    # unrounded figures: a difference is then the per-k timings' alone (not the sliders' rounding).
    flat_k = advice.flat_k(advisor.k_range)
    if flat_k != advice.k:
        line += (f" Priced with each k's own timings, k = {advice.k} ({advice.expected:.2f}×) is this machine's "
                 f"best, as the k advice says; with k = {advice.k}'s c and v at every k, as the chart draws them, "
                 f"the best is k = {flat_k} ({theory.expected_speedup(advice.a, flat_k, c, v):.2f}×).")
    lo, hi = advice.advice.within
    if lo != hi:
        line += f" k = {lo} to {hi} are within the timings' noise of the best."
    shown = _chart_k_max(k_max if k_max is not None else 12)
    if advice.k > shown:
        line += f" The chart stops at k = {shown}: raise “largest k shown” to see k = {advice.k}."
    return (*sliders, figures_line(line))
