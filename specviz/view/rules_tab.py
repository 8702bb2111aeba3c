"""The "Rules" tab, the acceptance rules side by side (issue 26): one prompt judged by five acceptance rules, side by side.

With the page's prompt, pair and settings, at the tab's own temperature (default 1; the rules
differ only when sampling), it races each rule of engine/loop/rules.py (exact, sample_match,
greedy_match, typical, ensemble(w=0.5)) against plain decoding, RULE_TOKENS new tokens each,
through the app's decoding slots (app/gpu_calls.py in app.sliced: Stop or a departed visitor
ends it after the current item), and shows per rule a = accepted / judged, a_d = accepted /
drafted, tau and the measured speedup (engine/metrics/measures.py). For the first position it takes the
target's p and the draft's q (the lossless check's own first sample, gpu_calls.lossless_results)
and shows each rule's exact output law (rules.output_distribution) against p with its total
variation, and a Monte-Carlo check (rules.simulate, DRAWS draws, chi-square p-value from
engine/analysis/lossless.py): exact and sample_match pass, lossy rules are labelled LOSSY wherever they
appear and fail when their distance is larger than the draws' noise. Every model text is escaped.
"""
from __future__ import annotations

import threading
from functools import partial
from dataclasses import dataclass, replace

import gradio as gr
import plotly.graph_objects as go
import torch

from ..app import gpu_calls
from ..app.request import RunRequest, prepare
from ..app.settings import as_float
from ..app.slots import Stopped
from ..app.state import AppState
from ..engine.metrics import measures
from ..engine.loop.events import from_dict
from ..engine.analysis.lossless import chi_square_pvalue
from ..engine.loop.rules import get_rule, output_distribution, simulate
from ..engine.analysis.stats import RunStats
from ..errors import SpecvizError
from .handlers import status_html
from .plots import AXES, BASE, LAYOUT, token_labels
from .render import clean
from .visitor import visitor_gone

RULES = ("exact", "sample_match", "greedy_match", "typical", "ensemble(w=0.5)")
RULE_TOKENS = 48               # new tokens per rule's race (fewer when the server allows fewer)
DRAWS = 4000                   # Monte-Carlo draws of the first position per rule
ALPHA = 0.01                   # the Monte-Carlo verdict's significance level
T_MIN, T_MAX = 0.05, 2.0       # the tab's temperature (the page's slider range, without greedy)
COVER, SUPPORT_CAP = 0.9999, 1024   # the first position's tokens: this much of p and of q, at most this many
LOSSY = "LOSSY: output is not the target's distribution"
COLORS = ("#1b7f5b", "#2f9e77", "#c0392b", "#d9822b", "#8e44ad")
# The two lossless rules share the greens (the app's colour for "keeps p"); sample_match's bars are
# hatched, as its green alone sat too close to exact's (CIELAB Delta E 11.8) to tell the bars apart.
PATTERNS = ("", "/", "", "", "")


@dataclass
class FirstPosition:
    """The first position's p and q on the tokens that carry nearly all their mass, renormalized there."""
    ids: list[int]                 # vocabulary ids of the support, most likely first
    p: torch.Tensor                # (S,) float64
    q: torch.Tensor                # (S,) float64
    cover_p: float                 # the share of p (and of q) the support held before renormalizing
    cover_q: float


@dataclass
class RuleRow:
    name: str
    lossless: bool
    description: str
    expected: float | None = None  # first position: E[accept] in closed form
    tv: float | None = None        # first position: total variation between the rule's exact output law and p
    mc_p: float | None = None      # Monte-Carlo chi-square p-value against p
    a: float | None = None
    a_d: float | None = None
    tau: float | None = None
    speedup: float | None = None
    tokens: int = 0
    recorded: str | None = None    # the rule the run's Done.stats names

    @property
    def mc_passed(self) -> bool | None:
        return None if self.mc_p is None else self.mc_p >= ALPHA


def first_position(p: torch.Tensor, q: torch.Tensor) -> FirstPosition:
    """The most likely tokens of p + q until both are covered to COVER (at most SUPPORT_CAP)."""
    p, q = p.double().flatten(), q.double().flatten()
    order = torch.argsort(p + q, descending=True)
    both = torch.minimum(torch.cumsum(p[order], 0), torch.cumsum(q[order], 0))
    n = int(min(SUPPORT_CAP, int((both < COVER).sum()) + 1, p.numel()))
    idx = order[:n]
    cover_p, cover_q = float(p[idx].sum()), float(q[idx].sum())
    return FirstPosition(idx.tolist(), p[idx] / cover_p, q[idx] / cover_q, cover_p, cover_q)


def check_rule(row: RuleRow, fp: FirstPosition, draws: int, seed: int) -> torch.Tensor:
    """Fill the row's first-position figures; returns the rule's exact output law on the support."""
    rule = get_rule(row.name)
    law = output_distribution(rule, fp.p, fp.q)
    row.expected = float(rule.expected_acceptance(fp.p, fp.q))
    row.tv = 0.5 * float((law - fp.p).abs().sum())
    emitted, _ = simulate(rule, fp.p, fp.q, draws, torch.Generator().manual_seed(seed))
    counts = torch.bincount(emitted, minlength=fp.p.numel())
    row.mc_p = chi_square_pvalue(counts.tolist(), fp.p.tolist())
    return law


