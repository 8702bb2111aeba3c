"""Race-tab handlers: plain functions on plain values that stream the race into the page.

`run_race` builds one RunRequest from the form, settles it once (request.settle: the API accepts
what sliders never send), says when its pair must load first, loads it and tokenizes once
(request.load), then folds the engine's race into HTML and figures: panes, meters and the round
timeline about 6 times a second (appended in the browser, view/live_html.py), the strip once a
second (gr.skip() in between), the plots only once, at the end, with the kinds chart from the fold
and the ledger built once. Errors become a readable line.
Stop sets this run's own cancel flag; the engine then ends both lanes within one round.
"""
from __future__ import annotations

import itertools
import logging
import threading
import time

from collections import namedtuple
from typing import Iterator

import gradio as gr

from ..engine import race
from ..engine.loop.events import Event, from_dict
from ..errors import SpecvizError
from ..app import zerogpu
from ..app import gpu_calls
from ..app.state import AppState
from . import race_plots
from .race_plots import NO_PLOTS
from .race_view import RaceView
from . import live_channel, trace_files
from .trace_route import download_html
from ..app.machine_load import OtherLoad
from .repeat_races import MAX_REPEAT, more_races, repeat_html
from .ledger_view import build as build_ledger, ledger_html, path_line, tallies
from .tree_results import tree_box_html
from .render import KINDS, status_html
from .line_text import line_status
from .race_status import _summary, busy_reason, ran_line, why  # noqa: F401  (replay.py and tests read them here)
from ..app.request import Prepared, RunRequest, load, settle
from ..app.run_records import choice_rows
from ..app.slots import InLine, Replaced, Sharing, Stopped
from ..app.visitor_text import without_paths
from ..app.warming import warming_text
from .visitor import current_client, visitor_gone

log = logging.getLogger(__name__)
# Each update costs the browser a fixed share (Gradio parses, clones and dispatches every output) besides
# what it appends: ~6 a second keep the gaps between visible updates well under half a second while a
# phone's throttled main thread stays mostly idle.
PANE_EVERY_S, STRIP_EVERY_S = 0.16, 1.0
# Down the race's own live feed an update costs the page only its append: ten a second.
LIVE_EVERY_S = 0.1


# The race tab's outputs: the panes and meters, each race plot by its registry name (view/race_plots.py),
# the trace's download, the Stop flag, the ledger and the timeline. (The page shows the Race tab itself:
# view/tabs/race.py's SHOW_RACE.)
RACE_FIELDS = ("status", "strip", "spec_meter", "spec_pane", "base_meter", "base_pane", *race_plots.NAMES,
               "download", "cancel", "ledger", "timeline")


class RaceUpdate(namedtuple("RaceUpdate", RACE_FIELDS, defaults=(gr.skip(),) * len(RACE_FIELDS))):
    """One update of the race tab, by name: view/tabs/race.py wires the outputs from these field names,
    so a handler never has to match a positional list. A field left out is not touched (gr.skip())."""
    __slots__ = ()


def _only(status: str, kind: str = "info", cancel=None) -> RaceUpdate:
    return RaceUpdate(status=status_html(status, kind), cancel=cancel if cancel else gr.skip())


def _refused(text: str) -> RaceUpdate:
    """A request refused before it ran: its message, and the last race's figures cleared, so no number
    on screen belongs to a run that is not the one the visitor just asked for."""
    return RaceUpdate(status=status_html(text, "error"), strip="", spec_meter="", spec_pane="", base_meter="",
                      base_pane="", **NO_PLOTS, download=download_html(),
                      ledger="", timeline="")


def run_race(app: AppState, *form, repeat: int = 1, live: bool = False, **named):
    """The race tab: form values in FORM_FIELDS order (or by name) -> streamed page updates; `repeat` > 1
    races the same request again that many times in all and reports the median (view/repeat_races.py).
    `live` (the page's own Run): the panes, timeline, meters and strip stream through the race's live
    feed (view/live_channel.py) instead of Gradio's updates, which carry its start and its end.

    Whatever goes wrong ends in a one-line message in the status: never a bare toast that leaves
    "Starting …" or "Racing …" on screen."""
    try:
        yield from _race(app, *form, repeat=repeat, live=live, **named)
    except Exception as err:          # noqa: BLE001 - the page must say something, whatever failed
        log.exception("race failed")
        yield _only(f"The race failed: {err.__class__.__name__}: {without_paths(str(err))}", "error")


