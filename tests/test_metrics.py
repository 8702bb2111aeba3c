"""The field's metrics (engine/metrics/measures.py) on a hand-made run of three rounds with k = 3:
round 1 accepts 2 drafts then rejects, round 2 rejects the first draft, round 3 accepts all 3."""
from __future__ import annotations

import json
from types import SimpleNamespace as E

import pytest

from specviz.engine.metrics import measures
from specviz.engine.loop.events import Done, from_dict, to_dict
from specviz.engine.metrics.measures import LaneStats, LaneTally, PositionTally


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
    stats = LaneStats.of(tally, target_forwards=3, draft_forwards=9)
    assert stats.draft_acceptance_rate == pytest.approx(5 / 9)
    assert stats.mean_acceptance_length == pytest.approx(8 / 3)
    assert stats.tally == tally and LaneTally.from_stats(stats) == tally


# Done.stats' record, as traces, `run --json` and the /generate API have always written it.
TRACE_KEYS = ["rounds", "drafted", "accepted", "rejected", "tokens", "full_rounds", "full_round_tokens", "draft_s",
              "verify_s", "target_s", "accept_s", "elapsed_s", "acceptance_rate", "draft_acceptance_rate",
              "mean_acceptance_length", "tokens_per_round", "tokens_per_s", "target_forwards", "draft_forwards",
              "decode_path", "capture_s", "graph_check_delta", "draft_path", "draft_format_by"]


def test_done_stats_keep_their_record_keys_and_read_back():
    tally = LaneTally()
    for event in run_events():
        tally.add(event)
    plain = LaneStats.of(tally, target_forwards=8, decode_path="eager replay", capture_s=0.5)
    assert list(plain.to_dict()) == TRACE_KEYS                      # a plain lane names no rule
    spec = LaneStats.of(tally, rule="exact", rule_lossless=True)
    assert list(spec.to_dict()) == TRACE_KEYS + ["rule", "rule_lossless"]
    assert spec.to_dict()["accepted"] == 5 and spec.to_dict()["acceptance_rate"] == pytest.approx(5 / 7)
    for stats in (plain, spec):
        assert LaneStats.from_dict(json.loads(json.dumps(stats.to_dict()))) == stats
    # Through the event records (the ZeroGPU boundary, saved traces); an older record lacks new keys.
    done = Done(text="ab", token_ids=[1, 2], stop_reason="max_tokens", stats=spec)
    assert from_dict(to_dict(done)) == done and to_dict(done)["stats"] == spec.to_dict()
    old = {k: v for k, v in spec.to_dict().items() if k not in ("target_s", "accept_s", "rule", "rule_lossless")}
    assert LaneStats.from_dict(old).tally.target_s == 0.0 and LaneStats.from_dict(old).rule is None


def test_empty_runs_have_no_figures():
    empty = LaneTally()
    assert measures.draft_acceptance_rate(empty) is None
    assert measures.mean_acceptance_length(empty) is None
    assert measures.conditional_acceptance({}, {}) == {}


def test_no_formula_promises_more_than_the_rounds_yield():
    # A verify pass does at least a plain step's work: a measured v below 1 is noise, priced at 1, so
    # the formula's speedup never exceeds tokens per round and the break-even a is above 0 when c > 0.
    from specviz.engine.metrics.theory import break_even_acceptance, expected_speedup, expected_tokens_per_round
    for a in (0.2, 0.5, 0.9):
        for k in (1, 3, 6):
            assert expected_speedup(a, k, 0.0, 0.88) <= expected_tokens_per_round(a, k)
            assert expected_speedup(a, k, 0.05, 0.88) == expected_speedup(a, k, 0.05, 1.0)
    assert break_even_acceptance(4, 0.03, 0.88) > 0.0
