"""The race tab's "Race 3x": the same prompt and settings raced again, quietly, for a verdict that holds.

One race is one draw (engine/analysis/repeat.py): the panes show the first race; the others run after
it through the same decoding slots (app/slots.py), each folded into its own RunStats for its
like-for-like speedup and into the pair's cost model; the status then gives the median with the range,
in the engine's words. Nothing here decodes or times anything itself.
"""
from __future__ import annotations

from ..engine.analysis.repeat import Repeated, repeated
from ..engine.analysis.stats import RunStats
from .ledger_view import tallies
from .render import clean, status_html

MAX_REPEAT = 3      # the page's button; the CLI takes any --repeat N


def more_races(app, run, stream, first: float | None, total: int, stopped):
    """Races 2..total of `run` (a Prepared): `stream()` gives a fresh race's events, already sliced;
    yields a status line before each; returns the Repeated of all (None when stopped or none measured)."""
    speedups = [first]
    for i in range(2, total + 1):
        if stopped():
            return None
        yield status_html(f"Race {i} of {total} on the same prompt and settings …")
        stats = RunStats(run.config.k)
        for event in stream():
            stats.add(event)
        if stopped() or "cancelled" in stats.stop_reasons.values():
            return None
        spec = stats.done.get("spec")
        app.advisor.fold_race(run.preset, run.pair, *tallies(stats), spec, bool(run.config.tree))
        speedups.append(stats.measured_speedup())
    return repeated(speedups)


def repeat_html(rep: Repeated | None) -> str:
    if rep is None:
        return ""
    return (f'<div class="repeat-line" id="race-repeat" data-median="{rep.median:.4f}" data-low="{rep.low:.4f}" '
            f'data-high="{rep.high:.4f}" data-verdict="{clean(rep.verdict)}">{clean(rep.line())} '
            f'The panes show the first race.</div>')
