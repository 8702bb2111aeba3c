"""How far one race's speedup could stray, from that race's own timings: the interval its verdict uses.

A speedup is (seconds a plain step) / (seconds a token of the speculative lane). Each side is a mean
over units of work that should each cost about the same: a round of the speculative lane (k draft steps
and one verify pass: the same work whatever was accepted) and a step of the plain lane. How much those
units strayed is the race's timing noise, and a busy machine shows up here as stray rounds and steps.
Batch means (the units cut into BLOCKS consecutive blocks, so a stretch of load counts once, not as
many independent strays) give each mean's standard error; the relative errors add in quadrature, and
the interval is the speedup times exp(-/+ Z of them). Too few units for blocks: None (the verdict then
uses its EVEN_BAND alone).
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


def of_stats(stats, speedup: float | None) -> tuple[float, float] | None:
    """The interval of a race folded into an engine/analysis/stats.RunStats: its full rounds' draft and
    verify seconds (every round where fewer than BLOCKS were full), its plain lane's token gaps."""
    full = [r.draft_s + r.verify_s for r in stats.rounds if r.full]
    rounds = full if len(full) >= BLOCKS * MIN_PER_BLOCK else [r.draft_s + r.verify_s for r in stats.rounds]
    return interval(speedup, rounds, steps(stats.times["base"]))