def _race(app: AppState, *form, repeat: int = 1, live: bool = False, **named):
    cancel = threading.Event()
    # A client that joined and never opened its result stream gets nothing, not even the first update:
    # the check waits (up to view/visitor.OPEN_WITHIN_S) for the stream, which a browser opens at once.
    gone = visitor_gone()
    if gone():
        return
    try:
        req = RunRequest.from_form(*form, **named)
        settled = settle(app, req)
        if not app.pairs.loaded(settled.preset.key):
            warming = app.pairs.warming.left(settled.preset.key)    # the app's own warm-up (app/warming.py)
            yield _only(warming_text(*warming) if warming else f"Loading {settled.preset.label} …", cancel=cancel)
        run = load(app, settled)
        events = event_stream(app, run, cancel)
    except SpecvizError as err:
        yield _refused(str(err))
        return
    cfg = run.config
    view = RaceView(cfg.k)
    # The race runs in slices of the decoding slot (app/slots.py): other visitors' jobs interleave
    # (each lane's clock counts only its own compute); Stop while waiting, or the visitor gone, ends it.
    # While it waits for its first slot the page says its place in line, as the line moves.
    sharing = Sharing()            # another decoding job beside this one (concurrency_per_device > 1)
    # Its first token ends its first slice (`first_token`): a room in line sees every race start in turn.
    # The page's newer Run of this tab while this one still waits takes its place in line (`replace`): this
    # one then ends without a word, the newer one says everything. (An API caller's races all run.)
    job = app.decoders.sliced(events, gone, lambda: gone() or cancel.is_set(), sharing, line=True,
                              first_until=first_token, replace=live)
    work: Iterator = job
    others = side_mark = None      # taken once the race holds its first slot (its wait in line is not its own)
    feed = None
    try:
        work = yield from _in_line(work, cancel)
        feed = live_channel.Feed.open(current_client() or "") if live else None   # None: no room, Gradio's updates
        racing = status_html("Racing …") + (live_mark(feed.token) if feed else "")
        yield RaceUpdate(status=racing, strip=view.strip(), spec_meter=view.meter("spec"), spec_pane="",
                         base_meter=view.meter("base"), base_pane="", download=download_html(),
                         cancel=cancel, ledger="", timeline="")
        others, side_mark = OtherLoad(), app.side_work.mark()      # from the race's own first slot on
        yield from _stream(view, work, cancel, feed)
    except Replaced:
        return
    except Stopped:
        if gone():
            return
        cancel.set()
    except SpecvizError as err:
        yield _only(str(err), "error")
        return
    finally:
        job.close()              # its place in line or its slot given up at once
        events.close()
        if feed is not None:
            feed.close()
    if others is None:             # stopped while in line: nothing of its own ran
        others, side_mark = OtherLoad(), app.side_work.mark()
    stopped = cancel.is_set() or "cancelled" in view.stats.stop_reasons.values()
    if stopped:
        view.stopped()           # a lane cut off before its Done says "stopped", never "running"
    dtype = run.dtype
    share, side = others.share(), app.side_work.since(side_mark)
    # This race's own c and v join the pair's cost model (a prediction for later races: the k advice, Explain);
    # its ledger is its own lanes' (the model rides along only as the labelled "typical here").
    lanes = tallies(view.stats)    # once: the cost model, the tree's why and its box read the same tallies
    model = None if stopped else app.advisor.fold_race(run.preset, run.pair, *lanes,
                                                        getattr(view.dones.get("spec"), "stats", None), bool(cfg.tree))
    busy = busy_reason(share, side, sharing.shared)
    led = build_ledger(view.stats, model, busy)   # once: the verdict, the ledger's HTML and the saved trace read it
    ran = ran_line(run.preset.label, cfg)
    rep = None
    if repeat > 1 and not stopped:
        def again():
            return app.decoders.sliced(event_stream(app, run, cancel), gone, lambda: gone() or cancel.is_set())
        more = more_races(app, run, again, view.stats.measured_speedup(), min(repeat, MAX_REPEAT),
                          lambda: gone() or cancel.is_set())
        try:
            while True:
                yield RaceUpdate(status=next(more))
        except StopIteration as end:
            rep = end.value
        except Stopped:
            rep = None
    summary = (status_html("Stopped.", "done status-stopped") if stopped
               else _summary(view, led, share, cfg.greedy, dtype, side, sharing.shared, cfg.tree, lanes, rep)
               + repeat_html(rep)) + ran
    yield finished(view, led, summary, stopped,
                   download_html(_save_trace(view, led, req.prompt, cfg, run.preset, run.pair, dtype,
                                             cost_record(model, led.k, busy), settled.chat)),
                   tree=bool(cfg.tree), tree_box=_tree_box(view, run, stopped, model, lanes, led.speedup))


