"""Race-tab handlers: plain functions on plain values that stream the race into the page.

`run_race` validates every input itself (the API accepts what sliders never send), loads
the pair through the shared cache, then folds the engine's race into HTML and figures:
panes and meters about 12 times a second, plots once a second (gr.skip() in
between), everything once more at the end. Errors become a readable line in the page.
Stop sets this run's own cancel flag; the engine then ends both lanes within one round.
"""
from __future__ import annotations

import json
import tempfile
import threading
import time
from pathlib import Path

import gradio as gr
import torch

from ..engine import race
from ..engine.events import from_dict
from ..errors import SpecvizError
from ..hosting import zerogpu
from .app_state import AppState
from .plots import all_figures
from .race_view import RaceView
from .render import clean
from .settings import check_prompt, make_config, prompt_ids

PANE_EVERY_S, PLOTS_EVERY_S = 0.08, 1.0
N_OUTPUTS = 12   # status, strip, spec meter, spec pane, base meter, base pane, 4 plots, download, cancel


def status_html(text: str, kind: str = "info") -> str:
    return f'<div class="status status-{kind}">{clean(text)}</div>'


def _only(status: str, kind: str = "info", cancel=None):
    return (status_html(status, kind),) + (gr.skip(),) * (N_OUTPUTS - 2) + (cancel if cancel else gr.skip(),)


def run_race(app: AppState, prompt, preset, custom_target, custom_draft, drafter, k, adaptive, temperature,
             top_k, top_p, max_new, seed, stops):
    cancel = threading.Event()
    try:
        prompt = check_prompt(prompt, app.max_prompt_chars)
        cfg = make_config(drafter, k, adaptive, temperature, top_k, top_p, max_new, seed, app.limits, stops)
        chosen = app.choose(preset, custom_target, custom_draft)
        if not app.cache.cached(chosen.key):
            yield _only(f"Loading {chosen.label} …", cancel=cancel)
        pair = app.pair(chosen)
        ids = prompt_ids(pair, prompt, app.limits, chat=getattr(chosen, "chat", False))
        events = event_stream(app, chosen, pair, ids, cfg, cancel)
    except SpecvizError as err:
        yield _only(str(err), "error")
        return
    view = RaceView(cfg.k)
    yield (status_html("Racing …"), view.strip(), view.meter("spec"), "", view.meter("base"), "",
           *([gr.skip()] * 4), gr.DownloadButton(interactive=False), cancel)
    last_pane = last_plots = 0.0
    try:
        for event in events:
            view.add(event)
            now = time.monotonic()
            if now - last_pane >= PANE_EVERY_S:
                plots = all_figures(view.stats) if now - last_plots >= PLOTS_EVERY_S else (gr.skip(),) * 4
                last_plots = now if now - last_plots >= PLOTS_EVERY_S else last_plots
                last_pane = now
                yield (gr.skip(), view.strip(), view.meter("spec"), view.pane("spec"), view.meter("base"),
                       view.pane("base"), *plots, gr.skip(), gr.skip())
    except torch.OutOfMemoryError:
        yield _only("The device ran out of memory: try fewer new tokens or a smaller pair.", "error")
        return
    except SpecvizError as err:
        yield _only(str(err), "error")
        return
    stopped = "cancelled" in view.stats.stop_reasons.values()
    summary = "Stopped." if stopped else _summary(view)
    yield (status_html(summary, "done"), view.strip(), view.meter("spec"), view.pane("spec"), view.meter("base"),
           view.pane("base"), *all_figures(view.stats),
           gr.DownloadButton(value=_save_trace(view, prompt, cfg, chosen.key, pair), interactive=True), None)


def event_stream(app: AppState, preset, pair, ids: list[int], cfg, cancel):
    """The race's events: in process, or as records from the ZeroGPU worker (rebuilt here)."""
    if not (app.via_records or zerogpu.ON_ZEROGPU):
        return race(pair, ids, cfg, cancel)
    zerogpu.APP = app
    records = zerogpu.race_records(preset.key, ids, cfg.to_dict())
    return (from_dict(record) for record in records)


def _summary(view: RaceView) -> str:
    speed = view.stats.measured_speedup()
    same = view.stats.done.get("spec", {}).get("tokens") == view.stats.done.get("base", {}).get("tokens")
    text = "Finished." if speed is None else f"Finished: speculative decoding ran {speed:.2f}× the plain rate."
    return text + ("" if same else " (The lanes produced different lengths; sampled runs differ by chance.)")


def starting():
    """Run was clicked: clear the previous race from view at once."""
    return status_html("Starting …"), "", "", "", ""


def stop_run(cancel) -> None:
    """Stop button: ask this user's running race to stop; both lanes end within one round and
    the race itself reports "Stopped." (Stop writes nothing: a reply of its own could land after
    the race's last update and overwrite it.)"""
    if isinstance(cancel, threading.Event):
        cancel.set()


def _save_trace(view: RaceView, prompt: str, cfg, preset: str, pair) -> str:
    """The run as JSON: settings, model names (no paths), every event. Everything shown can be rebuilt from it."""
    trace = {"specviz_trace": 1, "prompt": prompt, "preset": preset, "config": cfg.to_dict(),
             "models": {"target": pair.target_name, "draft": pair.draft_name}, "events": view.trace}
    path = Path(tempfile.mkdtemp(prefix="specviz-")) / "specviz-trace.json"
    path.write_text(json.dumps(trace, ensure_ascii=False))
    return str(path)
