"""Pure folds over engine events: everything the plots and the stats strip show.

`RunStats.add(event)` accumulates; all figures are derived from what was added, so the
same numbers come back from a saved trace. Nothing here decodes or times anything.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from . import theory


@dataclass
class RoundInfo:
    round: int
    drafted: int
    accepted: int
    emitted: int
    draft_s: float
    verify_s: float


@dataclass
class RunStats:
    k: int
    rounds: list[RoundInfo] = field(default_factory=list)
    position_trials: Counter = field(default_factory=Counter)    # drafts verified at each position
    position_accepts: Counter = field(default_factory=Counter)
    times: dict = field(default_factory=lambda: {"spec": [0.0], "base": [0.0]})    # lane clock per token
    tokens: dict = field(default_factory=lambda: {"spec": [0], "base": [0]})
    done: dict = field(default_factory=dict)                      # lane -> Done.stats
    stop_reasons: dict = field(default_factory=dict)

    def add(self, event) -> None:
        kind, lane = event.kind, event.lane
        if kind in ("accepted", "rejected"):
            self.position_trials[event.position] += 1
            self.position_accepts[event.position] += kind == "accepted"
        if kind in ("accepted", "resampled", "bonus", "target_token"):
            self.times[lane].append(event.t)
            self.tokens[lane].append(self.tokens[lane][-1] + 1)
        elif kind == "round_end":
            self.rounds.append(RoundInfo(event.round, event.drafted, event.accepted, event.emitted,
                                         event.draft_s, event.verify_s))
        elif kind == "done":
            self.done[lane] = event.stats
            self.stop_reasons[lane] = event.stop_reason

    # --- derived figures -------------------------------------------------------------
    @property
    def drafted(self) -> int:
        return sum(r.drafted for r in self.rounds)

    @property
    def acceptance_rate(self) -> float | None:
        """Accepted / verified drafts (drafts discarded after a rejection were never verified)."""
        trials = sum(self.position_trials.values())
        return sum(self.position_accepts.values()) / trials if trials else None

    @property
    def mean_tokens_per_round(self) -> float | None:
        return sum(r.emitted for r in self.rounds) / len(self.rounds) if self.rounds else None

    def per_round_acceptance(self) -> list[tuple[int, float]]:
        return [(r.round, r.accepted / r.drafted) for r in self.rounds if r.drafted]

    def lane_rate(self, lane: str) -> float | None:
        """Tokens per second of a lane on its own clock, so far."""
        t = self.times[lane][-1]
        return (self.tokens[lane][-1] / t) if t > 0 and self.tokens[lane][-1] else None

    def measured_speedup(self) -> float | None:
        spec, base = self.lane_rate("spec"), self.lane_rate("base")
        return spec / base if spec and base else None

    def cost_ratio(self) -> float | None:
        """c = seconds per draft step / seconds per plain target step (measured in this run)."""
        drafted = self.drafted
        base = self.lane_rate("base")
        if not drafted or not base:
            return None
        return (sum(r.draft_s for r in self.rounds) / drafted) * base

    def theory(self) -> dict:
        """The theory's expectations for the measured acceptance rate and cost ratio."""
        a, c = self.acceptance_rate, self.cost_ratio()
        if a is None:
            return {}
        out = {"tokens_per_round": theory.expected_tokens_per_round(a, self.k)}
        if c is not None:
            out["speedup"] = theory.expected_speedup(a, self.k, c)
            out["best_k"] = theory.best_k(a, c)
        return out
