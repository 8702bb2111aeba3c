"""A race's verdict, and how sure one race can be of it: faster, about even or slower.

A speedup within EVEN_BAND of 1.0 is "about even" (run-to-run noise on a quiet machine). The band
widens to half the relative range of the pass's price in the pair's cost model (cost_model.py): where
this machine's v has ranged from 1.0 to 1.8 across timings, a race at 1.15x cannot say which side of
1.0 it is on. And a race on a machine busy with other work is never called slower (other load slows
the speculative lane's many small passes more than the plain lane's); a gain there says to repeat it.
The ledger (ledger.py), the repeats (repeat.py) and the measuring scripts all call `verdict`.
"""
from __future__ import annotations

EVEN_BAND = 0.03      # speedups within 3% of 1.0 are reported as "about even" (run-to-run noise)


def figure_range(fig) -> tuple | None:
    """(low, high, samples) of a cost model Figure, for the ledger's record (None: no figure)."""
    return None if fig is None or fig.value is None else (fig.low, fig.high, fig.samples)


def spread(fig) -> float:
    """Half the relative range of a pass's price: how far one race's timing may stray from another's."""
    if fig is None or fig.value is None or fig.samples < 2 or fig.value <= 0:
        return 0.0
    return (fig.high - fig.low) / (2 * fig.value)


def verdict(speedup: float | None, spread: float = 0.0, busy: str = "") -> tuple[str, str]:
    """The verdict, and "" or why it may not hold. Inside max(EVEN_BAND, spread) of 1.0 a race is about
    even; on a busy machine a loss is not called one."""
    if speedup is None:
        return "unmeasured", ""
    band = max(EVEN_BAND, spread)
    if speedup >= 1 + band:
        return "faster", (f"But this machine was busy ({busy}): repeat to be sure." if busy else "")
    if speedup > 1 - band:
        within = (f"{speedup:.2f}x is inside this machine's timing spread (±{band:.0%}): repeat to be sure."
                  if band > EVEN_BAND and abs(speedup - 1) >= EVEN_BAND else "")
        if busy and not within:
            within = f"And this machine was busy ({busy}): repeat to be sure."
        return "about even", within
    if busy:
        return "about even", (f"{speedup:.2f}x, but this machine was busy ({busy}), which slows the speculative "
                              f"lane's many small passes more than the plain lane's: repeat to be sure.")
    return "slower", ""
