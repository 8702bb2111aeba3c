"""The settings form in the page's left column: prompt, Run/Stop, pair, drafter, k and sampling.

`build_form(app)` lays it out (call inside the page's Blocks) and wires the listeners that keep it
consistent on its own: a pair's pick sets its examples, k, chat default and confidence stop; the
prompt's tip follows the chat switch; the k measured for a pair on this machine arrives at page
load and while a watch ticks; a background fetch's progress shows until it ends. The returned
`Form` names every component; `inputs` lists the form's values in RunRequest's FORM_FIELDS order,
the order every tab's handler reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import gradio as gr

from ..app.request import FORM_FIELDS
from ..app.settings import as_int
from ..app.state import CUSTOM, AppState
from ..engine.loop.config import CONFIDENCE_STOP_MAX
from ..engine.loop.drafters import DEFAULT_DRAFTER, DRAFTERS
from ..errors import SpecvizError
from . import lenient    # the form's inputs: the app checks their values
from .render import clean, figures_line

PAIRED_MIN_WIDTH = 190     # two settings share a row only from 2 x 190 px + the gap
K_WATCH_S = 2.0            # how often a page asks whether its pair's k has been measured, while it is under way


@dataclass
class Form:
    fields: dict              # RunRequest field name -> its component
    run: gr.Button
    stop: gr.Button
    k_note: gr.HTML
    k_watch: gr.Timer
    app: AppState

    @property
    def inputs(self) -> list:
        """The form's components in FORM_FIELDS order (RunRequest.from_form reads them so)."""
        return [self.fields[name] for name in FORM_FIELDS]

    def refresh_k_after(self, event) -> None:
        """After `event` (a race may have loaded its pair, which is then measured): its k now, or a watch for it."""
        event.then(partial(_k_measured, self.app), [self.fields["preset"], self.fields["k"]],
                   [self.fields["k"], self.k_note, self.k_watch], api_name=False, show_progress="hidden")


def build_form(app: AppState, demo: gr.Blocks) -> Form:
    """The controls: prompt and Run/Stop first (on screen at 1366x768), the settings below them in a
    section that folds away on a phone (assets/page.js), so the race comes next."""
    first = app.default_preset()
    with gr.Column(scale=1, min_width=280, elem_id="controls"):
        prompt = gr.Textbox(label="Prompt", value=first.examples[0] if first.examples else "",
                            lines=4, max_lines=14, elem_id="prompt", placeholder=prompt_placeholder(first.chat))
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
            drafter = lenient.Radio([(d.label, d.name) for d in DRAFTERS.values()], value=DEFAULT_DRAFTER,
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
            temperature = lenient.Slider(0, 2, value=0, step=0.05, label="temperature (0 = greedy)",
                                         elem_id="temperature")
            # Two to a row only where both fit with their labels on one line: a phone stacks them.
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
    fields = {"prompt": prompt, "preset": preset, "custom_target": custom_target, "custom_draft": custom_draft,
              "drafter": drafter, "k": k, "adaptive_k": adaptive, "temperature": temperature, "top_k": top_k,
              "top_p": top_p, "max_new_tokens": max_new, "seed": seed, "stop_strings": stops, "chat": chat,
              "confidence_stop": confidence_stop}
    form = Form(fields, run, stop, k_note, k_watch, app)

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
    measured = partial(_k_measured, app)
    demo.load(measured, [preset, k], [k, k_note, k_watch], api_name=False, show_progress="hidden")
    k_watch.tick(measured, [preset, k], [k, k_note, k_watch], api_name=False, show_progress="hidden")
    return form


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
