"""Teaching-view handlers: step through rounds, the lossless check, the what-if calculator.

Step mode decodes one run, keeps its event records in gr.State and reveals one round per
click: the drafted tokens first, then each verdict with one sentence that explains the
decision using the round's real numbers.
"""
from __future__ import annotations

import threading
import time
from dataclasses import replace

import gradio as gr

from ..engine.loop.events import from_dict
from ..engine.loop.detokenize import visible
from ..engine.analysis.explain import plural, sentence, tie_note
from ..errors import SpecvizError
from ..app import gpu_calls, zerogpu
from ..app.slots import Stopped
from ..app.state import AppState
from ..engine.metrics import theory
from .handlers import status_html
from ..engine.analysis.calibrate import pick_k
from ..engine.analysis.lossless import samples_to_separate
from .plots import lossless_bars, what_if
from .render import clean, draft_chips, figures_line, fragment
from ..app.request import RunRequest, prepare, settle
from ..app.settings import as_float, as_int
from .visitor import visitor_gone

STEP_MAX_TOKENS = 64           # step mode decodes at most this many tokens (dozens of clicks)
MIN_SAMPLES, MAX_SAMPLES = 50, 2000   # the lossless check's samples (the slider's range)
SAMPLES_STEP = 50                     # ...and the slider's step
LOSSLESS_EVERY_S = 0.5         # the lossless check's result is redrawn at most this often
# The what-if calculator's sliders (view/ui.py): a up to MAX_ACCEPTANCE, c up to MAX_COST_RATIO, v in V_RANGE.
MAX_ACCEPTANCE = 0.99
MAX_COST_RATIO = 1.0
V_RANGE = (0.5, 3.0)


def _tok(piece: str) -> str:
    """A token in step mode's sentences: its visible form (engine/detokenize.visible), as code."""
    return f"<code class=\"tokcode\">{clean(visible(piece))}</code>"


def step_round(app: AppState, state, *form, stop=None, **named):
    """Next round of step mode. Outputs: step pane, explanation, state.

    The first click decodes the whole run (up to STEP_MAX_TOKENS) in one call to the decoding
    function and keeps its event records in the state; each click then reveals one round. So
    no click holds the decoding slot for longer than that one run, nothing waits between
    clicks, the state is plain data (nothing to close on "Start over"), and on ZeroGPU the
    run happens on the GPU worker. The page reveals the verdicts one by one (CSS), not the server.
    The run goes in slices of the decoding slot and ends early when the visitor is gone (`stop`)."""
    if not state or state.get("finished"):
        stop = stop or visitor_gone()
        try:
            req = RunRequest.from_form(*form, **named)
            _, cfg = settle(app, req)
            run = prepare(app, req, max_new=min(cfg.max_new_tokens, STEP_MAX_TOKENS))
            stream = gpu_calls.run_stream(gpu_calls.handle(app), run.preset.key, run.ids, run.config.to_dict())
            records = list(app.sliced(stream, stop))
        except Stopped:
            return gr.skip(), status_html("Stopped: click “Next round” to start again.", "done"), None
        except SpecvizError as err:
            return gr.skip(), status_html(str(err), "error"), None
        state = {"records": records, "next": 0, "html": "", "finished": False,
                 # what a round planned to draft, to say why one drafted fewer (_short_round)
                 "k": cfg.k, "stop": cfg.confidence_stop, "drafter": cfg.drafter,
                 # the lane's length rules: its token budget, and the context the pair can hold
                 "max_new": min(run.config.max_new_tokens, run.pair.max_positions - len(run.ids)), "tokens": 0}
    return _reveal_round(state)


