"""The settings form in the page's left column: prompt, Run/Stop, pair, drafter, k and sampling.

`build_form(app)` lays it out (call inside the page's Blocks) and wires the listeners that keep it
consistent on its own: a pair's pick sets its examples, its preset's k, chat default and confidence
stop, and any change of the pair the line of what to expect from it (view/expect_line.py), which the
race tab shows above its panes (`show_expect_in`: a phone folds these settings away); the
prompt's tip follows the chat switch; a share link's settings (view/share.py) fill it when
the page opens (view/form_fill.py, which a loaded trace's replay uses too), and the link button beside
Run writes that link for the current form, with "lock for a class" and "use these examples" as
options in the panel it opens; the k measured for a pair on
this machine arrives at page load and while a watch ticks, offered as a suggestion with a one-click
"use k = N" (never moving the slider itself, so every laptop in a room starts from the same race);
a background fetch's progress shows until it ends. The returned
`Form` names every component; `inputs` lists the form's values in RunRequest's FORM_FIELDS order,
the order every tab's handler reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import gradio as gr

from ..app.form_table import BY_NAME, FORM_FIELDS, form_default, span
from ..app.pairs import CUSTOM
from ..app.state import AppState
from ..engine.loop.drafters import DRAFTERS
from . import lenient    # the form's inputs: the app checks their values
from .render import clean, figures_line
from .expect_line import expect_html
from .form_fill import FILLED, opened
from .share import MAX_PROMPTS, form_defaults, link_query
from .qr_svg import svg as qr_svg

PAIRED_MIN_WIDTH = 190     # two settings share a row only from 2 x 190 px + the gap
# The rules a race can run from the form (the settings table's choices), as the radio names them.
RULE_WORDS = {"exact": "exact: token by token", "block": "block: the drafted block judged jointly"}
RULE_CHOICES = [(RULE_WORDS[name], name) for name in BY_NAME["rule"].choices]
K_WATCH_S = 2.0            # how often a page asks whether its pair's k has been measured, while it is under way


@dataclass
class Form:
    fields: dict              # RunRequest field name -> its component
    run: gr.Button
    stop: gr.Button
    k_note: gr.HTML
    k_watch: gr.Timer
    app: AppState
    use_k: gr.Button          # "use k = N": the measured k, taken only by a click
    link: gr.State            # the share link's class setup: {"pinned": bool, "prompts": [...]}
    run3: gr.Button | None = None   # "Race 3x": the median of three races (view/repeat_races.py)
    filled: list | None = None      # what a share link or a loaded trace fills, in form_fill.FILLED's order

    @property
    def inputs(self) -> list:
        """The form's components in FORM_FIELDS order (RunRequest.from_form reads them so)."""
        return [self.fields[name] for name in FORM_FIELDS]

    def show_expect_in(self, line: gr.HTML) -> None:
        """The pair's expect line (view/expect_line.py) in `line`, which the race tab places above its panes
        (on a phone the settings fold away, so the line is not under the pair menu): the pair the page opens
        on now, then every change of the pair (a pick, a share link, a replayed trace)."""
        preset = self.fields["preset"]
        preset.change(partial(_pair_expect, self.app), [preset], [line], api_name=False, show_progress="hidden")

    def expect_now(self) -> str:
        """The expect line of the pair the page opens on."""
        return expect_html(self.app.pairs.default_preset())

    def refresh_k_after(self, event) -> None:
        """After `event` (a race may have loaded its pair, which is then measured): its k now, or a watch for it."""
        event.then(partial(_k_measured, self.app), [self.fields["preset"], self.link],
                   [self.k_note, self.use_k, self.k_watch], api_name=False, show_progress="hidden")


