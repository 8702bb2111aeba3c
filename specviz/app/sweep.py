"""The live k sweep's fold: one prompt raced at k = 1..8, measured points beside the theory's curves.

Each k is a short measured race (both lanes, each on its own clock). The theory's curves
(Leviathan et al. 2023: E = (1 - a^(k+1)) / (1 - a) tokens per round, S = E / (k c + v)) are
computed from the sweep's own pooled acceptance rate a, cost ratio c and verify ratio v, so
measured points sit on (or off) a curve drawn from the same runs. view/sweep.py draws it.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from ..engine.metrics import theory
from ..engine.metrics import measures
from ..engine.loop.events import from_dict
from ..engine.analysis.stats import RunStats

SWEEP_KS = tuple(range(1, 9))


@dataclass
class SweepPoint:
    k: int
    speedup: float
    tokens_per_round: float | None
    acceptance: float | None
    cost_ratio: float | None
    verify_ratio: float | None


@dataclass
class Sweep:
    points: list[SweepPoint] = field(default_factory=list)
    tallies: list[measures.LaneTally] = field(default_factory=list)   # each race's speculative lane
    plain_rates: list[float] = field(default_factory=list)           # each race's plain tokens/s

    def add_race(self, k: int, records: list[dict]) -> SweepPoint:
        stats = RunStats(k)
        for record in records:
            stats.add(from_dict(record))
        spec, base = stats.tallies["spec"], stats.tallies["base"]
        point = SweepPoint(k, stats.measured_speedup() or 0.0, stats.tokens_per_round, stats.acceptance_rate,
                           measures.cost_ratio(spec, base), measures.verify_ratio(spec, base))
        self.points.append(point)
        self.tallies.append(spec)
        plain = measures.rate(base.tokens, base.elapsed_s)
        if plain:
            self.plain_rates.append(plain)
        return point

    def noise(self) -> float:
        """The sweep's own timing noise, relative: every race decodes the same prompt plainly, so the
        spread of those plain rates (2 standard deviations over their mean) is how much a speedup can
        move by chance on this machine now; never below ledger.EVEN_BAND (3%)."""
        from ..engine.analysis.ledger import EVEN_BAND
        rates = self.plain_rates
        if len(rates) < 2:
            return EVEN_BAND
        return max(EVEN_BAND, 2 * statistics.stdev(rates) / statistics.mean(rates))

    def within_noise(self) -> list[int]:
        """The ks whose measured speedup is within the sweep's noise of the best one."""
        if not self.points:
            return []
        top = max(p.speedup for p in self.points)
        return sorted(p.k for p in self.points if p.speedup >= top * (1 - self.noise()))

    @property
    def a(self) -> float | None:
        """Pooled acceptance rate: accepted / verified drafts over every run of the sweep."""
        return measures.acceptance_rate(measures.pool(self.tallies))

    def _median(self, name: str) -> float | None:
        values = [getattr(p, name) for p in self.points if getattr(p, name) is not None]
        return statistics.median(values) if values else None

    @property
    def c(self) -> float | None:
        return self._median("cost_ratio")

    @property
    def v(self) -> float | None:
        return self._median("verify_ratio")

    def best_measured(self) -> int | None:
        return max(self.points, key=lambda p: p.speedup).k if self.points else None

    def theory_curve(self) -> dict[int, tuple[float, float]] | None:
        """k -> (expected tokens per round, expected speedup) from the pooled a, c and v."""
        a, c, v = self.a, self.c, self.v
        if a is None or c is None:
            return None
        a = min(a, 0.999)
        if v is None:
            return None
        return {k: (theory.expected_tokens_per_round(a, k), theory.expected_speedup(a, k, c, v))
                for k in SWEEP_KS}

    def best_theory(self) -> int | None:
        curve = self.theory_curve()
        return max(curve, key=lambda k: curve[k][1]) if curve else None
