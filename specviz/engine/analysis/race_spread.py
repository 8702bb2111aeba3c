"""How far one race's speedup could stray, from that race's own timings: the interval its verdict uses.

A speedup is (seconds a plain step) / (seconds a token of the speculative lane). Each side is a mean
over units of work that should each cost about the same: a round of the speculative lane (k draft steps
and one verify pass: the same work whatever was accepted) and a step of the plain lane. How much those
units strayed is the race's timing noise, and a busy machine shows up here as stray rounds and steps.
Batch means (the units cut into BLOCKS consecutive blocks, so a stretch of load counts once, not as
many independent strays) give each mean's standard error; the relative errors add in quadrature, and
the interval is the speedup times exp(-/+ Z of them). Too few units for blocks: None (the verdict then
uses its EVEN_BAND alone).

Where the same race was run several times (the page's Race 3x, the CLI's --repeat, the benchmark's
rotations), the races' own range is the interval instead: `spread` is the one function every verdict's
caller asks, the page, the CLI and the benchmark alike.
"""
from __future__ import annotations

import math
import statistics

BLOCKS = 6          # consecutive blocks of units whose means are compared
MIN_PER_BLOCK = 2   # units a block needs
Z = 2.0             # about a 95% interval


def relative_error(units: list[float], blocks: int = BLOCKS) -> float | None:
    """The standard error of the units' mean over the mean, by batch means (None: too few units)."""
    n = len(units)
    if n < blocks * MIN_PER_BLOCK:
        return None
    edges = [round(i * n / blocks) for i in range(blocks + 1)]
    means = [statistics.fmean(units[a:b]) for a, b in zip(edges, edges[1:])]
    mean = statistics.fmean(means)
    return statistics.stdev(means) / math.sqrt(blocks) / mean if mean > 0 else None


def steps(times: list[float]) -> list[float]:
    """Seconds between consecutive tokens of a lane's clock (the first token's time from the lane's start)."""
    return [b - a for a, b in zip(times, times[1:])]


def interval(speedup: float | None, round_s: list[float], plain_step_s: list[float]) -> tuple[float, float] | None:
    """(low, high) of this race's speedup from its rounds' and its plain steps' spread (None: too few)."""
    if speedup is None:
        return None
    errs = [relative_error(round_s), relative_error(plain_step_s)]
    if None in errs:
        return None
    r = math.hypot(*errs)
    return speedup * math.exp(-Z * r), speedup * math.exp(Z * r)


def round_seconds(rounds) -> list[float]:
    """Each round's draft and verify seconds, of its full rounds (every round where fewer than BLOCKS
    were full): `rounds` holds RoundEnd events or RoundInfo records (both carry draft_s, verify_s, full)."""
    full = [r.draft_s + r.verify_s for r in rounds if r.full]
    return full if len(full) >= BLOCKS * MIN_PER_BLOCK else [r.draft_s + r.verify_s for r in rounds]


def of_stats(stats, speedup: float | None) -> tuple[float, float] | None:
    """The interval of a race folded into an engine/analysis/stats.RunStats: its rounds' seconds
    (round_seconds), its plain lane's token gaps."""
    return interval(speedup, round_seconds(stats.rounds), steps(stats.times["base"]))


def of_repeats(speedups) -> tuple[float, float] | None:
    """(lowest, highest) of the races that measured a speedup, where two or more did (None otherwise)."""
    xs = [s for s in speedups if s is not None]
    return (min(xs), max(xs)) if len(xs) >= 2 else None


def spread(speedup: float | None, repeats=(), units: tuple | None = None) -> tuple[float, float] | None:
    """The interval a verdict judges (verdict.py): the repeats' range where two or more races of the same
    prompt and settings measured a speedup, else the one race's own spread, `units` being its
    (rounds' seconds, plain steps' seconds); None where neither is known."""
    rng = of_repeats(repeats)
    if rng is not None:
        return rng
    return interval(speedup, *units) if units is not None else None


def spanning(intervals) -> tuple[float, float] | None:
    """The smallest interval holding every given one (None entries skipped; None if none is left): the
    benchmark's verdict over several prompts is "faster" only where every prompt's own interval is."""
    known = [i for i in intervals if i is not None]
    return (min(i[0] for i in known), max(i[1] for i in known)) if known else None
