"""build_demo(): the Gradio Blocks of the specviz app (layout first, then listeners).

The page: a control column (prompt, pair, drafter and sampling settings, Run/Stop) beside
tabs: the race (two streaming panes, stats strip, four plots, acceptance by kind of token, trace
download), step mode, the lossless check, the acceptance rules (rules_tab.py), the workshop
(workshop_ui.py) and an explanation with a what-if calculator. Handlers live in handlers.py,
teaching.py and rules_tab.py and receive plain values; the shared AppState holds only
read-only models and presets. build_demo() does not launch: app.py does.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path

import gradio as gr

from ..app import zerogpu
from . import lenient    # the form's inputs: the app checks their values (issue 27)
from ..app import gpu_calls
from .api import generate_endpoint
from ..app.state import CUSTOM, AppState
from .handlers import RaceUpdate, run_race, starting, stop_run
from .render import LEGEND, STEP_LEGEND, clean, figures_line, hint
from ..app.request import FORM_FIELDS
from ..engine.loop.config import CONFIDENCE_STOP_MAX
from ..engine.analysis.lossless import GREEDY_CHECK_TEMPERATURE
from ..app.settings import as_int
from ..errors import SpecvizError
from .teaching import (MAX_ACCEPTANCE, MAX_COST_RATIO, MAX_SAMPLES, MIN_SAMPLES, SAMPLES_STEP, V_RANGE,
                       machine_figures, reset_steps, run_lossless, step_round, what_if_plot)
from .workshop_ui import build_workshop_tab
from .kinds_plot import kinds_from_trace
from .rules_tab import build_rules_tab
from ..paths import ASSETS

# Two plots share a row where both get this width; on a phone (~390 px) each takes the full width, so
# titles and axis labels are not cut.
PLOT_MIN_WIDTH = 340
PAIRED_MIN_WIDTH = 190     # two settings share a row only from 2 x 190 px + the gap
K_WATCH_S = 2.0            # how often a page asks whether its pair's k has been measured, while it is under way


EXPLAIN = (Path(__file__).resolve().parent / "explain.md").read_text(encoding="utf-8")
INTRO = ("<h1>specviz</h1><p>A small draft model guesses tokens; the big target model checks them all in one pass. "
         "Watch every guess get accepted, rejected or corrected, racing plain decoding on the same machine.</p>")


def launch_options() -> dict:
    """Theme, stylesheet and the page's script (panes that follow the newest token, step keys);
    Gradio 6 takes them in launch()."""
    return {"theme": gr.themes.Soft(primary_hue="emerald", neutral_hue="slate"),
            "css_paths": [str(ASSETS / "style.css")], "js": (ASSETS / "page.js").read_text(encoding="utf-8"),
            "max_file_size": 1}      # the page has no upload component: /gradio_api/upload takes nothing (issue 27)


def build_demo(app: AppState | None = None) -> gr.Blocks:
    app = app or AppState()
    gpu_calls.handle(app)       # registered before ZeroGPU forks its worker, as the decoding functions find it
    first = app.default_preset()
    # No Gradio limit on the decoding group: the decoding itself is bounded by the app's own slots
    # (AppState.sliced), so a request whose pair is still loading holds up no one (a group limit
    # let 32 offline hub loads block a loaded pair). Requests in flight are bounded by Gradio's
    # worker threads, its queue size and view/fair_queue.py's per-session cap.
    decode = {"concurrency_id": "decode", "concurrency_limit": None}
    with gr.Blocks(title="specviz: speculative decoding, visualized") as demo:
        gr.HTML(INTRO, elem_id="title")
        with gr.Row(equal_height=False, elem_id="main-row"):
            # The controls: prompt and Run/Stop first (on screen at 1366x768), the settings below
            # them in a section that folds away on a phone (assets/page.js), so the race comes next.
            with gr.Column(scale=1, min_width=280, elem_id="controls"):
                prompt = gr.Textbox(label="Prompt", value=first.examples[0] if first.examples else "",
                                    lines=4, max_lines=14, elem_id="prompt",
                                    placeholder=prompt_placeholder(first.chat))
                with gr.Row(elem_id="run-row"):
                    run = gr.Button("Run the race", variant="primary", elem_id="run", min_width=120)
                    stop = gr.Button("Stop", variant="stop", elem_id="stop", min_width=80)
                with gr.Accordion("Settings: pair, drafter, k, sampling", open=True, elem_id="settings"):
                    examples = gr.Examples([[e] for e in first.examples], inputs=[prompt], label="Examples")
                    choices = [(app.menu_label(p), p.key) for p in app.presets.values()]
                    if app.allow_custom_models:
                        choices.append(("your own hub models (type their ids below)", CUSTOM))
                    preset = lenient.Dropdown(choices, value=first.key, label="Model pair", elem_id="preset")
                    fetch_line = gr.HTML(_fetch_html(app), elem_id="fetch-status")
                    with gr.Row(visible=app.allow_custom_models):
                        custom_target = gr.Textbox(label="target hub id", placeholder="owner/name", elem_id="custom-target")
                        custom_draft = gr.Textbox(label="draft hub id", placeholder="owner/name", elem_id="custom-draft")
                    chat = gr.Checkbox(first.chat, label="chat template (wrap the prompt as a user message)",
                                       interactive=first.chat, elem_id="chat")
                    drafter = lenient.Radio([("draft model", "model"), ("prompt lookup", "prompt_lookup")], value="model",
                                            label="Drafter", elem_id="drafter")
                    with gr.Row():
                        k = lenient.Slider(app.limits.k_range[0], app.limits.k_range[1], value=first.k, step=1,
                                           label="k (drafts per round)", elem_id="k")
                        adaptive = gr.Checkbox(False, label="adaptive k", elem_id="adaptive")
                    k_note = gr.HTML(_k_note_html(app, first), elem_id="k-note")     # where the offered k comes from
                    k_watch = gr.Timer(K_WATCH_S, active=False)     # ticks while the pair's k is being measured
                    confidence_stop = lenient.Slider(
                        0, CONFIDENCE_STOP_MAX, value=first.confidence_stop, step=0.05, elem_id="confidence-stop",
                        label="draft stops below p (0 = off)",
                        info="a round drafts no more after a token the draft gave less than p")
                    temperature = lenient.Slider(0, 2, value=0, step=0.05, label="temperature (0 = greedy)", elem_id="temperature")
                    # Two to a row only where both fit with their labels on one line: a phone's 354 px
                    # stacks them (at 177 px "top-k (0 = off)" wrapped to three lines beside its box).
                    with gr.Row():
                        top_k = lenient.Slider(0, 200, value=0, step=1, label="top-k (0 = off)", elem_id="top-k",
                                               min_width=PAIRED_MIN_WIDTH)
                        top_p = lenient.Slider(0.05, 1, value=1, step=0.01, label="top-p", elem_id="top-p",
                                               min_width=PAIRED_MIN_WIDTH)
                    with gr.Row():
                        max_new = lenient.Slider(1, app.max_new_tokens, value=min(128, app.max_new_tokens), step=1,
                                                 label="max new tokens", elem_id="max-new", min_width=PAIRED_MIN_WIDTH)
                        seed = lenient.Number(0, precision=0, label="seed", elem_id="seed", min_width=PAIRED_MIN_WIDTH)
                    stops = gr.Textbox(label="stop strings (one per line, optional)", lines=1, max_lines=4,
                                       elem_id="stop-strings")
            with gr.Column(scale=3, elem_id="results"):
                with gr.Tabs(elem_id="tabs") as tabs:
                    with gr.Tab("Race", id="race") as race_tab:
                        status = gr.HTML(elem_id="status")      # the race's own line: not shown over other tabs
                        with gr.Row(equal_height=True, elem_id="panes"):
                            with gr.Column(min_width=240):
                                spec_meter = gr.HTML(elem_id="spec-meter")
                                spec_pane = gr.HTML(hint("spec"), elem_id="spec-pane", elem_classes=["token-pane"])
                            with gr.Column(min_width=240):
                                base_meter = gr.HTML(elem_id="base-meter")
                                base_pane = gr.HTML(hint("base"), elem_id="base-pane", elem_classes=["token-pane"])
                        gr.HTML(LEGEND, elem_id="legend")
                        strip = gr.HTML(elem_id="stats")
                        ledger = gr.HTML(elem_id="ledger")
                        with gr.Row():
                            plot_acc = gr.Plot(elem_id="plot-acceptance", show_label=False, min_width=PLOT_MIN_WIDTH)
                            plot_race = gr.Plot(elem_id="plot-race", show_label=False, min_width=PLOT_MIN_WIDTH)
                        with gr.Row():
                            plot_hist = gr.Plot(elem_id="plot-hist", show_label=False, min_width=PLOT_MIN_WIDTH)
                            plot_pos = gr.Plot(elem_id="plot-position", show_label=False, min_width=PLOT_MIN_WIDTH)
                        plot_kinds = gr.Plot(elem_id="plot-kinds", show_label=False)     # drawn from the trace
                        download = gr.DownloadButton("Download trace (JSON)", interactive=False, elem_id="download-trace")
                    with gr.Tab("Step mode", id="step") as step_tab:
                        gr.Markdown("One round per click: first the draft's guesses, then each verdict, explained.")
                        with gr.Row():
                            step = gr.Button("Next round", variant="primary", elem_id="step")
                            step_reset = gr.Button("Start over", elem_id="step-reset")
                        step_pane = gr.HTML(hint("step"), elem_id="step-pane", elem_classes=["token-pane"])
                        step_explain = gr.HTML("<p class='explain'>Click “Next round” to start.</p>", elem_id="step-explain")
                        gr.HTML(STEP_LEGEND, elem_id="step-legend")     # below the verdicts: they come first on a laptop
                    with gr.Tab("Lossless?", id="lossless") as lossless_tab:
                        gr.Markdown("Sample the next token many times **through speculative decoding** and compare "
                                    "with the target's exact probabilities. Uses the settings on the left "
                                    f"(temperature 0 is replaced by {GREEDY_CHECK_TEMPERATURE:g}: greedy output is a single token).")
                        with gr.Row():
                            samples = lenient.Slider(MIN_SAMPLES, MAX_SAMPLES, value=300, step=SAMPLES_STEP, label="samples",
                                                     elem_id="lossless-samples")
                            lossless_btn = gr.Button("Run the check", variant="primary", elem_id="lossless-run")
                        lossless_result = gr.HTML("<p class='pane-hint'>Press “Run the check”: the counts appear "
                                                  "here beside the target's exact probabilities.</p>",
                                                  elem_id="lossless-result")
                        lossless_plot = gr.Plot(elem_id="plot-lossless", show_label=False)
                    with gr.Tab("Workshop", id="workshop") as workshop_tab:
                        build_workshop_tab(app, decode)
                    with gr.Tab("Explain", id="explain") as explain_tab:
                        gr.Markdown(EXPLAIN)
                        with gr.Row():
                            # Short labels, the definitions as info under them: beside the number box a
                            # long label wrapped to four lines at 1366 px.
                            wi_a = gr.Slider(0, MAX_ACCEPTANCE, value=0.75, step=0.01, label="acceptance rate a",
                                             info="share of judged drafts kept", elem_id="whatif-a")
                            wi_c = gr.Slider(0, MAX_COST_RATIO, value=0.1, step=0.01, label="cost ratio c",
                                             info="a draft step, in target steps", elem_id="whatif-c")
                            wi_v = gr.Slider(*V_RANGE, value=1.0, step=0.05, label="verify ratio v",
                                             info="a verify pass, in target steps (1 = GPU-ideal)", elem_id="whatif-v")
                            wi_k = gr.Slider(2, 32, value=12, step=1, label="largest k shown", elem_id="whatif-k")
                        wi_here = gr.Button("Use this machine's figures for the selected pair", size="sm",
                                            elem_id="whatif-here")
                        wi_here_note = gr.HTML(elem_id="whatif-here-note")
                        wi_plot = gr.Plot(elem_id="plot-whatif", show_label=False)
                    with gr.Tab("Rules", id="rules") as rules_tab:     # the acceptance rules side by side
                        wire_rules = build_rules_tab(app)
        cancel = gr.State(None)
        step_state = gr.State(None)

        # --- listeners -------------------------------------------------------------------
        controls = {"prompt": prompt, "preset": preset, "custom_target": custom_target, "custom_draft": custom_draft,
                    "drafter": drafter, "k": k, "adaptive": adaptive, "temperature": temperature, "top_k": top_k,
                    "top_p": top_p, "max_new": max_new, "seed": seed, "stops": stops, "chat": chat,
                    "confidence_stop": confidence_stop}
        form = [controls[name] for name in FORM_FIELDS]      # the order RunRequest.from_form reads
        race_outputs = {"status": status, "strip": strip, "spec_meter": spec_meter, "spec_pane": spec_pane,
                        "base_meter": base_meter, "base_pane": base_pane, "plot_acceptance": plot_acc,
                        "plot_race": plot_race, "plot_hist": plot_hist, "plot_position": plot_pos,
                        "download": download, "cancel": cancel, "ledger": ledger}
        # Instant feedback first (and no stale "done" from the previous run), then the race.
        racing = run.click(starting, None, [status, strip, spec_pane, base_pane, spec_meter, base_meter, ledger, tabs],
                           api_name=False,
                           concurrency_limit=None, concurrency_id="ui", show_progress="hidden").then(
                           partial(run_race, app), form,
                           [race_outputs[name] for name in RaceUpdate._fields],       # by name (handlers.RaceUpdate)
                           api_name="race", show_progress="hidden", **decode)
        racing.then(kinds_from_trace, [download], [plot_kinds], api_name=False, show_progress="hidden")
        # A race may have loaded its pair, which is then measured: its k now, or a watch for it.
        racing.then(partial(_k_measured, app), [preset, k], [k, k_note, k_watch], api_name=False,
                    show_progress="hidden")
        # Stop has its own unlimited group, so it is never queued behind the run it stops. On
        # ZeroGPU the run lives in another process: there Stop also cancels the event itself.
        stop.click(stop_run, [cancel], None, api_name="stop", concurrency_limit=None, concurrency_id="stop",
                   cancels=[racing] if zerogpu.ON_ZEROGPU else None)
        # Every click counts (trigger_mode "multiple"), handled one at a time in order: a click is a
        # reveal of data already decoded, except the first, which decodes up to 64 tokens.
        step.click(partial(step_round, app), [step_state, *form], [step_pane, step_explain, step_state],
                   api_name="step", show_progress="hidden", trigger_mode="multiple",
                   concurrency_id="step", concurrency_limit=1)
        step_reset.click(reset_steps, None, [step_pane, step_explain, step_state], api_name=False)
        lossless_btn.click(partial(run_lossless, app), [samples, *form], [lossless_result, lossless_plot, cancel],
                           api_name="lossless", **decode)
        wire_rules(form, cancel, decode)
        gr.api(generate_endpoint(app), api_name="generate", **decode)
        for control in (wi_a, wi_c, wi_v, wi_k):
            control.change(what_if_plot, [wi_a, wi_c, wi_k, wi_v], wi_plot, api_name=False, show_progress="hidden")
        demo.load(what_if_plot, [wi_a, wi_c, wi_k, wi_v], wi_plot, api_name=False)
        wi_here.click(partial(machine_figures, app), [preset, wi_k], [wi_a, wi_c, wi_v, wi_here_note], api_name=False,
                      show_progress="hidden")
        # The workshop's exercises choose their own pair and settings: the settings column is hidden
        # while its tab is open (in the page only, no request), and comes back with any other tab.
        for tab in (race_tab, step_tab, lossless_tab, rules_tab, explain_tab):
            tab.select(None, None, None, api_name=False, js="() => { document.body.classList.remove('ws-open'); }")
        workshop_tab.select(None, None, None, api_name=False, js="() => { document.body.classList.add('ws-open'); }")
        if app.fetches:      # a background fetch: its progress in the page until it ends
            ticker = gr.Timer(2.0, active=app.fetching())
            ticker.tick(partial(_fetch_tick, app), None, [fetch_line, ticker], api_name=False, show_progress="hidden")
        # The empty box's tip follows the chat switch (a pair's pick sets it): a chat model is asked, a
        # raw model is continued.
        chat.change(_prompt_tip, [chat], [prompt], api_name=False, show_progress="hidden")
        preset.change(partial(_on_preset, app), [preset, prompt],
                      [examples.dataset, k, chat, k_note, confidence_stop, prompt], api_name=False)
        preset.change(partial(_watch_k, app), [preset], [k_watch], api_name=False, show_progress="hidden")
        # The k measured for the pair on this machine (a background calibration after its load): at
        # page load, and while k_watch ticks (the pair is loading or being measured).
        demo.load(partial(_k_measured, app), [preset, k], [k, k_note, k_watch], api_name=False, show_progress="hidden")
        k_watch.tick(partial(_k_measured, app), [preset, k], [k, k_note, k_watch], api_name=False,
                     show_progress="hidden")
    return demo


def prompt_placeholder(chat: bool) -> str:
    """What the empty prompt box suggests: a question for a chat pair, a text to continue otherwise."""
    if chat:
        return "Ask a question or give an instruction: the chat template sends it as a user message."
    return "Tip: end mid-line or after a colon: the model continues your text."


def _prompt_tip(chat):
    return gr.Textbox(placeholder=prompt_placeholder(bool(chat)))      # the placeholder only; the text stays


def _fetch_html(app: AppState) -> str:
    text = app.fetch_status()
    return "" if not text else "".join(f'<div class="fetch-status">{clean(line)}</div>' for line in text.split("\n"))


def _fetch_tick(app: AppState):
    return _fetch_html(app), gr.Timer(active=app.fetching())


def _on_preset(app: AppState, key, prompt=None):
    """A pair was picked: its examples, its k (as measured here, else the preset's), its chat default
    (custom pairs may be either), and its first example in the prompt box when the box still holds an
    example of any pair (a chat question would send the bundled code model into '#' lines); the
    visitor's own text stays."""
    if key == CUSTOM:
        return gr.skip(), gr.skip(), gr.Checkbox(interactive=True), "", 0.0, gr.skip()
    p = app.presets.get(key)
    if p is None:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
    an_example = any(prompt == e for other in app.presets.values() for e in other.examples)
    new_prompt = p.examples[0] if an_example and p.examples else gr.skip()
    return (gr.Dataset(samples=[[e] for e in p.examples]), app.suggested_k(p),
            gr.Checkbox(value=p.chat, interactive=p.chat), _k_note_html(app, p), p.confidence_stop, new_prompt)


def _watch_k(app: AppState, key):
    """Tick (k_watch) while the pair's k advice is on its way: loading, or waiting to be measured."""
    p = app.presets.get(key)
    return gr.Timer(active=p is not None and app.advice_pending(p))


def _k_measured(app: AppState, key, k):
    """At page load, after a race and on each k_watch tick: once the pair is measured, its line, and its
    k where the visitor left the preset's (a k they chose stays; at load the box holds the preset's);
    the watch stops then, or ticks on while the measurement is on its way."""
    p = app.presets.get(key)
    if p is None or p.key not in app.advice:
        return gr.skip(), gr.skip(), _watch_k(app, key)
    try:
        moved = as_int("k", k) != p.k
    except SpecvizError:          # a k box left unreadable is the visitor's: leave it to the form's check
        moved = True
    return (gr.skip() if moved else app.suggested_k(p)), _k_note_html(app, p), gr.Timer(active=False)


def _k_note_html(app: AppState, preset) -> str:
    note = app.k_note(preset)
    return figures_line(note) if note else ""