def _short_round(state: dict, drafted: int) -> str:
    """Why a round drafted fewer than its k, when it did: the token budget, the confidence stop, or
    prompt lookup finding no longer continuation. '' for a round that drafted all it planned."""
    if "k" not in state:
        return ""
    k, left = state["k"], state["max_new"] - state["tokens"]
    if drafted >= k:
        return ""
    if left - 1 < k and drafted == max(0, left - 1):
        return (f" (not k = {k}: only {plural(left, 'token')} may still be written (the token budget or the "
                f"context's length), and a round always adds one of the target's own)")
    if state.get("drafter") == "prompt_lookup":
        return f" (not k = {k}: the earlier text that matches the end of the sequence is followed by no more)"
    if state.get("stop"):
        return (f" (not k = {k}: the draft model gave its last token a probability below {state['stop']:g}, "
                f"the confidence stop, so the target takes over from there)")
    return f" (not k = {k})"


def _reveal_round(state: dict):
    records, i = state["records"], state["next"]
    chips, verdicts, pane_new = "", [], ""
    rejected = None          # the round's rejected draft, for its correction's tie note
    while i < len(records):
        event = from_dict(records[i])
        i += 1
        if event.kind == "drafted" and not event.token_ids:
            chips = (f'<p class="explain">Round {event.round}: the draft proposes nothing (a draft that reads the '
                     f"target's hidden states has none before the target's first pass; or only one token is left "
                     f"to write), and the target runs one forward pass:</p>")
        elif event.kind == "drafted":
            chips = (f'<p class="explain">Round {event.round}: the draft proposes {plural(len(event.token_ids), "token")} '
                     f'{draft_chips(event)}{_short_round(state, len(event.token_ids))} and the target checks them '
                     f'all in one forward pass:</p>')
        elif event.kind in ("accepted", "rejected", "resampled", "bonus"):
            tie = tie_note(rejected, event) if event.kind == "resampled" else ""
            rejected = event if event.kind == "rejected" else None
            verdicts.append(f'<li style="--i: {len(verdicts)}">{sentence(event, quote=_tok)}{clean(tie)}</li>')
        elif event.kind == "round_end":
            note = (f'<p class="explain reveal" style="--i: {len(verdicts)}">Round {event.round}: {event.accepted} of '
                    f"{event.drafted} drafts accepted, {plural(event.emitted, 'token')} added for one target pass. "
                    f"Tap or click “Next round” (on a keyboard: the right arrow).</p>")
            pane_new += fragment(event)
            if "k" in state:
                state.update(k=event.k_next, tokens=event.total_tokens)
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


def run_lossless(app: AppState, samples, *form, stop=None, **named):
    """The lossless check. Inputs: samples, then the form (FORM_FIELDS order). Outputs: result HTML,
    plot, this check's cancel flag (the Stop button sets it).

    It runs in slices of the decoding slot (other visitors decode in between), one sample at a time
    (25 across ZeroGPU's boundary), so Stop or a departed visitor ends it after the current sample;
    samples x prompt tokens may not exceed the server's lossless_token_budget."""
    cancel, result = threading.Event(), None
    gone = stop or visitor_gone()
    try:
        n = as_int("samples", samples)
        if not MIN_SAMPLES <= n <= MAX_SAMPLES:
            raise SpecvizError(f"samples must be between {MIN_SAMPLES} and {MAX_SAMPLES}, not {n}")
        req = replace(RunRequest.from_form(*form, **named), adaptive=False, stops="")
        run = prepare(app, req, max_new=2)
        budget = app.limits.lossless_token_budget
        allowed = budget // len(run.ids)          # samples this server runs for this prompt
        if n > allowed:
            raise SpecvizError(f"samples × prompt tokens may be at most {budget:,} here: with this "
                               f"{len(run.ids):,}-token prompt, use at most {allowed:,} samples")
        yield status_html("Waiting for the device …" if app.decoders_busy() else "Sampling …"), gr.skip(), cancel
        every = 25 if (app.via_records or zerogpu.ON_ZEROGPU) else 1
        results = gpu_calls.lossless_results(gpu_calls.handle(app), run.preset.key, run.ids,
                                             run.config.to_dict(), n, every)
        shown = 0.0
        for result in app.sliced(results, lambda: cancel.is_set() or gone()):
            if time.monotonic() - shown >= LOSSLESS_EVERY_S and result.samples < n:
                shown = time.monotonic()
                yield _lossless_summary(result, final=False), lossless_bars(result, run.pair.tokenizer), gr.skip()
        yield (_lossless_summary(result, most=min(MAX_SAMPLES, allowed)), lossless_bars(result, run.pair.tokenizer),
               None)
    except Stopped:
        if result is None:
            yield status_html("Stopped.", "done"), gr.skip(), None
        else:
            yield (_lossless_summary(result, final=False, note=f"Stopped after {result.samples} samples.", tested=True),
                   lossless_bars(result, run.pair.tokenizer), None)
    except SpecvizError as err:
        yield status_html(str(err), "error"), gr.skip(), None


