"""Teaching-view handlers: step through rounds, the lossless check, the what-if calculator.

Step mode keeps this user's speculative generator in gr.State and pulls one round per
click: the drafted tokens appear first, then each verdict with one sentence that explains
the decision using the round's real numbers.
"""
from __future__ import annotations

import time

import gradio as gr

from ..engine import speculate
from ..errors import SpecvizError
from ..lossless import lossless_check
from .app_state import AppState
from .handlers import status_html
from .plots import lossless_bars, what_if
from .render import clean, draft_chips, fragment
from .settings import as_float, as_int, check_prompt, make_config, prompt_ids

REVEAL_PAUSE_S = 0.6


def _tok(piece: str) -> str:
    return f"<code>{clean(repr(piece))}</code>"


def explain(event) -> str:
    """One sentence (HTML, escaped) on why this verdict happened, with the real numbers."""
    k = event.kind
    if k in ("accepted", "rejected"):
        who = f"Draft token {_tok(event.piece)}"
        if event.rule == "argmax":
            if k == "accepted":
                return f"{who} is also the target's most likely next token (p = {event.p:.3f}): accepted."
            return (f"{who} is not the target's most likely next token (it gives it p = {event.p:.3f}): rejected, "
                    f"and the {event.discarded} draft(s) after it are discarded.")
        base = (f"{who}: the target gives it p = {event.p:.3f}, the draft gave q = {event.q:.3f}, so it is kept "
                f"with probability min(1, p/q) = {event.accept_prob:.3f}; the draw u = {event.u:.3f} is ")
        if k == "accepted":
            return base + "below that: accepted."
        return base + f"not below that: rejected, and the {event.discarded} draft(s) after it are discarded."
    if k == "resampled":
        if event.top_residual and abs(event.prob - event.p) < 1e-9:
            return f"The target puts its own top choice {_tok(event.piece)} (p = {event.p:.3f}) in its place."
        return (f"The target replaces it with {_tok(event.piece)}, drawn from the leftover distribution "
                f"norm(max(0, p − q)), where it has probability {event.prob:.3f}.")
    if k == "bonus":
        return (f"Every draft was accepted, so the same target pass yields one more token for free: "
                f"{_tok(event.piece)} (p = {event.p:.3f}).")
    return ""


def step_round(app: AppState, state, prompt, preset, custom_target, custom_draft, drafter, k, adaptive, temperature,
               top_k, top_p, max_new, seed, stops):
    """Outputs: step pane, explanation, state."""
    if not state or state.get("finished"):
        try:
            prompt = check_prompt(prompt, app.max_prompt_chars)
            cfg = make_config(drafter, k, adaptive, temperature, top_k, top_p, max_new, seed, app.limits, stops)
            pair = app.pair(app.choose(preset, custom_target, custom_draft))
            state = {"events": speculate(pair, prompt_ids(pair, prompt, app.limits), cfg), "html": "",
                     "finished": False}
        except SpecvizError as err:
            yield gr.skip(), status_html(str(err), "error"), None
            return
    lines = []
    for event in state["events"]:
        if event.kind == "drafted":
            yield state["html"] + draft_chips(event), \
                f'<p class="explain">Round {event.round}: the draft proposes {len(event.token_ids)} token(s); ' \
                f"the target now checks them all in one forward pass …</p>", state
            time.sleep(REVEAL_PAUSE_S)
            state["html"] += fragment(event)
        elif event.kind in ("accepted", "rejected", "resampled", "bonus"):
            state["html"] += fragment(event)
            lines.append(f"<li>{explain(event)}</li>")
            yield state["html"], f'<ol class="explain">{"".join(lines)}</ol>', state
        elif event.kind == "round_end":
            note = (f"<p class='explain'>Round {event.round}: {event.accepted} of {event.drafted} drafts accepted, "
                    f"{event.emitted} token(s) added for one target pass. Click “Next round”.</p>")
            yield state["html"], f'<ol class="explain">{"".join(lines)}</ol>{note}', state
            return
        elif event.kind == "done":
            state["finished"] = True
            yield state["html"], "<p class='explain'>Finished. The next click starts again.</p>", state
            return


def reset_steps():
    return "", "<p class='explain'>Click “Next round” to start.</p>", None


def run_lossless(app: AppState, prompt, preset, custom_target, custom_draft, drafter, k, temperature, top_k, top_p,
                 seed, samples):
    """Outputs: result HTML, plot."""
    try:
        prompt = check_prompt(prompt, app.max_prompt_chars)
        n = as_int("samples", samples)
        if not 20 <= n <= 5000:
            raise SpecvizError("samples must be between 20 and 5000")
        cfg = make_config(drafter, k, False, temperature, top_k, top_p, 2, seed, app.limits)
        pair = app.pair(app.choose(preset, custom_target, custom_draft))
        results = lossless_check(pair, prompt_ids(pair, prompt, app.limits), cfg, n)
        for result in results:
            yield _lossless_summary(result), lossless_bars(result, pair.tokenizer)
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
    c = min(max(as_float("cost ratio", cost_ratio), 0.0), 2.0)
    return what_if(a, c, min(max(as_int("k max", k_max), 2), 32))
