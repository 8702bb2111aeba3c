"""The Rules tab: one prompt judged by every registered acceptance rule, side by side.

With the page's prompt, pair and settings, at the tab's own temperature (default 1; the rules
differ only when sampling), app/rules_check.py judges each rule of engine/loop/rules.py's registry
on the first position (exact output law against the target's p, Monte-Carlo check) and races it
against plain decoding, RULE_TOKENS new tokens each, through the app's decoding slots (Stop or a
departed visitor ends it after the current item). This module lays the tab out, wires its button,
and draws the rows: per rule a = accepted / judged, a_d = accepted / drafted, tau, kept / round,
the measured speedup, and the first position's figures, lossy rules labelled LOSSY wherever they appear, each
rule's bars in its registered colour and pattern. Every model text is escaped.
"""
from __future__ import annotations

import threading
from dataclasses import replace
from functools import partial

import gradio as gr
import plotly.graph_objects as go

from ...app import gpu_calls
from ...app.form_table import BY_NAME
from ...app.request import RunRequest, prepare
from ...app.rules_check import (ALPHA, DRAWS, FirstPosition, RuleRow, check_first_position, race_rule,
                                rule_rows)
from ...app.settings import as_float, draft_shape
from ...app.slots import Stopped
from ...app.state import AppState
from ...engine.loop.rules import REGISTRY, get_rule
from ...errors import SpecvizError
from .. import lenient
from ..plots import AXES, BASE, LAYOUT, token_labels
from ..render import clean, status_html
from ..visitor import visitor_gone
from . import Shared

RULE_TOKENS = 48               # new tokens per rule's race (fewer when the server allows fewer)
# The tab's temperature: the page's temperature slider without greedy (its first step up to its top).
_, T_MAX, T_MIN = BY_NAME["temperature"].span
LOSSY = "LOSSY: output is not the target's distribution"


def build(shared: Shared) -> gr.Tab:
    """The tab, its components and its listener."""
    with gr.Tab("Rules", id="rules") as tab:
        gr.Markdown(f"The same prompt judged by {len(REGISTRY)} acceptance rules, each raced against plain decoding "
                    f"({RULE_TOKENS} new tokens each), with the prompt, pair and settings on the left at this tab's "
                    "temperature. Only **exact**, **block** and **sample_match** keep the target's distribution; the "
                    "others trade it for acceptance. **block** judges the drafted block jointly (block verification): "
                    "at one position it is exact, over a block it keeps at least as many drafts a round.")
        with gr.Row():
            # lenient: a value of the wrong kind ("x", None) reaches run_rules' one-line refusal
            temperature = lenient.Slider(T_MIN, T_MAX, value=1.0, step=0.05, label="temperature (rules differ only when "
                                    "sampling)", elem_id="rules-temperature")
            button = gr.Button("Compare the rules", variant="primary", elem_id="rules-run")
        result = gr.HTML("<p class='pane-hint'>Press “Compare the rules”: one row per rule appears here.</p>",
                         elem_id="rules-result")
        plot = gr.Plot(elem_id="plot-rules", show_label=False)
    button.click(partial(run_rules, shared.app), [temperature, *shared.form.inputs], [result, plot, shared.cancel],
                 api_name="rules", show_progress="hidden", **shared.decode)
    return tab


def run_rules(app: AppState, rule_temperature, *form, stop=None, draws: int = DRAWS, **named):
    """The tab's handler. Inputs: temperature, then the form (FORM_FIELDS order). Outputs: result
    HTML, first-position figure, this run's cancel flag (the page's Stop sets it)."""
    cancel, rows = threading.Event(), rule_rows()
    gone = stop or visitor_gone()
    halt = lambda: cancel.is_set() or gone()     # noqa: E731
    try:
        t = as_float("temperature", rule_temperature)
        if not T_MIN <= t <= T_MAX:
            raise SpecvizError(f"temperature must be between {T_MIN:g} and {T_MAX:g} here (the rules differ only "
                               f"when sampling), not {t:g}")
        req = replace(RunRequest.from_form(*form, **named), temperature=t)
        if draft_shape(req.tree) is not None:
            raise SpecvizError("The rules tab checks each rule's law at one drafted position, a chain's: set the "
                               "draft shape to chain (a race runs every rule on a tree too)")
        run = prepare(app, req, max_new_tokens=min(RULE_TOKENS, app.limits.max_new_tokens))
        yield status_html("Waiting for the device …" if app.decoders.busy() else "First position …"), gr.skip(), cancel
        first = list(app.decoders.sliced(gpu_calls.lossless_results(gpu_calls.handle(app), run.preset.key, run.ids,
                                                           run.config.to_dict(), 1, 1), halt))[-1]
        figure, note = None, "The drafter proposes no distribution q (prompt lookup): no first-position check."
        if first.q is not None:
            fp, laws = check_first_position(rows, first.p, first.q, draws, run.config.seed)
            figure, note = first_figure(fp, rows, laws, run.pair.tokenizer), support_note(fp, draws, t)
        for i, row in enumerate(rows):
            yield rules_html(rows, note, f"Racing rule {i + 1} of {len(rows)}: {row.name} …"), figure, gr.skip()
            figure = gr.skip()
            race_rule(app, run, row, halt)
        yield rules_html(rows, note, f"{len(rows)} rules raced, {run.config.max_new_tokens} new tokens each, "
                                     f"temperature {t:g}, seed {run.config.seed}."), figure, None
    except Stopped:
        yield status_html("Stopped.", "done"), gr.skip(), None
    except SpecvizError as err:
        yield status_html(str(err), "error"), gr.skip(), None


