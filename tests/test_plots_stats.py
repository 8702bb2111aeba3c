"""Stats folded from a fixed event trace, the figures built from them, and the theory."""
import json

import pytest

from specviz.engine import theory
from specviz.engine.events import Accepted, Bonus, Done, Drafted, Rejected, Resampled, RoundEnd, TargetToken
from specviz.engine.stats import RunStats
from specviz.view.plots import all_figures, what_if


def fixed_trace():
    """Two rounds at k = 3: round 1 accepts all and earns a bonus; round 2 rejects at position 1."""
    yield Drafted(1, [1, 2, 3], ["a", "b", "c"], [0.9, 0.8, 0.7], t=0.01)
    for i, tok in enumerate([1, 2, 3]):
        yield Accepted(1, i, tok, "abc"[i], 0.9, 0.9, 1.0, 0.5, "ratio", i, t=0.02)
    yield Bonus(1, 3, 4, "d", 0.5, 3, t=0.02)
    yield RoundEnd(1, 3, 3, 4, 0.006, 0.014, 0.001, 4, 3, 3, "abcd", 3, True, t=0.02)
    yield TargetToken(0, 1, "a", 0.9, t=0.01)
    yield TargetToken(1, 2, "b", 0.9, t=0.02)
    yield Drafted(2, [5, 6, 7], ["e", "f", "g"], [0.9, 0.8, 0.7], t=0.03)
    yield Accepted(2, 0, 5, "e", 0.9, 0.9, 1.0, 0.5, "ratio", 4, t=0.04)
    yield Rejected(2, 1, 6, "f", 0.1, 0.8, 0.125, 0.9, "ratio", 1, t=0.04)
    yield Resampled(2, 1, 9, "x", 0.6, 0.3, [(9, "x", 0.6)], 5, t=0.04)
    yield RoundEnd(2, 3, 1, 2, 0.006, 0.014, 0.001, 6, 6, 4, "abcdex", 3, True, t=0.04)
    yield Done("abcdex", [1, 2, 3, 4, 5, 9], "max_tokens", {}, t=0.04)
    yield TargetToken(2, 3, "c", 0.9, t=0.03)
    yield Done("abc", [1, 2, 3], "max_tokens", {}, lane="base", t=0.03)


def folded():
    stats = RunStats(k=3)
    for event in fixed_trace():
        stats.add(event)
    return stats


def test_fold():
    s = folded()
    assert s.acceptance_rate == pytest.approx(4 / 5)            # 4 accepted of 5 verified (1 discarded)
    assert s.tokens_per_round == pytest.approx(3.0)             # (4 + 2) tokens over 2 full rounds
    assert s.per_round_acceptance() == [(1, 1.0), (2, 1 / 3)]
    assert dict(s.position_trials) == {0: 2, 1: 2, 2: 1} and dict(s.position_accepts) == {0: 2, 1: 1, 2: 1}
    assert s.tokens["spec"][-1] == 6 and s.tokens["base"][-1] == 3
    assert s.measured_speedup() == pytest.approx((6 / 0.04) / (3 / 0.03))
    # c = draft seconds per draft step x plain tokens per second = (0.012 / 6) * 100
    assert s.cost_ratio() == pytest.approx(0.2)
    # v = verify seconds per round / seconds per plain token = (0.028 / 2) * 100
    assert s.verify_ratio() == pytest.approx(1.4)
    th = s.theory()
    assert th["tokens_per_round"] == pytest.approx(theory.expected_tokens_per_round(0.8, 3))
    assert th["speedup"] == pytest.approx(theory.expected_speedup(0.8, 3, 0.2, 1.4))
    assert th["speedup"] < theory.expected_speedup(0.8, 3, 0.2, theory.GPU_IDEAL_V)   # a dearer verify pass lowers it


def test_figures_from_the_trace():
    acc, race_fig, hist, pos = all_figures(folded())
    assert list(acc.data[0].y) == [1.0, pytest.approx(1 / 3)] and list(acc.data[1].y)[-1] == pytest.approx(2 / 3)
    assert [tr.name for tr in race_fig.data] == ["speculative", "plain target"]
    assert list(race_fig.data[0].y) == [0, 1, 2, 3, 4, 5, 6] and list(race_fig.data[1].x)[-1] == 0.03
    assert list(hist.data[0].y) == [0, 0.5, 0, 0.5]             # one round with 1 accepted, one with 3
    assert list(hist.data[1].y) == pytest.approx(theory.accepted_pmf(0.8, 3))
    assert list(pos.data[0].y) == [1.0, 0.5, 1.0]
    for fig in (acc, race_fig, hist, pos):
        json.loads(fig.to_json())                                # serializable for the browser


def test_theory():
    assert theory.expected_tokens_per_round(0.0, 4) == 1.0
    assert theory.expected_tokens_per_round(1.0, 4) == 5.0
    assert theory.expected_tokens_per_round(0.5, 2) == pytest.approx(1.75)
    assert sum(theory.accepted_pmf(0.7, 5)) == pytest.approx(1.0)
    # The mean of the pmf plus the correction/bonus token is the expected tokens per round.
    pmf = theory.accepted_pmf(0.7, 5)
    assert sum(i * p for i, p in enumerate(pmf)) + 1 == pytest.approx(theory.expected_tokens_per_round(0.7, 5))
    assert theory.best_k(0.9, 0.05, 1.0) > theory.best_k(0.5, 0.05, 1.0) >= 1
    # a = 0.5, k = 2: E = 1.75; with c = 0.25 the round costs 1.5 steps, or 1.8 when verifying costs 1.3.
    assert theory.expected_speedup(0.5, 2, 0.25, theory.GPU_IDEAL_V) == pytest.approx(1.75 / 1.5)
    assert theory.expected_speedup(0.5, 2, 0.25, v=1.3) == pytest.approx(1.75 / 1.8)
    fig = what_if(0.8, 0.1, 1.3, 12)
    assert fig.data[2].x[0] == theory.best_k(0.8, 0.1, 1.3, 12)
    assert "v = 1.30" in fig.layout.title.text
    assert "GPU-ideal" in what_if(0.8, 0.1, theory.GPU_IDEAL_V, 12).layout.title.text
