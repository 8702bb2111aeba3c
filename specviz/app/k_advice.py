"""The k a loaded pair is offered with on this server: measured here, not copied from another machine.

When a pair is loaded, the app times a few passes of it in a decoding slot (engine/analysis/calibrate.py:
plain steps, target passes of 2..k_max + 1 tokens, each k's draft steps in their place in a round) with the threads it serves with,
and picks the k with the highest E(a, k) / (k c(k) + v(k)) for the acceptance rate a the preset's
draft reached on held-out prompts (spaces.yaml `acceptance`, measured in benchmarks/). The page
offers that k and says why in one line; a visitor can still set any k in range.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..engine.analysis.calibrate import MachineCosts, pick_k
from ..engine.metrics.theory import expected_speedup, priced_v


@dataclass(frozen=True)
class KAdvice:
    k: int
    a: float                 # the draft's held-out acceptance rate the choice assumes
    costs: MachineCosts
    expected: float          # E(a, k) / (k c(k) + v(k)) at the chosen k

    @property
    def c(self) -> float:
        """A draft step at the chosen k, in plain steps (priced in its place in a round)."""
        return self.costs.c(self.k)

    @property
    def v(self) -> float:
        """The verify pass at the chosen k (k + 1 tokens), in plain steps."""
        return self.costs.v(self.k)

    def line(self) -> str:
        c, v = self.c, self.v
        threads = f"{self.costs.threads} thread{'s' if self.costs.threads != 1 else ''}"
        return (f"k = {self.k} suits this machine: measured at load ({threads}), a draft step costs "
                f"c = {c:.2f} plain steps and a verify pass of {self.k + 1} tokens v = {v:.2f}"
                f"{'' if v == priced_v(v) else f' (below one step: timing noise, priced at {priced_v(v):.2f})'}; with the "
                f"draft's held-out acceptance a = {self.a:.2f} the formula expects {self.expected:.2f}x.")

    def to_dict(self) -> dict:
        return {"k": self.k, "a": self.a, "expected_speedup": self.expected, **self.costs.to_dict()}


def advise(costs: MachineCosts, a: float, k_range: tuple[int, int]) -> KAdvice:
    k = pick_k(a, costs, k_range)
    return KAdvice(k=k, a=a, costs=costs, expected=expected_speedup(a, k, costs.c(k), costs.v(k)))
