"""Pure folds over engine events: everything the plots and the stats strip show.

`RunStats.add(event)` accumulates; every figure is derived from what was added, with the
definitions of `engine/metrics/measures.py` (the same ones the engine's `Done.stats`, the CLI and the
benchmark use), so a saved trace redraws the same numbers. Nothing here decodes or times anything.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..metrics import theory
from ..metrics import measures
from ..metrics.measures import TOKEN_KINDS, LaneStats, LaneTally


@dataclass
class RoundInfo:
    round: int
    drafted: int
    accepted: int
    emitted: int
    draft_s: float
    verify_s: float
    full: bool = True          # drafted the k planned for it, no stop rule cut it (measures.py)
    judged: int = 0            # drafts the target judged this round: the accepted ones and a rejected one


@dataclass
class RunStats:
    k: int
    rounds: list[RoundInfo] = field(default_factory=list)
    positions: measures.PositionTally = field(default_factory=measures.PositionTally)   # judged/accepted per position
    tallies: dict = field(default_factory=lambda: {"spec": LaneTally(), "base": LaneTally()})
    times: dict = field(default_factory=lambda: {"spec": [0.0], "base": [0.0]})    # lane clock per token
    tokens: dict = field(default_factory=lambda: {"spec": [0], "base": [0]})
    done: dict[str, LaneStats] = field(default_factory=dict)      # lane -> Done.stats
    stop_reasons: dict = field(default_factory=dict)
    texts: dict = field(default_factory=dict)                     # lane -> its final text
    judged_in_rounds: int = 0                                     # drafts judged in the rounds folded so far

    def add(self, event) -> None:
        kind, lane = event.kind, event.lane
        self.tallies[lane].add(event)
        self.positions.add(event)
        if kind in TOKEN_KINDS:
            self.times[lane].append(event.t)
            self.tokens[lane].append(self.tokens[lane][-1] + 1)
        elif kind == "round_end":
            tally = self.tallies[lane]
            judged = tally.accepted + tally.rejected - self.judged_in_rounds
            self.judged_in_rounds += judged
            self.rounds.append(RoundInfo(event.round, event.drafted, event.accepted, event.emitted,
                                         event.draft_s, event.verify_s, event.full, judged))
        elif kind == "done":
            self.done[lane] = event.stats
            self.stop_reasons[lane] = event.stop_reason
            self.texts[lane] = event.text

    # --- derived figures (definitions in engine/metrics/measures.py) -----------------------------
    @property
    def acceptance_rate(self) -> float | None:
        return measures.acceptance_rate(self.tallies["spec"])

    @property
    def tokens_per_round(self) -> float | None:
        return measures.tokens_per_round(self.tallies["spec"])

    def per_round_acceptance(self) -> list[tuple[int, float, float]]:
        """(round, that round's a, a so far) for every round that judged a draft: a = accepted / judged,
        the acceptance rate of measures.py, so the last "so far" is the race's acceptance rate."""
        out, accepted, judged = [], 0, 0
        for r in self.rounds:
            if r.judged:
                accepted, judged = accepted + r.accepted, judged + r.judged
                out.append((r.round, r.accepted / r.judged, accepted / judged))
        return out

    def lane_rate(self, lane: str) -> float | None:
        """Tokens per second of a lane on its own clock, so far."""
        t = self.tallies[lane]
        return measures.rate(t.tokens, t.elapsed_s)

    def measured_speedup(self) -> float | None:
        """The race's speedup, like for like (measures.compared_speedup: over the shorter lane's tokens
        where the lanes wrote different lengths)."""
        return self.compared()[0]

    def compared(self) -> tuple[float | None, int | None]:
        """(speedup, n): n the tokens each lane was compared over, None where the whole lanes were."""
        return measures.compared_speedup(self.tallies["spec"], self.tallies["base"], self.times["spec"],
                                         self.times["base"])

    def cost_ratio(self) -> float | None:
        return measures.cost_ratio(self.tallies["spec"], self.tallies["base"])

    def verify_ratio(self) -> float | None:
        return measures.verify_ratio(self.tallies["spec"], self.tallies["base"])

    def drafts_per_round(self) -> float:
        """The theory's k for this race: the drafts its rounds actually made (the setting, or fewer where
        rounds were cut short by the token budget or the confidence stop); the setting before any round."""
        return measures.drafts_per_round(self.tallies["spec"]) or self.k

    def theory(self) -> dict:
        """The theory's expectations for the measured acceptance rate, cost ratio c and verify ratio v
        (the verify pass priced as measured: on a CPU it costs more than one plain step)."""
        a, c, v = self.acceptance_rate, self.cost_ratio(), self.verify_ratio()
        if a is None:
            return {}
        # One k for every figure, the drafts a round made, as the race's ledger prices them: E at the
        # setting beside a speedup at the mean made the strip's E / (k c + v) irreproducible.
        k = self.drafts_per_round()
        out = {"k": k, "tokens_per_round": theory.expected_tokens_per_round(a, k)}
        # Not from a pass timed cheaper than one plain step (disturbed timing: ledger.py prices nothing then).
        if c is not None and v is not None and v >= theory.MIN_V:
            out["speedup"] = theory.expected_speedup(a, k, c, v)
            out["best_k"] = theory.best_k(a, c, v)
        return out
