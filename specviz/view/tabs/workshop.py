"""The Workshop tab: pick an exercise, commit to a prediction, run it, compare.

Layout and listeners for app/workshop.py's exercises (the logic), whose answers' charts are drawn
here. A run is refused until the learner has
made a prediction; the answer then shows beside it with the run's own "why". Progress (each
exercise's prediction and measured answer) is kept in the browser (gr.BrowserState, its
localStorage) across reloads, read back through `kept` (it comes from the client: only known
exercises and fields of the expected types), and any exercise can be reopened from the list. (The
projector switch, for every tab, is in the page's title line: view/ui.py.)
"""
from __future__ import annotations

from functools import partial

import gradio as gr

from ...app.slots import Stopped
from ...app.state import AppState
from ...app.workshop import BY_KEY, EXERCISES
from ...errors import SpecvizError
from ...paths import LESSON_PLAN
from ..kinds_plot import kinds_figure
from ..plots import lossless_bars, race_chart
from ..render import clean
from ..sweep import sweep_figure
from ..visitor import visitor_gone
from . import Shared

# An answer's chart, as the exercise gave it (kind, data) -> its plotly figure.
CHARTS = {"race": race_chart, "lossless": lambda data: lossless_bars(*data), "sweep": sweep_figure,
          "kinds": kinds_figure}


def chart_figure(chart):
    """The figure of an Outcome's chart, or None when it has none."""
    return None if chart is None else CHARTS[chart[0]](chart[1])

REPEAT = 3              # races of a repeated exercise
NUMBER_WORDS = {10: "Ten", 11: "Eleven", 12: "Twelve", 13: "Thirteen"}
CLOSE_ENOUGH = 0.2      # a numeric prediction within 20% of the measured value counts as close
PROGRESS_KEY = "specviz-workshop"       # the browser's storage key of the learner's progress
SHOWN = ("shown", "why", "verdict")     # an entry's texts the page shows


def kept(progress) -> dict:
    """The stored progress the page may show: entries of known exercises whose fields have the types
    `run` writes (the browser's copy can be edited or stale: anything else is dropped)."""
    if not isinstance(progress, dict):
        return {}
    out = {}
    for key, entry in progress.items():
        if key not in BY_KEY or not isinstance(entry, dict):
            continue
        prediction, ran = entry.get("prediction"), entry.get("ran")
        if (all(isinstance(entry.get(name), str) for name in SHOWN) and isinstance(ran, (str, type(None)))
                and isinstance(prediction, (str, int, float)) and not isinstance(prediction, bool)):
            out[key] = {"prediction": prediction, "value": entry.get("value"), "ran": ran,
                        **{name: entry[name] for name in SHOWN}}
    return out


def _labels(progress: dict) -> list[tuple[str, str]]:
    return [(f"Exercise {i}: {e.title}" + (" ✓" if e.key in progress else ""), e.key)
            for i, e in enumerate(EXERCISES, 1)]


def _verdict(prediction, value) -> str:
    if isinstance(value, list):       # a choice among several right answers (ks within the noise)
        if prediction in value:
            return "right, within the measured noise" if len(value) > 1 else "right"
        return "not this time: " + ("k = " + value[0] if len(value) == 1 else
                                    "k = " + ", ".join(value) + " are within noise of each other")
    if isinstance(value, str):
        return "right" if prediction == value else "not this time"
    if not value:
        return "see the measured value"
    off = abs(float(prediction) - float(value)) / abs(float(value))
    return "close" if off <= CLOSE_ENOUGH else f"off by {off:.0%}"


def _number(text) -> float | None:
    try:
        value = float(str(text).strip().rstrip("×x"))
    except ValueError:
        return None
    return value if value == value and abs(value) < 1e9 else None


def result_html(entry: dict) -> str:
    return ('<div class="ws-result">'
            f'<div class="ws-cell"><div class="label">your prediction</div><div class="value" id="ws-predicted">'
            f'{clean(str(entry["prediction"]))}</div></div>'
            f'<div class="ws-cell"><div class="label">measured</div><div class="value" id="ws-measured">'
            f'{clean(entry["shown"])}</div></div>'
            f'<div class="ws-cell"><div class="label">verdict</div><div class="value">{clean(entry["verdict"])}</div></div>'
            f'<p class="explain ws-why">{clean(entry["why"])}</p>'
            + (f'<p class="run-setup ws-ran" id="ws-ran">Ran: {clean(entry["ran"])}</p>' if entry.get("ran") else "")
            + '</div>')


def question_html(ex, app: AppState | None = None) -> str:
    """The exercise's number, title and question, with the prompt it decodes where it names one."""
    number = [e.key for e in EXERCISES].index(ex.key) + 1
    prompt = ex.prompt(app) if ex.prompt is not None and app is not None else ""
    return (f'<h3>Exercise {number}: {clean(ex.title)}</h3><p class="explain">{clean(ex.question)}</p>'
            + (f'<pre class="ws-prompt" id="ws-prompt">{clean(prompt)}</pre>' if prompt else "")
            + '<p class="explain ws-hint">First commit to your prediction, then run it.</p>')


