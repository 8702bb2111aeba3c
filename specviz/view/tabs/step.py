"""The Step mode tab: one round per click, the draft's guesses first, then each verdict explained.

The first click decodes one run (at most STEP_MAX_TOKENS) and keeps its event records in gr.State;
each click then reveals one round: the drafted tokens, then each verdict with one sentence that
explains the decision with the round's real numbers (engine/analysis/explain.py). The run ends with its
own a and tokens per pass (engine/analysis/ledger.py's names, this run's values).
"""
from __future__ import annotations

import threading
from functools import partial

import gradio as gr

from ...app import gpu_calls
from ...app.request import RunRequest, load, settle
from ...app.slots import InLine, Stopped
from ...app.state import AppState
from ...engine.analysis.explain import plural, sentence, tie_note
from ...engine.analysis.ledger import lone_lane_words
from ...engine.loop.detokenize import visible
from ...engine.loop.drafters import PROMPT_LOOKUP
from ...engine.loop.events import from_dict
from ...errors import SpecvizError
from ..line_text import line_status
from ..render import STEP_LEGEND, clean, draft_chips, fragment, hint, status_html
from ..block_view import block_html, block_sentence
from ..tree_view import TREE_LEGEND, tree_html, tree_sentence
from ..live_html import live_html
from ..timeline import Timeline
from ..visitor import visitor_gone
from . import Shared

STEP_MAX_TOKENS = 64           # step mode decodes at most this many tokens (dozens of clicks)
START = "<p class='explain'>Click “Next round” to start.</p>"


def build(shared: Shared) -> gr.Tab:
    """The tab, its components and its listeners."""
    with gr.Tab("Step mode", id="step") as tab:
        gr.Markdown("One round per click: first the draft's guesses, then each verdict, explained.")
        with gr.Row():
            step = gr.Button("Next round", variant="primary", elem_id="step")
            reset = gr.Button("Start over", elem_id="step-reset")
        pane = gr.HTML(hint("step"), elem_id="step-pane", elem_classes=["token-pane"])
        # the rounds revealed so far on one clock (view/timeline.py), as under the race's panes
        timeline = live_html("", elem_id="step-timeline", elem_classes=["tl-box"])
        explain = gr.HTML(START, elem_id="step-explain")
        gr.HTML(STEP_LEGEND + TREE_LEGEND, elem_id="step-legend")     # below the verdicts: they come first on a laptop
        state = gr.State({})        # inside the tab: a component directly in gr.Tabs confuses its tab bar
        wanted = gr.Number(0, visible=False, elem_id="step-wanted")     # the page's click count
        api_step = gr.Button(visible=False)                             # the API's one round a call
    # Every click counts, in order, and at most one step event of a visitor is in flight: the page
    # counts the clicks on "Next round" (and its keys) itself (assets/page.js, COUNT_CLICKS), and each
    # event reveals the rounds up to that count (`step_clicks`). Gradio keeps only the last click
    # that comes while one is pending (trigger_mode "always_last"), so a burst of clicks is one event
    # that reveals them all, never a dozen events that the fair queue refuses (its per-session cap)
    # or whose answers arrive out of order. The first click decodes up to STEP_MAX_TOKENS tokens
    # (the app's fair slots); visitors' clicks run side by side.
    # The click's answer brings the revealed rounds' timeline too (one join a click: the server limits
    # joins per second, view/fair_queue.py; page.js lets one click in 0.4 s through, the count the rest).
    step.click(partial(step_clicks_in_line, shared.app), [wanted, state, *shared.form.inputs],
               [pane, explain, state, timeline], js=COUNT_CLICKS, api_name=False, show_progress="hidden",
               trigger_mode="always_last", concurrency_id="step", concurrency_limit=None)
    # The API's /step reveals one round a call (its State input is not in the API), on a button the
    # page does not show.
    api_step.click(partial(step_round, shared.app), [state, *shared.form.inputs], [pane, explain, state],
                   api_name="step", show_progress="hidden", concurrency_id="step", concurrency_limit=None)
    reset.click(reset_steps, None, [pane, explain, state], api_name=False, js=RESET_CLICKS).then(
        lambda: "", None, [timeline], api_name=False, show_progress="hidden")
    return tab


def _tok(piece: str) -> str:
    """A token in step mode's sentences: its visible form (engine/detokenize.visible), as code."""
    return f"<code class=\"tokcode\">{clean(visible(piece))}</code>"


# The page's count of "Next round" clicks since the tab started over, read as the event is sent
# (the other inputs pass through); page.js counts each click as it happens.
COUNT_CLICKS = "(wanted, ...rest) => [window.specvizStepClicks || 0, ...rest]"
RESET_CLICKS = "() => { window.specvizStepClicks = 0; }"


def step_clicks(app: AppState, wanted, state, *form, stop=None, **named):
    """The page's "Next round": reveal rounds until `wanted` clicks have been answered (one round
    each; the click after "Finished" decodes anew). Outputs: `step_round`'s (the pane's rounds
    revealed by this event animated together), then the revealed rounds' timeline. A count the state has already answered (a page
    whose count started over, a session's state that did not) answers one click."""
    return _to_end(_clicks(app, wanted, state, form, named, stop))


