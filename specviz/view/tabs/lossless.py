"""The "Lossless?" tab: sample the next token many times through speculative decoding and compare
the counts with the target's exact probabilities (engine/analysis/lossless.py), with the settings
on the left (temperature 0 is replaced by GREEDY_CHECK_TEMPERATURE: greedy output is one token).
"""
from __future__ import annotations

import threading
import time
from dataclasses import replace
from functools import partial

import gradio as gr

from ...app import gpu_calls, zerogpu
from ...app.request import RunRequest, prepare
from ...app.settings import MAX_SAMPLES, MIN_SAMPLES, SAMPLES_STEP, as_int
from ...app.slots import Stopped
from ...app.state import AppState
from ...engine.analysis.lossless import (GREEDY_CHECK_TEMPERATURE, draft_contrast, samples_to_separate,
                                         verdict_line)
from ...errors import SpecvizError
from .. import lenient
from ..plots import lossless_bars
from ..render import clean, status_html
from ..visitor import visitor_gone
from . import Shared

LOSSLESS_EVERY_S = 0.5         # the result is redrawn at most this often


def build(shared: Shared) -> gr.Tab:
    """The tab, its components and its listener."""
    with gr.Tab("Lossless?", id="lossless") as tab:
        gr.Markdown("Sample the next token many times **through speculative decoding** and compare "
                    "with the target's exact probabilities. Uses the settings on the left "
                    f"(temperature 0 is replaced by {GREEDY_CHECK_TEMPERATURE:g}: greedy output is a single token).")
        with gr.Row():
            samples = lenient.Slider(MIN_SAMPLES, MAX_SAMPLES, value=300, step=SAMPLES_STEP, label="samples",
                                     elem_id="lossless-samples")
            button = gr.Button("Run the check", variant="primary", elem_id="lossless-run")
        result = gr.HTML("<p class='pane-hint'>Press “Run the check”: the counts appear "
                         "here beside the target's exact probabilities.</p>", elem_id="lossless-result")
        plot = gr.Plot(elem_id="plot-lossless", show_label=False)
    button.click(partial(run_lossless, shared.app), [samples, *shared.form.inputs], [result, plot, shared.cancel],
                 api_name="lossless", **shared.decode)
    return tab


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
        req = replace(RunRequest.from_form(*form, **named), adaptive_k=False, stop_strings="")
        run = prepare(app, req, max_new_tokens=2)
        budget = app.limits.lossless_token_budget
        allowed = budget // len(run.ids)          # samples this server runs for this prompt
        if n > allowed:
            raise SpecvizError(f"samples × prompt tokens may be at most {budget:,} here: with this "
                               f"{len(run.ids):,}-token prompt, use at most {allowed:,} samples")
        yield status_html("Waiting for the device …" if app.decoders.busy() else "Sampling …"), gr.skip(), cancel
        every = 25 if (app.via_records or zerogpu.ON_ZEROGPU) else 1
        results = gpu_calls.lossless_results(gpu_calls.handle(app), run.preset.key, run.ids,
                                             run.config.to_dict(), n, every)
        shown = 0.0
        for result in app.decoders.sliced(results, lambda: cancel.is_set() or gone()):
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


def _lossless_summary(r, final: bool = True, note: str = "", tested: bool | None = None,
                      most: int = MAX_SAMPLES) -> str:
    """tested: whether to run the chi-square test on these samples (by default only on the last one);
    most: the samples this server would run for this prompt (the slider's top, or the token budget's).
    A test rerun after every batch while samples stream in fails by chance far more often than the
    verdict's ALPHA says (each look is another chance; early looks also have tiny expected counts)."""
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
        parts.append(clean(draft_contrast(draft, r.tv_noise(), final and r.consistent(), final, needed, most)))
    if final:
        parts.append(f'<b class="lossless-verdict">{clean(verdict_line(r.p_value()))}</b>')
    return '<div class="lossless">' + "<br>".join(parts) + "</div>"