def _in_line(work: Iterator, cancel: threading.Event):
    """While `work` (a job sliced with line=True) waits for its first slot, one status update per place
    it reaches ("3rd in line, about 20 s"); returns the job's items from its first one on."""
    for item in work:
        if isinstance(item, InLine):
            yield _only(line_status(item, "run"), cancel=cancel)
            continue
        return itertools.chain([item], work)
    return iter(())


def finished(view: RaceView, led, status: str, stopped: bool, download: str, tree: bool = False,
             tree_box: str = "") -> RaceUpdate:
    """A finished race's whole tab from its folded events: panes, meters, strip, plots, kinds chart and
    ledger (with a tree race's box under it). A race that just ran and a replayed trace (view/replay.py)
    both end here, so they match."""
    return RaceUpdate(status=status, strip=view.strip(None if stopped else led), spec_meter=view.meter("spec"), spec_pane=view.pane("spec"),
                      base_meter=view.meter("base"), base_pane=view.pane("base"), **race_plots.figures(view),
                      download=download,
                      cancel=None, ledger=ledger_html(led, stopped=stopped, path=path_line(view.stats), tree=tree)
                      + tree_box, timeline=view.timeline.html())


def _tree_box(view: RaceView, run: Prepared, stopped: bool, model, lanes, speedup=None) -> str:
    """A tree race's box under the ledger (view/tree_results.py): the tree as this race measured it
    (`lanes`: its tallies; `speedup`: its ledger's, the headline's), the chain from the pair's cost model
    (`model`, None where it has none); "" for a chain."""
    cfg = run.config
    if not cfg.tree:
        return ""
    spec, plain = lanes
    done = view.dones.get("spec")
    by_choice = choice_rows(getattr(getattr(done, "stats", None), "by_choice", None))
    return tree_box_html(spec, plain, cfg.tree, by_choice, model, stopped=stopped, speedup=speedup)


def _stream(view: RaceView, events: Iterator[Event], cancel: threading.Event | None = None,
            feed: live_channel.Feed | None = None):
    """Fold the events into the view: panes, meters and timeline ~6 times a second (each an append,
    view/live_html.py), the strip once a second, no plots (they are drawn once, when the race ends:
    each re-sent figure was re-mounted below the fold while tokens waited). With a live `feed` the
    same goes down the race's own channel (view/live_channel.py), ~10 times a second, and nothing
    through Gradio. Once Stop is clicked nothing more is folded or sent: what was on screen is the
    stopped race."""
    every = LIVE_EVERY_S if feed is not None else PANE_EVERY_S
    last_pane = last_strip = 0.0
    started = False          # the first token is sent at once (its slice ends there: app/slots.py)
    for event in events:
        if cancel is not None and cancel.is_set():
            return
        view.add(event)
        now = time.monotonic()
        first = not started and first_token(event)
        started = started or first
        if first or now - last_pane >= every:
            strip = gr.skip()
            if now - last_strip >= STRIP_EVERY_S:
                strip, last_strip = view.strip(), now
            last_pane = now
            if feed is not None and not feed.cut:      # a channel gone: the rest through Gradio
                _feed(feed, view, strip if last_strip == now else None)
                continue
            yield RaceUpdate(strip=strip, spec_meter=view.meter("spec"), spec_pane=view.pane("spec"),
                             base_meter=view.meter("base"), base_pane=view.pane("base"),
                             timeline=view.timeline.html())
    if feed is not None and not (cancel is not None and cancel.is_set()):
        _feed(feed, view, None)        # the last tokens at once, before the race's summary is worked out