def step_clicks_in_line(app: AppState, wanted, state, *form, stop=None, **named):
    """`step_clicks` for the page: while the click's decoding waits for the device, its place in line
    and the likely wait take the explanation's place ("3rd in line, about 20 s"), updated as the line
    moves, as a race's status does; then the click's answer."""
    work = _clicks(app, wanted, state, form, named, stop)
    while True:
        try:
            where = next(work)
        except StopIteration as end:
            yield end.value
            return
        yield gr.skip(), status_html(line_status(where), "info"), gr.skip(), gr.skip()


def _to_end(work):
    """What a generator that yields only places in line (InLine) returns, its places not shown."""
    while True:
        try:
            next(work)
        except StopIteration as end:
            return end.value


def _clicks(app: AppState, wanted, state, form, named, stop):
    """`step_clicks`, yielding the decoding's places in line (InLine) while it waits for the device."""
    if state is None:
        state = {}
    with state.setdefault("turn", Turn()):
        answered = state.get("clicks", 0)
        try:
            clicks = int(wanted or 0)
        except (TypeError, ValueError, OverflowError):
            clicks = 0
        # at least this click; never more rounds at once than a run can have (one token each at least)
        clicks = min(max(clicks, answered + 1), answered + STEP_MAX_TOKENS + 1)
        before = state.get("html", "") if state.get("records") and not state.get("finished") else ""
        shown = None
        while answered < clicks:
            shown, explain, after = yield from _step(app, state, form, named, stop)
            answered += 1
            if after is None:                    # stopped or refused: the state stays as it was
                return shown, explain, None, gr.skip()
            state["clicks"] = answered
            if state.get("finished"):            # "Finished": the next click starts again
                return shown, explain, state, revealed_timeline(state)
        pane = state["html"]
        new = pane[len(before):] if pane.startswith(before) else pane
        return (pane[:len(pane) - len(new)] + f'<span class="new-round">{new}</span>', explain, state,
                revealed_timeline(state))


def step_round(app: AppState, state, *form, stop=None, **named):
    """Next round of step mode. Outputs: step pane, explanation, state.

    The first click decodes the whole run (up to STEP_MAX_TOKENS) in one call to the decoding
    function and keeps its event records in the state; each click then reveals one round. So
    no click holds the decoding slot for longer than that one run, nothing waits between
    clicks, the state is plain data (nothing to close on "Start over"), and on ZeroGPU the
    run happens on the GPU worker. The page reveals the verdicts one by one (CSS), not the server.
    The run goes in slices of the decoding slot and ends early when the visitor is gone (`stop`)."""
    if state is None:
        state = {}
    # Gradio hands every event of a session the same state object: a second click that comes while
    # the first decodes waits for its turn here, then sees what the first stored, and reveals the next round.
    with state.setdefault("turn", Turn()):
        return _to_end(_step(app, state, form, named, stop))


def revealed_timeline(state) -> object:
    """The timeline of the rounds revealed so far (view/timeline.py); untouched where nothing was decoded."""
    if not state or not state.get("records"):
        return gr.skip()
    line = Timeline()
    for record in state["records"][:state["next"]]:
        line.add(from_dict(record))
    return line.html()


class Turn:
    """The lock one visitor's step-mode clicks take in turn. It copies and pickles as a new lock, so a
    state that holds it is still plain data."""

    def __init__(self):
        self._lock = threading.Lock()

    def __enter__(self):
        self._lock.acquire()
        return self

    def __exit__(self, *exc):
        self._lock.release()

    def __deepcopy__(self, memo):
        return Turn()

    def __reduce__(self):             # pickled (ZeroGPU, a saved session): a fresh lock on the other side
        return (Turn, ())

    def __eq__(self, other):          # as data, one turn is as good as another
        return isinstance(other, Turn)

    __hash__ = object.__hash__


