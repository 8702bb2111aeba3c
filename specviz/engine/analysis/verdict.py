"""A race's verdict, from the race itself: faster, about even or slower, with how sure it can be.

The verdict compares the two lanes' measured times (the measured speedup) and an interval around it
that this race's own timings give (race_spread.py: how much its rounds and its plain steps strayed
from their means; for a repeated race, the races' range). Faster when the whole interval lies above
1.0, slower when it lies below, "about even" only when it holds 1.0. The interval is never narrower
than EVEN_BAND either side (run-to-run noise on a quiet machine). Nothing measured across other races
(the cost model) widens it or overrules it: a 1.8x race is faster whatever earlier races timed.

A machine busy with other work is said in a sentence a student reads; it does not change the verdict
(the race's own spread already widened the interval if the load made its timings stray).
The ledger (ledger.py), the repeats (repeat.py), the benchmark (bench/suite.py, bench/tree_bench.py via
tree_ledger.py) and the measuring scripts all call `verdict`, with the interval race_spread.spread gives.
"""
from __future__ import annotations

EVEN_BAND = 0.03      # the interval is at least 3% either side of the speedup (run-to-run noise, quiet machine)


def band(speedup: float, interval: tuple[float, float] | None = None) -> tuple[float, float]:
    """(low, high) the verdict judges: the race's own interval, never narrower than EVEN_BAND either side."""
    low, high = interval if interval is not None else (speedup, speedup)
    return min(low, speedup * (1 - EVEN_BAND)), max(high, speedup * (1 + EVEN_BAND))


def busy_sentence(busy: str) -> str:
    """The busy machine in a student's words ("" on a quiet one)."""
    return (f"This machine was busy ({busy}): both lanes slowed, unevenly, so repeat the race "
            f"for a firmer figure." if busy else "")


def verdict(speedup: float | None, interval: tuple[float, float] | None = None, busy: str = "",
            source: str = "this race's own timings") -> tuple[str, str]:
    """The verdict, and "" or what qualifies it: faster when the interval (band) lies above 1.0, slower
    when below, about even when it holds 1.0 (then the sentence gives the interval where it is wide,
    and `source`, where the interval came from: a race's own timings, or its repeats' range)."""
    if speedup is None:
        return "unmeasured", ""
    low, high = band(speedup, interval)
    word = "faster" if low > 1.0 else "slower" if high < 1.0 else "about even"
    notes = []
    if word == "about even" and abs(speedup - 1) >= EVEN_BAND:
        notes.append(f"{speedup:.2f}x, but {source} allow anything from {low:.2f}x to "
                     f"{high:.2f}x, which holds 1.0x.")
    notes.append(busy_sentence(busy))
    return word, " ".join(n for n in notes if n)
