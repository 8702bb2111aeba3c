"""The benchmark's verdict is the page's: faster, about even or slower from the runs' own interval.

A fixed band around the median (3% either side) called a 1.10x prompt "faster" whose rotations read
0.95x, 1.10x and 1.25x, and "about even" a steady 1.02x. The bench now asks race_spread.spread, the
function the page's Race 3x and the CLI's --repeat ask: the rotations' range, or with one rotation the
spread of that run's own rounds and plain steps; over prompts, the interval spanning every prompt's.
The runs here are made up (Timing records with their units of work), so each case is the true one.
"""
from __future__ import annotations

import pytest

from specviz.bench.report import verdict_line
from specviz.bench.runner import Timing
from specviz.bench.suite import _prompt_row, _summarize, prompts_interval, speedup_interval
from specviz.engine.analysis import race_spread
from specviz.engine.analysis.ledger import Ledger
from specviz.engine.analysis.repeat import repeated
from specviz.engine.analysis.tree_ledger import Side, compare_sides
from specviz.engine.analysis.verdict import verdict
from specviz.engine.metrics.measures import LaneStats, LaneTally

STEADY_ROUNDS = [0.100 + 0.001 * (i % 3) for i in range(24)]      # a round's seconds, barely straying
STEADY_STEPS = [0.050 + 0.0005 * (i % 3) for i in range(60)]      # a plain step's
NOISY_ROUNDS = [0.1 if i % 12 < 6 else 0.3 for i in range(24)]     # half the rounds slowed by other work


def spec_run(seconds: float, units=STEADY_ROUNDS) -> Timing:
    """A speculative run: 60 tokens in 24 rounds (k = 3), 48 of 72 drafts judged kept."""
    tally = LaneTally(rounds=24, drafted=72, accepted=36, rejected=12, tokens=60, full_rounds=24,
                      full_round_tokens=60, draft_s=0.3 * seconds, verify_s=0.6 * seconds,
                      target_s=0.5 * seconds, accept_s=0.1 * seconds, elapsed_s=seconds)
    return Timing(60, seconds, LaneStats.of(tally), list(units))


def plain_run(seconds: float, units=STEADY_STEPS) -> Timing:
    tally = LaneTally(tokens=60, target_s=0.9 * seconds, accept_s=0.05 * seconds, elapsed_s=seconds)
    return Timing(60, seconds, LaneStats.of(tally), list(units))


def row(spec_seconds: list[float], plain_seconds: list[float], spec_units=STEADY_ROUNDS) -> dict:
    runs = {"specviz speculative": [spec_run(s, spec_units) for s in spec_seconds],
            "specviz plain": [plain_run(s) for s in plain_seconds]}
    return _prompt_row("code", 12, runs, 3, None)


def test_a_prompt_whose_rotations_cross_one_is_about_even_not_faster():
    r = row([3.0 / 0.95, 3.0 / 1.10, 3.0 / 1.25], [3.0, 3.0, 3.0])
    assert r["ratios"]["speedup"] == pytest.approx(1.10)
    assert r["speedup_interval"] == pytest.approx((0.95, 1.25))
    assert r["verdict"] == "about even"                 # a fixed 3% band around 1.10 said "faster"
    r = row([3.0 / 1.20, 3.0 / 1.10, 3.0 / 1.25], [3.0, 3.0, 3.0])
    assert r["verdict"] == "faster"


def test_one_rotation_is_judged_by_its_own_rounds_and_steps():
    steady = row([3.0 / 1.06], [3.0])
    low, high = steady["speedup_interval"]
    assert low < 1.06 < high and low > 1.0 and steady["verdict"] == "faster"
    noisy = row([3.0 / 1.06], [3.0], NOISY_ROUNDS)
    assert noisy["speedup_interval"][0] < 1.0 and noisy["verdict"] == "about even"
    # the same function the page's single race asks, on the same units
    assert steady["speedup_interval"] == race_spread.interval(steady["ratios"]["speedup"], STEADY_ROUNDS,
                                                              STEADY_STEPS)


def test_the_interval_is_the_one_function_the_page_and_cli_ask():
    speedups = [1.7, 1.9, 1.8]
    assert race_spread.spread(1.8, speedups) == (1.7, 1.9)
    assert repeated(speedups).verdict == verdict(1.8, race_spread.spread(1.8, speedups))[0] == "faster"
    runs = [spec_run(3.0 / s) for s in speedups], [plain_run(3.0) for _ in speedups]
    assert speedup_interval(*runs, 1.8) == pytest.approx((1.7, 1.9))
    assert race_spread.spread(1.8, [1.8]) is None                       # one race and no units: no interval
    assert race_spread.spread(None, [1.8, None]) is None


def test_over_prompts_faster_only_where_every_prompt_is():
    fast = row([3.0 / 1.5, 3.0 / 1.6, 3.0 / 1.4], [3.0] * 3)
    loses = row([3.0 / 0.97, 3.0 / 1.02, 3.0 / 1.0], [3.0] * 3)
    assert prompts_interval([fast]) == pytest.approx((1.4, 1.6))
    assert prompts_interval([fast, loses]) == pytest.approx((0.97, 1.6))
    point = {"speedup_interval": None, "ratios": {"speedup": 0.9}}      # a prompt without its own interval
    assert prompts_interval([fast, point]) == pytest.approx((0.9, 1.6))
    summary = _summarize([fast, loses], 3, None)
    assert summary["verdict"] == "about even"
    summary = _summarize([fast, row([3.0 / 1.3, 3.0 / 1.35, 3.0 / 1.25], [3.0] * 3)], 3, None)
    assert summary["verdict"] == "faster"


def test_the_summary_ledger_prints_the_one_verdict_and_the_table_says_it():
    rows = [row([3.0 / 0.95, 3.0 / 1.10, 3.0 / 1.25], [3.0] * 3), row([3.0 / 1.2, 3.0 / 1.3, 3.0 / 1.25], [3.0] * 3)]
    summary = _summarize(rows, 3, None)
    led = Ledger.from_dict(summary["ledger"])
    assert led.verdict == summary["verdict"] == "about even"
    assert led.speedup == pytest.approx(summary["speedup"]) and led.interval == pytest.approx((0.95, 1.3))
    assert "the prompts' runs allow anything from 0.95x to 1.30x" in led.cause
    line = verdict_line({"k": 3, "summary": summary, "per_prompt": rows})
    assert line.startswith(f"k=3: about even, {summary['speedup']:.2f}x (the prompts' runs 0.95-1.30x)")
    assert "code about even 1.10x (0.95-1.25x)" in line and "code faster 1.25x (1.20-1.30x)" in line


def test_the_tree_against_the_chain_is_judged_by_the_same_function():
    def side(speedup):
        return Side(tau=2.5, pass_tokens=5, v=1.2, draft=0.3, round_cost=1.5, speedup=speedup)
    assert compare_sides(side(1.05), side(1.0), 3, None).verdict == "tree paid"      # the even band alone
    within = compare_sides(side(1.05), side(1.0), 3, None, (0.9, 1.2))
    assert within.verdict == "about even" and within.interval == (0.9, 1.2)
    assert compare_sides(side(0.8), side(1.0), 3, None, (0.7, 0.9)).verdict == "chain paid"