ALPHA = 0.01    # the lossless verdict's significance level


def lossless_verdict(p_value: float) -> str:
    """The check's one-line conclusion from the chi-square p-value."""
    if p_value >= ALPHA:
        return (f"Verdict: consistent with the target's distribution: p = {p_value:.3f} (a p-value below "
                f"{ALPHA:g} would say otherwise).")
    return (f"Verdict: not consistent with the target's distribution: p = {p_value:.3g}, below {ALPHA:g}. "
            f"Run it again with another seed: if it repeats, please report it.")


def _draft_contrast(draft: float, noise: float, consistent: bool, final: bool, needed: int | None = None,
                    most: int = MAX_SAMPLES) -> str:
    """The draft's own distance to the target, and only what it shows: "the output follows p" is said
    once the verdict is in and says so, and only where the draft is clearly farther than sampling noise;
    where it is not, how many samples would show it (`needed`; None: more than the `most` this server
    runs for this prompt)."""
    head = f"For contrast, the draft's own distribution is {draft:.3f} away from the target's"
    if not final:
        return head + ": the proposals follow q; the verdict on the output comes with the last sample."
    if not consistent:
        return head + "."
    if draft < 2 * noise:
        if draft < 1e-9:
            return head + ": the draft proposes exactly the target's distribution, so there is no difference to show."
        # A lower temperature, not a higher one: heating spreads p over more tokens, and the noise of a
        # spread distribution grows faster than the two models' distance (measured on the bundled pair:
        # 100-450 samples separate them at T = 0.5, none of 2000 at T = 1-2).
        more = (f"about {needed} samples would" if needed is not None else
                f"more than the {most} this server runs for this prompt would be needed: try a prompt where "
                f"the draft guesses worse, or a lower temperature such as 0.5")
        return (head + f", within twice the sampling noise ({noise:.3f}): at this many samples the draft itself "
                f"would look about as close, so this run cannot show the difference; {more}.")
    return head + ": the proposals follow q, yet the output follows p."


def _lossless_summary(r, final: bool = True, note: str = "", tested: bool | None = None,
                      most: int = MAX_SAMPLES) -> str:
    """tested: whether to run the chi-square test on these samples (by default only on the last one);
    most: the samples this server would run for this prompt (the slider's top, or the token budget's).
    A test rerun after every batch while samples stream in fails by chance far more often than ALPHA
    says (each look is another chance; early looks also have tiny expected counts): a room watched
    "p-value 0.008" at 24 samples for ten seconds before the run settled at 0.59."""
    draft = r.tv_draft()
    tested = final if tested is None else tested
    test = (f"Chi-square test against the target's exact probabilities: p-value {r.p_value():.3f}." if tested else
            "Chi-square test against the target's exact probabilities: once, on all the samples (a test rerun "
            "as they stream in would fail by chance far more often than its 1 in 100).")
    parts = [f"<b>{r.samples}</b> samples at temperature {r.temperature:g}." + (f" {clean(note)}" if note else ""),
             f"Distance (total variation) between speculative output and the target: <b>{r.tv_to_target():.3f}</b>; "
             f"sampling noise alone gives about {r.tv_noise():.3f}.", test]
    if draft is not None:
        needed = samples_to_separate(r.p, draft, SAMPLES_STEP, most) if final else None
        parts.append(_draft_contrast(draft, r.tv_noise(), final and r.p_value() >= ALPHA, final, needed, most))
    if final:
        parts.append(f'<b class="lossless-verdict">{clean(lossless_verdict(r.p_value()))}</b>')
    return '<div class="lossless">' + "<br>".join(parts) + "</div>"