def show(key, progress, app: AppState | None = None):
    """An exercise was picked: its question, the right prediction input, and its result if done."""
    progress = kept(progress)
    ex = BY_KEY.get(key, EXERCISES[0])
    done = progress.get(ex.key)
    result = result_html(done) if done else ""
    return (question_html(ex, app),
            gr.Textbox(value=str(done["prediction"]) if done and not ex.choices else "", visible=not ex.choices),
            gr.Radio(choices=list(ex.choices), value=done["prediction"] if done and ex.choices else None,
                     visible=bool(ex.choices)),
            result, gr.Plot(value=None, visible=False))


def lesson_plan() -> str:
    """The 45-minute lesson plan (docs/workshop.md) as the tab shows it, so a visitor of a hosted page,
    who cannot open a file path, can read it; a line saying where it is when the file is missing."""
    try:
        return LESSON_PLAN.read_text(encoding="utf-8")
    except OSError:
        return "The lesson plan is `docs/workshop.md` in specviz's repository."


def progress_store() -> gr.BrowserState:
    """The learner's progress in the browser's storage. Made outside the tabs (view/ui.py): a tab's
    components mount when it is first opened, and one not mounted yet reads its stored value too late
    for the page's load."""
    return gr.BrowserState({}, storage_key=PROGRESS_KEY)


def restore(key, progress, app: AppState | None = None):
    """Page load: the list with the stored progress ticked, and the open exercise as `show` draws it."""
    progress = kept(progress)
    return (gr.Radio(choices=_labels(progress), value=key), *show(key, progress, app))


def run(app: AppState, key, number, choice, progress, repeat=False):
    """Outputs: result, plot, progress, exercise list. `repeat`: race 3x where the exercise measures a
    speedup (its answer the median, with the range)."""
    progress = kept(progress)
    ex = BY_KEY.get(key)
    if ex is None:
        yield '<div class="status status-error">Pick an exercise first.</div>', gr.skip(), progress, gr.skip()
        return
    prediction = choice if ex.choices else _number(number)
    if prediction is None or prediction == "":
        what = "pick one of the answers" if ex.choices else "type a number"
        yield (f'<div class="status status-error">Commit to a prediction first ({what}): that is '
               'the point of the exercise.</div>'), gr.skip(), progress, gr.skip()
        return
    yield '<div class="status">Running it, measured live …</div>', gr.Plot(value=None, visible=False), progress, gr.skip()
    try:
        with app.decoders.job(visitor_gone()):          # its decoding goes in slices and ends if the visitor leaves
            outcome = ex.run(app, repeat=REPEAT) if ex.repeatable and repeat is True else ex.run(app)
    except Stopped:
        yield '<div class="status status-done">Stopped.</div>', gr.skip(), progress, gr.skip()
        return
    except SpecvizError as err:
        yield f'<div class="status status-error">{clean(str(err))}</div>', gr.skip(), progress, gr.skip()
        return
    progress[ex.key] = {"prediction": prediction, "shown": outcome.shown, "value": outcome.value,
                        "why": outcome.why, "ran": outcome.ran, "verdict": _verdict(prediction, outcome.value)}
    figure = chart_figure(outcome.chart)
    yield (result_html(progress[ex.key]), gr.Plot(value=figure, visible=figure is not None), progress,
           gr.Radio(choices=_labels(progress), value=ex.key))


def build(shared: Shared) -> gr.Tab:
    """The tab, its components and its listeners."""
    app = shared.app
    progress = shared.workshop_progress or progress_store()
    with gr.Tab("Workshop", id="workshop") as tab:
        gr.Markdown(f"{NUMBER_WORDS.get(len(EXERCISES), len(EXERCISES))} short exercises for a class or on your own. Each one runs real models on this machine "
                    "and measures; predict before you look. Each exercise picks its own pair and settings (the "
                    "settings column is hidden meanwhile). The lesson plan for a class is below the exercises.")
        with gr.Row():
            with gr.Column(scale=1, min_width=260):
                pick = gr.Radio(_labels({}), value=EXERCISES[0].key, label="Exercises", elem_id="ws-pick")
            with gr.Column(scale=3):
                question = gr.HTML(question_html(EXERCISES[0], app), elem_id="ws-question")
                with gr.Row():
                    number = gr.Textbox("", label="your prediction (a number)", placeholder="for example 1.5",
                                        max_lines=1, elem_id="ws-number")
                    choice = gr.Radio(list(EXERCISES[0].choices), label="your prediction", visible=False,
                                      elem_id="ws-choice")
                repeat = gr.Checkbox(False, label=f"Race {REPEAT}x and answer with the median (races that measure a "
                                     f"speedup; one race is one draw)", elem_id="ws-repeat")
                go = gr.Button("Lock in my prediction and run", variant="primary", elem_id="ws-run")
                result = gr.HTML(elem_id="ws-result")
                plot = gr.Plot(elem_id="ws-plot", show_label=False, visible=False)
        with gr.Accordion("Lesson plan for a class (45 minutes): room setup, timing, discussion", open=False,
                          elem_id="lesson-plan"):
            gr.Markdown(lesson_plan())
    pick.change(partial(show, app=app), [pick, progress], [question, number, choice, result, plot], api_name=False,
                show_progress="hidden")
    # A reload: the exercises done so far ticked, and the open one's answer shown again.
    shared.demo.load(partial(restore, app=app), [pick, progress], [pick, question, number, choice, result, plot], api_name=False,
                     show_progress="hidden")
    go.click(partial(run, app), [pick, number, choice, progress, repeat], [result, plot, progress, pick],
             api_name="workshop", show_progress="hidden", **shared.decode)
    return tab
