"""Teaching-view handlers: step through rounds, the lossless check, the what-if calculator.

Step mode decodes one run, keeps its event records in gr.State and reveals one round per
click: the drafted tokens first, then each verdict with one sentence that explains the
decision using the round's real numbers.
"""
from __future__ import annotations

from dataclasses import replace

import gradio as gr

from ..engine.events import from_dict
from ..engine.explain import sentence
from ..errors import SpecvizError
from ..app import gpu_calls
from ..app.state import AppState
from ..engine import theory
from .handlers import status_html
from .plots import lossless_bars, what_if
from .render import clean, draft_chips, fragment
from ..app.request import RunRequest, prepare, settle
from ..app.settings import as_float, as_int

STEP_MAX_TOKENS = 64           # step mode decodes at most this many tokens (dozens of clicks)
MIN_SAMPLES, MAX_SAMPLES = 50, 2000   # the lossless check's samples (the slider's range)
MAX_COST_RATIO = 1.0           # the what-if calculator's c (the slider's range)


def _tok(piece: str) -> str:
    return f"<code>{clean(repr(piece))}</code>"


def step_round(app: AppState, state, *form, **named):
    """Next round of step mode. Outputs: step pane, explanation, state.

    The first click decodes the whole run (up to STEP_MAX_TOKENS) in one call to the decoding
    function and keeps its event records in the state; each click then reveals one round. So
    no click holds the decoding slot for longer than that one run, nothing waits between
    clicks, the state is plain data (nothing to close on "Start over"), and on ZeroGPU the
    run happens on the GPU worker. The page reveals the verdicts one by one (CSS), not the server."""
    if not state or state.get("finished"):
        try:
            req = RunRequest.from_form(*form, **named)
            _, cfg = settle(app, req)
            run = prepare(app, req, max_new=min(cfg.max_new_tokens, STEP_MAX_TOKENS))
            with app.decoding():
                records = gpu_calls.run_records(gpu_calls.handle(app), run.preset.key, run.ids, run.config.to_dict())
        except SpecvizError as err:
            return gr.skip(), status_html(str(err), "error"), None
        state = {"records": records, "next": 0, "html": "", "finished": False}
    return _reveal_round(state)


def _reveal_round(state: dict):
    records, i = state["records"], state["next"]
    chips, verdicts, pane_new = "", [], ""
    while i < len(records):
        event = from_dict(records[i])
        i += 1
        if event.kind == "drafted" and not event.token_ids:
            chips = (f'<p class="explain">Round {event.round}: the draft proposes nothing (a draft that reads the '
                     f"target's hidden states has none before the target's first pass; or only one token is left "
                     f"to write), and the target runs one forward pass:</p>")
        elif event.kind == "drafted":
            chips = (f'<p class="explain">Round {event.round}: the draft proposes {len(event.token_ids)} token(s) '
                     f'{draft_chips(event)} and the target checks them all in one forward pass:</p>')
        elif event.kind in ("accepted", "rejected", "resampled", "bonus"):
            verdicts.append(f'<li style="--i: {len(verdicts)}">{sentence(event, quote=_tok)}</li>')
        elif event.kind == "round_end":
            note = (f'<p class="explain reveal" style="--i: {len(verdicts)}">Round {event.round}: {event.accepted} of '
                    f"{event.drafted} drafts accepted, {event.emitted} token(s) added for one target pass. "
                    f"Click “Next round” (or press the right arrow).</p>")
            pane_new += fragment(event)
            shown = state["html"] + f'<span class="new-round">{pane_new}</span>'    # only this round animates
            state.update(next=i, html=state["html"] + pane_new)
            return shown, f'{chips}<ol class="explain reveal">{"".join(verdicts)}</ol>{note}', state
        elif event.kind == "done":
            state.update(next=i, finished=True)
            return state["html"], "<p class='explain'>Finished. The next click starts again.</p>", state
        pane_new += fragment(event)
    state.update(next=i, finished=True)
    return state["html"], "<p class='explain'>Finished. The next click starts again.</p>", state


def reset_steps():
    """Start over: the state is plain records, so dropping it frees everything."""
    return "", "<p class='explain'>Click “Next round” to start.</p>", None


def run_lossless(app: AppState, samples, *form, **named):
    """The lossless check. Inputs: samples, then the form (FORM_FIELDS order). Outputs: result HTML, plot."""
    try:
        n = as_int("samples", samples)
        if not MIN_SAMPLES <= n <= MAX_SAMPLES:
            raise SpecvizError(f"samples must be between {MIN_SAMPLES} and {MAX_SAMPLES}")
        req = replace(RunRequest.from_form(*form, **named), adaptive=False, stops="")
        run = prepare(app, req, max_new=2)
        with app.decoding():
            for result in gpu_calls.lossless_results(gpu_calls.handle(app), run.preset.key, run.ids, run.config.to_dict(), n):
                yield _lossless_summary(result), lossless_bars(result, run.pair.tokenizer)
    except SpecvizError as err:
        yield status_html(str(err), "error"), gr.skip()


def _lossless_summary(r) -> str:
    draft = r.tv_draft()
    parts = [f"<b>{r.samples}</b> samples at temperature {r.temperature:g}.",
             f"Distance (total variation) between speculative output and the target: <b>{r.tv_to_target():.3f}</b>; "
             f"sampling noise alone gives about {r.tv_noise():.3f}.",
             f"Chi-square test against the target's exact probabilities: p-value {r.p_value():.3f}."]
    if draft is not None:
        parts.append(f"For contrast, the draft's own distribution is {draft:.3f} away from the target's: "
                     f"the proposals follow q, yet the output follows p.")
    return '<div class="lossless">' + "<br>".join(parts) + "</div>"


def what_if_plot(acceptance, cost_ratio, k_max):
    a = min(max(as_float("acceptance rate", acceptance), 0.0), 0.99)
    c = min(max(as_float("cost ratio", cost_ratio), 0.0), MAX_COST_RATIO)
    # The calculator has no v of its own: it draws the GPU-ideal case, and its title says so.
    return what_if(a, c, theory.GPU_IDEAL_V, min(max(as_int("k max", k_max), 2), 32))