def _step(app: AppState, state: dict, form, named, stop):
    """One click's answer (pane, explanation, state; a None state: stopped or refused), the first click's run
    decoded in slices of the device; while that run waits for the device, its places in line (InLine)
    are yielded first."""
    if not state.get("records") or state.get("finished"):
        stop = stop or visitor_gone()
        try:
            req = RunRequest.from_form(*form, **named)
            run = load(app, settle(app, req).capped(STEP_MAX_TOKENS))
            cfg = run.config
            stream = gpu_calls.run_stream(gpu_calls.handle(app), run.preset.key, run.ids, run.config.to_dict())
            records = []
            for item in app.decoders.sliced(stream, stop, line=True):
                if isinstance(item, InLine):
                    yield item               # still in line: its place, for the page
                else:
                    records.append(item)
            done = from_dict(records[-1]) if records else None
            if getattr(done, "kind", None) == "done" and done.stop_reason != "cancelled":
                app.advisor.fold_step_run(run.preset, run.pair, done.stats, bool(cfg.tree))   # the cost model learns
        except Stopped:
            return gr.skip(), status_html("Stopped: click “Next round” to start again.", "done"), None
        except SpecvizError as err:
            return gr.skip(), status_html(str(err), "error"), None
        turn = state["turn"]
        state.clear()              # in place: a click waiting for its turn holds this same object
        state.update({"turn": turn, "records": records, "next": 0, "html": "", "finished": False,
                 # what a round planned to draft, to say why one drafted fewer (_short_round)
                 "k": cfg.k, "stop": cfg.confidence_stop, "drafter": cfg.drafter,
                 "tree": list(cfg.tree) if cfg.tree else None,
                 # the lane's length rules: its token budget, and the context the pair can hold
                 "max_new": min(run.config.max_new_tokens, run.pair.max_positions - len(run.ids)), "tokens": 0})
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
    if state.get("drafter") == PROMPT_LOOKUP:
        return f" (not k = {k}: the earlier text that matches the end of the sequence is followed by no more)"
    if state.get("stop"):
        return (f" (not k = {k}: the draft model gave its last token a probability below {state['stop']:g}, "
                f"the confidence stop, so the target takes over from there)")
    return f" (not k = {k})"


def _reveal_round(state: dict):
    records, i = state["records"], state["next"]
    chips, verdicts, pane_new = "", [], ""
    rejected = None          # the round's rejected draft, for its correction's tie note
    tree, judged = None, []  # a token tree round: its Drafted event and its verdicts, drawn at its end
    pieces = []              # the round's drafts, for the block rule's joint test drawn at its end
    while i < len(records):
        event = from_dict(records[i])
        i += 1
        if event.kind == "drafted" and not event.token_ids:
            chips = (f'<p class="explain">Round {event.round}: the draft proposes nothing (a draft that reads the '
                     f"target's hidden states has none before the target's first pass; or only one token is left "
                     f"to write), and the target runs one forward pass:</p>")
        elif event.kind == "drafted" and event.parents is not None:
            tree = event
            shape = ",".join(str(w) for w in state.get("tree") or ())
            chips = (f'<p class="explain">Round {event.round}: the draft proposes a tree of '
                     f'{plural(len(event.token_ids), "node")}{f" (shape {clean(shape)})" if shape else ""}, and the '
                     f"target checks every branch in one forward pass, then walks down it from the text so far:</p>")
        elif event.kind == "drafted":
            pieces = event.pieces
            chips = (f'<p class="explain">Round {event.round}: the draft proposes {plural(len(event.token_ids), "token")} '
                     f'{draft_chips(event)}{_short_round(state, len(event.token_ids))} and the target checks them '
                     f'all in one forward pass:</p>')
        elif event.kind in ("accepted", "rejected", "resampled", "bonus"):
            tie = tie_note(rejected, event) if event.kind == "resampled" else ""
            rejected = event if event.kind == "rejected" else None
            judged.append(event)
            verdicts.append(f'<li style="--i: {len(verdicts)}">{sentence(event, quote=_tok)}{clean(tie)}</li>')
        elif event.kind == "round_end":
            what = "nodes of the tree accepted (its path)" if tree is not None else "drafts accepted"
            note = (f'<p class="explain reveal" style="--i: {len(verdicts)}">Round {event.round}: {event.accepted} of '
                    f"{event.drafted} {what}, {plural(event.emitted, 'token')} added for one target pass. "
                    f"Tap or click “Next round” (on a keyboard: the right arrow).</p>")
            pane_new += fragment(event)
            if event.block:
                chips += (f'<div class="block-draw">{block_html(pieces, event.block)}</div><p class="explain '
                          f'block-sum">{clean(block_sentence(event.block))}</p>')
            if tree is not None:
                chips += (f'{tree_html(tree, judged)}<p class="explain tree-sum">'
                          f'{clean(tree_sentence(tree, judged))}</p>')
            if "k" in state:
                state.update(k=event.k_next, tokens=event.total_tokens)
            shown = state["html"] + f'<span class="new-round">{pane_new}</span>'    # only this round animates
            state.update(next=i, html=state["html"] + pane_new)
            return shown, f'{chips}<ol class="explain reveal">{"".join(verdicts)}</ol>{note}', state
        elif event.kind == "done":
            state.update(next=i, finished=True)
            return state["html"], finished_html(event), state
        pane_new += fragment(event)
    state.update(next=i, finished=True)
    return state["html"], finished_html(None), state


def finished_html(done) -> str:
    """The end of a run: its own a and tau (ledger.lone_lane_words: the one record's names, no c or v
    from another race), then what the next click does."""
    words = lone_lane_words(done.stats.tally) if done is not None and done.stats is not None else ""
    return (f"<p class='explain' id='step-summary'>Finished. {clean(words)}{' ' if words else ''}"
            f"The next click starts again.</p>")


def reset_steps():
    """Start over: the state is plain records (and its turn), so dropping it frees everything."""
    return "", START, {}