def build_form(app: AppState, demo: gr.Blocks) -> Form:
    """The controls: prompt and Run/Stop first (on screen at 1366x768), the settings below them in a
    section that folds away on a phone (assets/page.js), so the race comes next."""
    first = app.pairs.default_preset()
    # Each field's value, label, element id and range from the settings table (app/form_table.py): the
    # same defaults a share link leaves out.
    start = {name: form_default(BY_NAME[name], app.limits, first) for name in FORM_FIELDS}
    made = partial(widget, app, start)
    with gr.Column(scale=1, min_width=280, elem_id="controls"):
        prompt = made("prompt", value=first.examples[0] if first.examples else "", lines=4, max_lines=14,
                      placeholder=prompt_placeholder(first.chat))
        with gr.Row(elem_id="run-row"):
            run = gr.Button("Run the race", variant="primary", elem_id="run", min_width=104)
            # The median of three races (view/repeat_races.py); in the row, so a phone's first screen
            # still reaches the speculative pane.
            run3 = gr.Button("Race 3x", elem_id="run3", min_width=60)
            stop = gr.Button("Stop", variant="stop", elem_id="stop", min_width=52)
            # "Copy a link to this race": a link sign (its name on hover and for screen readers: assets/page.js).
            copy = gr.Button("", elem_id="copy-link", min_width=38)      # its link sign drawn by style.css
        # Opened by the copy button: what happened, the class options and the link to copy by hand.
        with gr.Column(visible=False, elem_id="share-panel") as share_panel:
            gr.HTML('<div id="share-said" class="share-said" role="status"></div>')
            with gr.Row(elem_id="share-options"):
                lock = gr.Checkbox(False, label="lock for a class", elem_id="share-lock", container=False)
                use_examples = gr.Checkbox(False, label="use these examples", elem_id="share-examples",
                                           container=False)
                close_share = gr.Button("Close", size="sm", elem_id="share-close", min_width=60)
            share = gr.Textbox(label="share link (copied where the browser allows: else copy it from here)",
                               interactive=False, max_lines=2, elem_id="share-link")
            # the same link as a QR code, for a room to scan from the projector (view/qr_svg.py)
            share_qr = gr.HTML("", elem_id="share-qr")
        link_note = gr.HTML(elem_id="link-note")       # what a share link or a trace set, or the values it could not
        with gr.Accordion("Settings: pair, drafter, k, sampling", open=True, elem_id="settings"):
            examples = gr.Examples([[e] for e in first.examples], inputs=[prompt], label="Examples")
            choices = [(app.pairs.menu_label(p), p.key) for p in app.pairs.presets.values()]
            if app.pairs.allow_custom_models:
                choices.append(("your own hub models (type their ids below)", CUSTOM))
            preset = lenient.Dropdown(choices, value=first.key, label=BY_NAME["preset"].label, elem_id="preset")
            # What to expect from the pair is said above the race, never folded away (Form.show_expect_in).
            fetch_line = gr.HTML(_fetch_html(app), elem_id="fetch-status")
            with gr.Row(visible=app.pairs.allow_custom_models):
                custom_target = made("custom_target", placeholder="owner/name")
                custom_draft = made("custom_draft", placeholder="owner/name")
            chat = made("chat", interactive=first.chat)
            drafter = lenient.Radio([(d.label, d.name) for d in DRAFTERS.values()], value=start["drafter"],
                                    label=BY_NAME["drafter"].label, elem_id="drafter")
            with gr.Row():
                k = made("k")
                adaptive = made("adaptive_k")
            tree = made("tree", max_lines=1)
            k_note = gr.HTML(_k_note_html(app, first), elem_id="k-note")     # the measured k, as a suggestion
            use_k = gr.Button("use the measured k", visible=False, size="sm", elem_id="use-k")
            k_watch = gr.Timer(K_WATCH_S, active=False)     # ticks while the pair's k is being measured
            confidence_stop = made("confidence_stop")
            # The two lossless rules a race can run (engine/loop/rules.py); the Rules tab compares them all.
            rule = lenient.Radio(RULE_CHOICES, value=start["rule"], label=BY_NAME["rule"].label, elem_id="rule",
                                 info=BY_NAME["rule"].info)
            temperature = made("temperature")
            # Two to a row only where both fit with their labels on one line: a phone stacks them.
            with gr.Row():
                top_k = made("top_k", min_width=PAIRED_MIN_WIDTH)
                top_p = made("top_p", min_width=PAIRED_MIN_WIDTH)
            with gr.Row():
                max_new = made("max_new_tokens", min_width=PAIRED_MIN_WIDTH)
                seed = made("seed", min_width=PAIRED_MIN_WIDTH)
            stops = made("stop_strings", lines=1, max_lines=4)
            fields = {"prompt": prompt, "preset": preset, "custom_target": custom_target,
                      "custom_draft": custom_draft, "drafter": drafter, "k": k, "adaptive_k": adaptive,
                      "temperature": temperature, "top_k": top_k, "top_p": top_p, "max_new_tokens": max_new,
                      "seed": seed, "stop_strings": stops, "chat": chat, "confidence_stop": confidence_stop,
                      "tree": tree, "rule": rule}
            # A table row the layout above does not place yet: its widget at the end of the settings.
            fields.update({name: made(name) for name in FORM_FIELDS if name not in fields})
        link = gr.State({"pinned": False, "prompts": []})
    form = Form(fields, run, stop, k_note, k_watch, app, use_k, link, run3)

    if app.pairs.fetches:      # a background fetch: its progress in the page until it ends
        ticker = gr.Timer(2.0, active=app.pairs.fetches.running())
        ticker.tick(partial(_fetch_tick, app), None, [fetch_line, ticker], api_name=False, show_progress="hidden")
    # The empty box's tip follows the chat switch (a pair's pick sets it): a chat model is asked, a
    # raw model is continued.
    chat.change(_prompt_tip, [chat], [prompt], api_name=False, show_progress="hidden")
    # A visitor's pick only (.input): a share link sets the pair, k and prompts together at load.
    picked = preset.input(partial(_on_preset, app), [preset, prompt],
                          [examples.dataset, k, chat, k_note, confidence_stop, prompt], api_name=False)
    preset.input(partial(_watch_k, app), [preset], [k_watch], api_name=False, show_progress="hidden")
    # The k measured for the pair on this machine (a background calibration after its load): at
    # page load (after the share link's values), after a pick, and while k_watch ticks.
    measured = partial(_k_measured, app)
    k_outputs = [k_note, use_k, k_watch]

    filled = {**fields, "examples": examples.dataset, "note": link_note, "link": link, "lock": lock,
              "use_examples": use_examples}
    form.filled = [filled[name] for name in FILLED]         # a loaded trace fills the same (view/replay.py)

    def opening(request: gr.Request):
        got = opened(app, getattr(request, "query_params", None))
        return tuple(got[name] for name in FILLED)

    demo.load(opening, None, form.filled, api_name=False, show_progress="hidden").then(
        measured, [preset, link], k_outputs, api_name=False, show_progress="hidden")
    picked.then(measured, [preset, link], k_outputs, api_name=False, show_progress="hidden")
    k_watch.tick(measured, [preset, link], k_outputs, api_name=False, show_progress="hidden")
    use_k.click(partial(_use_k, app), [preset], [k], api_name=False, show_progress="hidden")
    # "Copy link": the query from the form's values (the pair's key, not its label) and the class options,
    # then the page's own address before it, into the clipboard where the browser allows and into a box
    # to copy from; ticking an option writes and copies the link again.
    sharing = [*form.inputs, link, lock, use_examples]
    for trigger in (copy.click, lock.input, use_examples.input):
        trigger(partial(_share_query, app), sharing, [share, share_panel], api_name=False,
                show_progress="hidden").then(None, [share], [share], api_name=False, js=COPY_JS).then(
            link_qr, [share], [share_qr], api_name=False, show_progress="hidden")
    close_share.click(lambda: gr.Column(visible=False), None, [share_panel], api_name=False, show_progress="hidden")
    return form