def _feed(feed: live_channel.Feed, view: RaceView, strip: str | None) -> None:
    """One update down the live feed: the panes' and timeline's new HTML, the meters, the strip if due."""
    whole = {"spec-meter": view.meter("spec"), "base-meter": view.meter("base")}
    if strip is not None:
        whole["stats"] = strip
    feed.send({"spec-pane": view.pane("spec"), "base-pane": view.pane("base"), "timeline": view.timeline.html()},
              whole)


def live_mark(token: str) -> str:
    """The status line's pointer to the race's live feed, which page.js opens (view/live_channel.py)."""
    return f'<span class="live-feed" hidden data-live="{live_channel.link(token)}"></span>'


def event_stream(app: AppState, run: Prepared, cancel: threading.Event) -> Iterator[Event]:
    """The race's events: in process, or as records from the decoding worker (app/gpu_calls.py).

    In process the engine reads `cancel` itself. A worker cannot share the flag, so here the
    record stream is closed once it is set: closing the worker's generator ends the race there."""
    if not (app.via_records or zerogpu.ON_ZEROGPU):
        return race(run.pair, run.ids, run.config, cancel)
    records = gpu_calls.race_records(gpu_calls.handle(app), run.preset.key, run.ids, run.config.to_dict())
    return _until_cancelled(records, cancel)


def _until_cancelled(records: Iterator[dict], cancel: threading.Event) -> Iterator[Event]:
    try:
        for record in records:
            yield from_dict(record)
            if cancel.is_set():
                return
    finally:
        records.close()


def starting() -> RaceUpdate:
    """Run was clicked: clear the previous race from view at once (its ledger too); the page has shown
    the Race tab (Run is also on screen beside the other tabs; the race's status line, its refusals
    included, is in the Race tab: view/tabs/race.py's SHOW_RACE). The strip goes too: its #speedup[data-final] must never belong to the race
    before (a script waits for it); so do the plots, which the new race draws once, at its end."""
    return RaceUpdate(status=status_html("Starting …"), strip="", spec_pane="", base_pane="", spec_meter="",
                      base_meter="", ledger="", timeline="", **NO_PLOTS)


def stop_run(cancel) -> None:
    """Stop button: ask this user's running race to stop; both lanes end within one round and
    the race itself reports "Stopped." (Stop writes nothing: a reply of its own could land after
    the race's last update and overwrite it.)"""
    if isinstance(cancel, threading.Event):
        cancel.set()


TRACE_VERSION = 2       # 2 added the pair's label and the target's dtype, which a replay's status reads


def cost_record(model, k: float, busy: str) -> dict | None:
    """What the race's ledger read besides its events, for a replay to show the same: the cost model's
    samples of c(k) and v(k + 1) at this race's k, and why the machine was not quiet ("" when it was)."""
    if model is None or not k:
        return {"busy": busy} if busy else None
    n = round(k)
    return {"k": n, "c": list(model.c_samples.get(n, [])), "v": list(model.v_samples.get(n + 1, [])), "busy": busy}


def _save_trace(view: RaceView, led, prompt: str, cfg, preset, pair, dtype: str,
                cost: dict | None = None, chat: bool | None = None) -> str | None:
    """The run as JSON: settings, model names (no paths), every event; returns its download token.
    Everything shown can be rebuilt from it (view/replay.py does, when a visitor loads it back)."""
    trace = {"specviz_trace": TRACE_VERSION, "prompt": prompt, "preset": preset.key, "pair": preset.label,
             "dtype": dtype, "chat": chat, "config": cfg.to_dict(),      # chat: the prompt went through the template
             "models": {"target": pair.target_name, "draft": pair.draft_name}, "events": view.trace,
             "acceptance_by_kind": view.kinds.table(),
             "ledger": led.to_dict(),      # why faster or slower (engine/analysis/ledger.py)
             "cost": cost}                 # the cost model's samples the ledger read, and a busy machine
    # once, under an opaque token, within this client's quota (trace_files.py); None: no link this time
    return trace_files.save(trace, owner=current_client())


def first_token(event) -> bool:
    """Does `event` put a token in the speculative lane's pane? The first such event is the race's first
    result for its visitor: it is sent at once, and it ends the race's first slice of the device."""
    return getattr(event, "lane", None) == "spec" and event.kind in KINDS