def race_rule(app: AppState, run, row: RuleRow, stop) -> None:
    """Race the row's rule against plain decoding through the app's slots; fill a, a_d, tau, speedup."""
    cfg = replace(run.config, rule=row.name)
    stats = RunStats(cfg.k)
    records = gpu_calls.race_records(gpu_calls.handle(app), run.preset.key, run.ids, cfg.to_dict())
    for record in app.sliced(records, stop):
        stats.add(from_dict(record))
    t = stats.tallies["spec"]
    row.a, row.a_d, row.tau = (measures.acceptance_rate(t), measures.draft_acceptance_rate(t),
                               measures.mean_acceptance_length(t))
    row.speedup, row.tokens = stats.measured_speedup(), t.tokens
    row.recorded = getattr(stats.done.get("spec"), "rule", None)


def run_rules(app: AppState, rule_temperature, *form, stop=None, draws: int = DRAWS, **named):
    """The tab's handler. Inputs: temperature, then the form (FORM_FIELDS order). Outputs: result
    HTML, first-position figure, this run's cancel flag (the page's Stop sets it)."""
    cancel, rows = threading.Event(), [RuleRow(get_rule(n).name, get_rule(n).lossless, get_rule(n).description)
                                        for n in RULES]
    gone = stop or visitor_gone()
    halt = lambda: cancel.is_set() or gone()     # noqa: E731
    try:
        t = as_float("temperature", rule_temperature)
        if not T_MIN <= t <= T_MAX:
            raise SpecvizError(f"temperature must be between {T_MIN:g} and {T_MAX:g} here (the rules differ only "
                               f"when sampling), not {t:g}")
        req = replace(RunRequest.from_form(*form, **named), temperature=t)
        run = prepare(app, req, max_new=min(RULE_TOKENS, app.max_new_tokens))
        yield status_html("Waiting for the device …" if app.decoders_busy() else "First position …"), gr.skip(), cancel
        first = list(app.sliced(gpu_calls.lossless_results(gpu_calls.handle(app), run.preset.key, run.ids,
                                                           run.config.to_dict(), 1, 1), halt))[-1]
        figure, note = None, "The drafter proposes no distribution q (prompt lookup): no first-position check."
        if first.q is not None:
            fp = first_position(first.p, first.q)
            laws = [check_rule(row, fp, draws, run.config.seed) for row in rows]
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


def rules_html(rows: list[RuleRow], note: str, status: str) -> str:
    """The per-rule table; every text escaped, classes from a fixed set."""
    # Whether a rule keeps p goes under its name, not in a column of its own: with that column the table
    # was 933 px in the 876 px a 1366 px laptop gives it, and the cut column was the Monte-Carlo verdict.
    head = ("<tr><th>rule</th><th>a</th><th>a_d</th><th>tau</th><th>measured speedup</th>"
            "<th>first position: E[accept]</th><th>distance to p (exact law)</th><th>Monte-Carlo check</th></tr>")
    body = []
    for r in rows:
        label = ("lossless" if r.lossless else LOSSY)
        mc = "" if r.mc_passed is None else ("pass" if r.mc_passed else "fail")
        body.append(
            f'<tr class="{"rule-lossless" if r.lossless else "rule-lossy"}" data-rule="{clean(r.name)}" '
            f'data-lossless="{str(r.lossless).lower()}" data-mc="{mc}">'
            f'<td><b>{clean(r.name)}</b><br><span class="rule-law {"rule-law-keeps" if r.lossless else "rule-law-lossy"}">'
            f'{clean(label)}</span><br><small>{clean(r.description)}</small></td>'
            f"<td>{_fmt(r.a)}</td><td>{_fmt(r.a_d)}</td><td>{_fmt(r.tau)}</td><td>{_fmt(r.speedup, '.2f', '×')}</td>"
            f"<td>{_fmt(r.expected)}</td><td>{_fmt(r.tv, '.4f')}</td><td>{clean(_mc_cell(r))}</td></tr>")
    return (f'<div class="rules-result"><p class="explain">{clean(status)}</p>'
            f'<div class="rules-scroll"><table class="rules-table">{head}{"".join(body)}</table></div>'
            f'<p class="explain">{clean(note)} a = accepted / judged, a_d = accepted / drafted, tau = tokens per '
            f"target pass (docs/metrics.md); speedup = speculative over plain tokens/s, each on its own clock.</p></div>")


def first_figure(fp: FirstPosition, rows: list[RuleRow], laws: list[torch.Tensor], tokenizer, top: int = 10):
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
    for row, law, color, pattern in zip(rows, laws, COLORS, PATTERNS):
        fig.add_bar(x=labels, y=[float(law[i]) for i in order], marker_color=color, marker_pattern_shape=pattern,
                    name=row.name if row.lossless else f"{row.name} (LOSSY)")
    return fig


def build_rules_tab(app: AppState):
    """The tab's components (call inside a gr.Tab); returns `wire(form, cancel, decode)`,
    which registers its listeners once the page's form exists."""
    gr.Markdown("The same prompt judged by five acceptance rules, each raced against plain decoding "
                f"({RULE_TOKENS} new tokens each), with the prompt, pair and settings on the left at this tab's "
                "temperature. Only **exact** and **sample_match** keep the target's distribution; the others "
                "trade it for acceptance.")
    with gr.Row():
        temperature = gr.Slider(T_MIN, T_MAX, value=1.0, step=0.05, label="temperature (rules differ only when "
                                "sampling)", elem_id="rules-temperature")
        button = gr.Button("Compare the rules", variant="primary", elem_id="rules-run")
    result = gr.HTML("<p class='pane-hint'>Press “Compare the rules”: one row per rule appears here.</p>",
                     elem_id="rules-result")
    plot = gr.Plot(elem_id="plot-rules", show_label=False)

    def wire(form: list, cancel: gr.State, decode: dict) -> None:
        button.click(partial(run_rules, app), [temperature, *form], [result, plot, cancel],
                     api_name="rules", show_progress="hidden", **decode)
    return wire