def widget(app: AppState, start: dict, name: str, **more):
    """The widget of the settings table's row `name` (app/form_table.py): its label, element id, help line,
    slider range and starting value from the table, `more` (layout, a placeholder) on top. A menu's
    choices are the layout's own: the pair menu and the drafter are made there."""
    setting = BY_NAME[name]
    shown = dict(label=setting.label, elem_id=setting.elem_id, **({"info": setting.info} if setting.info else {}))
    shown.update(more)
    value = shown.pop("value", start[name])
    if setting.span is not None:
        low, high, step = span(setting, app.limits)
        return lenient.Slider(low, high, value=value, step=step, **shown)
    if setting.kind == "switch":
        return gr.Checkbox(bool(value), **shown)
    if setting.kind in ("int", "float"):
        return lenient.Number(value, precision=0 if setting.kind == "int" else None, **shown)
    if setting.kind == "menu":
        raise ValueError(f"{name} is a menu: the layout makes it with its choices")
    return gr.Textbox(value, **shown)


# The link to the clipboard where the browser allows it, and the share panel says which happened for a
# moment ("Link copied", or where to copy it from); fixed text only.
COPY_JS = """(query) => {
  const url = location.origin + location.pathname + (query ? '?' + query : '');
  // The panel may be mounting just now (its first opening): look for its line for up to a second.
  const say = (text, tries = 20) => {
    const said = document.querySelector('#share-said');
    if (!said) { if (tries > 0) setTimeout(() => say(text, tries - 1), 50); return; }
    said.textContent = text;
    clearTimeout(said.sayTimer);
    said.sayTimer = setTimeout(() => { said.textContent = ''; }, 4000);
  };
  const fallback = () => say('Copy it from the box below.');
  try { navigator.clipboard.writeText(url).then(() => say('Link copied.'), fallback); } catch (e) { fallback(); }
  return url;
}"""


