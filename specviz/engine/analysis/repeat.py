"""One prompt raced N times: the median speedup with its range, the figure a verdict can stand on.

One race is one draw: on a shared CPU five identical greedy races (the same passes for the same
tokens each time) have read anywhere from 1.2x to 2.8x. The median of N races moves far less than
any one race, and the range says how far a single race may stray. The verdict is the median's with the
range as its interval (verdict.py): "about even" where the range holds 1.0x (some races lost).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from .race_spread import spread
from .verdict import EVEN_BAND, verdict


@dataclass(frozen=True)
class Repeated:
    speedups: tuple[float, ...]     # each race's measured speedup, in the order run
    median: float
    low: float
    high: float
    verdict: str                    # the median's: "faster", "about even" or "slower"

    @property
    def crosses(self) -> bool:
        """Some races gained and some lost (beyond the even band): one race alone could say either."""
        return self.low <= 1 - EVEN_BAND and self.high >= 1 + EVEN_BAND

    def headline(self) -> str:
        """Race 3x's headline: the median with its range (the first race alone is one draw)."""
        return (f"median {self.median:.2f}× the plain speed over {len(self.speedups)} races "
                f"(range {self.low:.2f}–{self.high:.2f}×).")

    def line(self) -> str:
        n = len(self.speedups)
        lost = sum(s <= 1 - EVEN_BAND for s in self.speedups)
        cross = (f"; the range crosses 1.0x ({lost} of {n} races alone would read slower), so one race "
                 f"could say either" if self.crosses else "")
        return (f"Repeated {n}x: median {self.median:.2f}x (range {self.low:.2f}-{self.high:.2f}x), "
                f"{self.verdict}{cross}.")


def repeated(speedups) -> Repeated | None:
    """The median and range of the races that measured a speedup (None where none did)."""
    xs = tuple(s for s in speedups if s is not None)
    if not xs:
        return None
    median = statistics.median(xs)
    return Repeated(xs, median, min(xs), max(xs), verdict(median, spread(median, xs))[0])