def what_if_plot(acceptance, cost_ratio, k_max, verify_ratio=theory.GPU_IDEAL_V):
    """The what-if calculator: a, c and v as set (v = 1 is the GPU-ideal case, and the title says so)."""
    a = min(max(as_float("acceptance rate", acceptance), 0.0), MAX_ACCEPTANCE)
    c = min(max(as_float("cost ratio", cost_ratio), 0.0), MAX_COST_RATIO)
    v = min(max(as_float("verify ratio", verify_ratio), 0.1), 10.0)
    return what_if(a, c, v, _chart_k_max(k_max))


def _chart_k_max(value) -> int:
    """The what-if chart's largest k, as its slider allows (2..32)."""
    return min(max(as_int("k max", value), 2), 32)


def machine_figures(app: AppState, key, k_max=None):
    """The calculator's a, c and v from what the app measured here for the selected pair (app/k_advice.py):
    its draft's held-out acceptance, and the draft step and verify pass timed at load, at the k offered.
    Outputs: the a, c and v sliders, and a line saying where they come from (or why there are none yet).

    The advice prices each k with that k's own timings (a verify pass of 4 tokens may cost more than one
    of 6 on a CPU, as its kernels block the rows); the chart draws every k with the one c and v set here.
    Where that moves the best k, the line says both; where the advised k lies beyond the chart's
    largest (`k_max`), it says so."""
    p = app.presets.get(key)
    if p is None:
        return gr.skip(), gr.skip(), gr.skip(), figures_line(
            "Pick one of the listed pairs: a pair of your own is not measured here.")
    advice = app.advice.get(p.key)
    if advice is None:
        why = ("this host does not time its pairs" if not app.advise_k or p.acceptance is None else
               "it is timed once loaded: run a race with it first, then press again")
        return gr.skip(), gr.skip(), gr.skip(), figures_line(f"{p.label} is not measured on this machine yet ({why}).")
    c, v = advice.c, advice.v
    # Within the sliders' ranges; the line gives the figures as measured.
    sliders = (round(min(advice.a, MAX_ACCEPTANCE), 2), round(min(c, MAX_COST_RATIO), 2),
               round(min(max(v, V_RANGE[0]), V_RANGE[1]), 2))
    line = (f"{p.label}: a = {advice.a:.2f} (its draft's held-out acceptance), c = {c:.3f} and "
            f"v = {v:.2f} (a verify pass of {advice.k + 1} tokens), timed here at load.")
    # The best k with this one c and v at every k, over the same ks the advice weighed and with the same
    # unrounded figures: a difference is then the per-k timings' alone (not the sliders' rounding).
    flat_k = pick_k(advice.a, advice.costs, app.limits.k_range, priced_at=advice.k)
    if flat_k != advice.k:
        line += (f" Priced with each k's own timings, k = {advice.k} ({advice.expected:.2f}×) is this machine's "
                 f"best, as the k advice says; with k = {advice.k}'s c and v at every k, as the chart draws them, "
                 f"the best is k = {flat_k} ({theory.expected_speedup(advice.a, flat_k, c, v):.2f}×).")
    shown = _chart_k_max(k_max if k_max is not None else 12)
    if advice.k > shown:
        line += f" The chart stops at k = {shown}: raise “largest k shown” to see k = {advice.k}."
    return (*sliders, figures_line(line))