def _share_query(app: AppState, *values):
    """The share box's link for the form's values (FORM_FIELDS order), the page's class setup (`link`)
    and the two options: "lock for a class" adds class=1; "use these examples" writes the examples this
    page shows (a class link's, or the pair's), this page's prompt first where it is not one of them."""
    form, (link, lock, use_examples) = dict(zip(FORM_FIELDS, values)), values[len(FORM_FIELDS):]
    preset = app.pairs.presets.get(form.get("preset")) or app.pairs.default_preset()
    prompts = []
    if use_examples:
        shown = list((link or {}).get("prompts") or (preset.examples if preset is not None else ()))
        mine = form.get("prompt")
        prompts = ([mine] if isinstance(mine, str) and mine.strip() and mine not in shown else []) + shown
    query = link_query(form, form_defaults(app, preset), bool(lock), prompts[:MAX_PROMPTS])
    return gr.Textbox(value=query), gr.Column(visible=True)


def _use_k(app: AppState, key):
    p = app.pairs.presets.get(key)
    return app.advisor.suggested_k(p) if p is not None else gr.skip()


def prompt_placeholder(chat: bool) -> str:
    """What the empty prompt box suggests: a question for a chat pair, a text to continue otherwise."""
    if chat:
        return "Ask a question or give an instruction: the chat template sends it as a user message."
    return "Tip: end mid-line or after a colon: the model continues your text."


def _prompt_tip(chat):
    return gr.Textbox(placeholder=prompt_placeholder(bool(chat)))      # the placeholder only; the text stays


def _fetch_html(app: AppState) -> str:
    text = app.pairs.fetches.status()
    return "" if not text else "".join(f'<div class="fetch-status">{clean(line)}</div>' for line in text.split("\n"))


def _fetch_tick(app: AppState):
    return _fetch_html(app), gr.Timer(active=app.pairs.fetches.running())


def _on_preset(app: AppState, key, prompt=None):
    """A pair was picked: its examples, its preset's k (the measured one is a suggestion), its chat default
    (custom pairs may be either), and its first example in the prompt box when the box still holds an
    example of any pair (a chat question would send the bundled code model into '#' lines); the
    visitor's own text stays."""
    if key == CUSTOM:
        return gr.skip(), gr.skip(), gr.Checkbox(interactive=True), "", 0.0, gr.skip()
    p = app.pairs.presets.get(key)
    if p is None:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
    an_example = any(prompt == e for other in app.pairs.presets.values() for e in other.examples)
    new_prompt = p.examples[0] if an_example and p.examples else gr.skip()
    return (gr.Dataset(samples=[[e] for e in p.examples]), p.k,
            gr.Checkbox(value=p.chat, interactive=p.chat), _k_note_html(app, p), p.confidence_stop, new_prompt)


def _pair_expect(app: AppState, key) -> str:
    return expect_html(app.pairs.presets.get(key) if isinstance(key, str) else None)


def _watch_k(app: AppState, key):
    """Tick (k_watch) while the pair's k advice is on its way: loading, or waiting to be measured."""
    p = app.pairs.presets.get(key)
    return gr.Timer(active=p is not None and app.advisor.pending(p))


def _k_measured(app: AppState, key, link=None):
    """At page load, after a pick or a race and on each k_watch tick: once the pair is measured, its
    line and a "use k = N" button (the slider stays where it is: the preset's k or the visitor's);
    the watch stops then, or ticks on while the measurement is on its way. A class link's pinned k
    gets no suggestion."""
    p = app.pairs.presets.get(key)
    if (link or {}).get("pinned"):
        return "", gr.Button(visible=False), gr.Timer(active=False)
    if p is None or p.key not in app.advisor.advice:
        return gr.skip(), gr.Button(visible=False), _watch_k(app, key)
    k = app.advisor.advice[p.key].k                  # None: the cost model cannot advise yet (the note says why)
    return (_k_note_html(app, p), gr.Button(f"use k = {k}", visible=k is not None), gr.Timer(active=False))


def _k_note_html(app: AppState, preset) -> str:
    note = app.advisor.k_note(preset)
    return figures_line(note) if note else ""


def link_qr(url) -> str:
    """The share link's QR code (SVG of numbers only: the link's text never enters the HTML), or a line
    saying the link is too long for one."""
    if not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        return ""
    drawn = qr_svg(url)
    if drawn is None:
        return '<p class="share-said">This link is too long for a QR code: share it as text.</p>'
    return f'<div class="share-qr">{drawn}<p>Scan to open this race.</p></div>'