def support_note(fp: FirstPosition, draws: int, t: float) -> str:
    return (f"First position at temperature {t:g}: {len(fp.ids)} most likely tokens, holding {fp.cover_p:.4f} of "
            f"p and {fp.cover_q:.4f} of q (renormalized there); {draws:,} Monte-Carlo draws per rule, chi-square "
            f"against p, failing below p-value {ALPHA:g}.")


def _fmt(x, spec=".2f", suffix="") -> str:
    return "—" if x is None else f"{x:{spec}}{suffix}"


def _mc_cell(row: RuleRow) -> str:
    if row.mc_p is None:
        return "—"
    if row.mc_passed:
        verdict = ("passes: consistent with p" if row.lossless
                   else "not detected at these draws (the exact distance is below their noise)")
    else:
        verdict = ("fails: not p" if not row.lossless
                   else "fails: unexpected for a lossless rule (1 run in 100 does by chance: try another seed)")
    shown = "below 1e-300" if row.mc_p == 0 else f"{row.mc_p:.3g}"
    return f"{verdict} (p-value {shown})"


def _breakable(name: str) -> str:
    """A rule's name, escaped, that may wrap after each comma of its parameters: the widest unbreakable
    word of the table otherwise ("typical(epsilon=0.09,delta=0.3)"), which a laptop's width must hold."""
    return clean(name).replace(",", ",<wbr>")


def rules_html(rows: list[RuleRow], note: str, status: str) -> str:
    """The per-rule table; every text escaped, classes from a fixed set."""
    # Whether a rule keeps p goes under its name, not in a column of its own, so the table fits a
    # laptop's width without cutting the Monte-Carlo verdict.
    head = ("<tr><th>rule</th><th>a</th><th>a_d</th><th>tau</th><th>kept / round</th><th>measured speedup</th>"
            "<th>first position: E[accept]</th><th>distance to p (exact law)</th><th>Monte-Carlo check</th></tr>")
    body = []
    for r in rows:
        label = ("lossless" if r.lossless else LOSSY)
        mc = "" if r.mc_passed is None else ("pass" if r.mc_passed else "fail")
        body.append(
            f'<tr class="{"rule-lossless" if r.lossless else "rule-lossy"}" data-rule="{clean(r.name)}" '
            f'data-lossless="{str(r.lossless).lower()}" data-mc="{mc}">'
            f'<td><b>{_breakable(r.name)}</b><br><span class="rule-law {"rule-law-keeps" if r.lossless else "rule-law-lossy"}">'
            f'{clean(label)}</span><br><small>{clean(r.description)}</small></td>'
            f"<td>{_fmt(r.a)}</td><td>{_fmt(r.a_d)}</td><td>{_fmt(r.tau)}</td><td>{_fmt(r.kept)}</td>"
            f"<td>{_fmt(r.speedup, '.2f', '×')}</td>"
            f"<td>{_fmt(r.expected)}</td><td>{_fmt(r.tv, '.4f')}</td><td>{clean(_mc_cell(r))}</td></tr>")
    return (f'<div class="rules-result"><p class="explain">{clean(status)}</p>'
            f'<div class="rules-scroll"><table class="rules-table">{head}{"".join(body)}</table></div>'
            f'<p class="explain">{clean(note)} a = accepted / judged, a_d = accepted / drafted, tau = tokens per '
            f"target pass, kept / round = drafts accepted per round (docs/metrics.md); speedup = speculative over "
            f"plain tokens/s, each on its own clock.</p></div>")


def first_figure(fp: FirstPosition, rows: list[RuleRow], laws: list, tokenizer, top: int = 10):
    """The first position's top tokens by p: p exact, and each rule's exact output law (lossy ones named so)."""
    order = sorted(range(len(fp.ids)), key=lambda i: -float(fp.p[i]))[:top]
    labels = token_labels(tokenizer, [fp.ids[i] for i in order])
    fig = go.Figure()
    fig.update_layout(title=dict(text="First position: each rule's exact output law against the target's p",
                                 x=0.02, font=dict(size=14)), xaxis_title="token", yaxis_title="probability",
                      **{**LAYOUT, "height": 340}, barmode="group")
    fig.update_xaxes(type="category", **AXES)
    fig.update_yaxes(**AXES)
    fig.add_bar(x=labels, y=[float(fp.p[i]) for i in order], name="target p", marker_color=BASE)
    for row, law in zip(rows, laws, strict=True):
        entry = REGISTRY[get_rule(row.name).family]
        fig.add_bar(x=labels, y=[float(law[i]) for i in order], marker_color=entry.colour,
                    marker_pattern_shape=entry.pattern,
                    name=row.name if row.lossless else f"{row.name} (LOSSY)")
    return fig
