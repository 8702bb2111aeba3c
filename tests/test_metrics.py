"""The field's metrics (engine/measures.py) on a hand-made run of three rounds with k = 3:
round 1 accepts 2 drafts then rejects, round 2 rejects the first draft, round 3 accepts all 3."""
from __future__ import annotations

from types import SimpleNamespace as E

import pytest

from specviz.engine import measures
from specviz.engine.measures import LaneTally, PositionTally


def run_events():
    def verdict(kind, pos):
        return E(kind=kind, position=pos, t=0.0)

    def end(drafted, emitted):
        return E(kind="round_end", drafted=drafted, emitted=emitted, draft_s=0.1, verify_s=0.2, target_s=0.15,
                 accept_s=0.05, full=True, t=1.0)

    return [
        verdict("accepted", 0), verdict("accepted", 1), verdict("rejected", 2), E(kind="resampled", t=0.0), end(3, 3),
        verdict("rejected", 0), E(kind="resampled", t=0.0), end(3, 1),
        verdict("accepted", 0), verdict("accepted", 1), verdict("accepted", 2), E(kind="bonus", t=0.0), end(3, 4),
    ]


def test_acceptance_three_ways_and_tau():
    tally, positions = LaneTally(), PositionTally()
    for event in run_events():
        tally.add(event)
        positions.add(event)
    assert (tally.drafted, tally.accepted, tally.rejected, tally.tokens, tally.rounds) == (9, 5, 2, 8, 3)
    assert measures.acceptance_rate(tally) == pytest.approx(5 / 7)          # accepted / judged
    assert measures.draft_acceptance_rate(tally) == pytest.approx(5 / 9)    # accepted / drafted
    assert measures.mean_acceptance_length(tally) == pytest.approx(8 / 3)   # tau, in [1, k + 1]
    assert measures.conditional_acceptance(positions.judged, positions.accepted) == pytest.approx(
        {0: 2 / 3, 1: 1.0, 2: 0.5})
    stats = measures.summary(tally)
    assert stats["draft_acceptance_rate"] == pytest.approx(5 / 9)
    assert stats["mean_acceptance_length"] == pytest.approx(8 / 3)
    assert LaneTally.from_stats(stats) == tally


def test_empty_runs_have_no_figures():
    empty = LaneTally()
    assert measures.draft_acceptance_rate(empty) is None
    assert measures.mean_acceptance_length(empty) is None
    assert measures.conditional_acceptance({}, {}) == {}
