"""The race's headline is true for the run: greedy lanes wrote the same text (said, with the passes),
sampled lanes are compared per token with their lengths and stop reasons, repetition is named."""
from specviz import SpecConfig, race
from specviz.engine.analysis.headline import REPEAT_N, headline, repeated_share
from specviz.engine.loop.events import Done
from specviz.engine.metrics.measures import LaneStats, LaneTally


def _dones(pair, **cfg):
    dones = {e.lane: e for e in race(pair, "hello", SpecConfig(k=3, max_new_tokens=16, **cfg)) if e.kind == "done"}
    return dones["spec"], dones["base"]


def test_a_greedy_race_says_same_text_and_the_passes(pair):
    spec, plain = _dones(pair, temperature=0.0)
    h = headline(spec, plain, greedy=True)
    assert h.same_text is True and not h.per_token
    assert h.line.startswith("Same text")
    assert f"{spec.stats.tally.rounds} target passes instead of {plain.stats.tally.tokens}" in h.line


def test_a_sampled_race_states_both_lengths_and_compares_per_token(pair):
    spec, plain = _dones(pair, temperature=1.0, seed=3)
    h = headline(spec, plain, greedy=False)
    assert h.per_token and "per token" in h.line
    assert f"{spec.stats.tally.tokens} tokens" in h.line and f"{plain.stats.tally.tokens} tokens" in h.line


def _done(ids, lane, stop="max_tokens", seconds=1.0, rounds=0):
    tally = LaneTally(tokens=len(ids), elapsed_s=seconds, rounds=rounds)
    return Done(text="", token_ids=ids, stop_reason=stop, stats=LaneStats(tally), lane=lane)


def test_greedy_lanes_that_differ_are_not_called_the_same_text():
    spec = _done([1, 2, 3, 4], "spec", rounds=2)
    plain = _done([1, 2, 9, 4], "base")
    h = headline(spec, plain, greedy=True)
    assert h.same_text is False and h.per_token and "token 3" in h.note


def test_different_lengths_and_stop_reasons_are_stated():
    spec = _done(list(range(128)), "spec", seconds=6.45, rounds=40)
    plain = _done(list(range(39)), "base", stop="eos", seconds=2.76)
    h = headline(spec, plain, greedy=False)
    assert "128 tokens in 6.45 s (reached the token budget)" in h.line
    assert "39 tokens in 2.76 s (ended its text)" in h.line


def test_a_stopped_race_claims_no_speed():
    h = headline(_done([1, 2], "spec", stop="cancelled", rounds=1), _done([1], "base"), greedy=True)
    assert h.line.startswith("Stopped") and "×" not in h.line


def test_repetition_is_the_share_an_ngram_lookup_would_guess():
    assert repeated_share(list(range(50))) == 0.0
    line = [7, 8, 9, 10, 11]
    ids = line * 10                                     # the same line again and again
    share = repeated_share(ids)
    # every token after the first line and the n-gram that starts its repeat is predictable
    assert share == (len(ids) - len(line) - REPEAT_N) / (len(ids) - REPEAT_N)
    spec = _done(ids, "spec", rounds=5)
    h = headline(spec, _done(ids, "base"), greedy=True)
    assert h.repeated_share > 0.5 and "repeats" in h.note
    assert "repeats" not in headline(_done(list(range(50)), "spec", rounds=5), _done(list(range(50)), "base"),
                                     greedy=True).note


def test_sampled_lanes_of_different_lengths_are_compared_over_the_same_tokens():
    """87 tokens that ended against 128 at the budget: the rates over different lengths are not like for
    like; the headline, the strip and the ledger compare each lane's time to the shorter lane's count."""
    from specviz.engine.analysis.stats import RunStats
    from specviz.engine.loop.events import TargetToken
    from specviz.engine.metrics.measures import compared_speedup, equal_length_speedup
    spec_times = [0.0] + [0.01 * i for i in range(1, 88)]             # 87 tokens, 0.87 s, then it ended
    # 128 tokens at the budget: 0.02 s each for the first 87, then 0.005 s each (a cheap tail, 1.945 s in all)
    base_times = [0.0] + [0.02 * i for i in range(1, 88)] + [1.74 + 0.005 * i for i in range(1, 42)]
    assert equal_length_speedup(spec_times, base_times) == (base_times[87] / spec_times[87], 87)
    spec_t, base_t = LaneTally(tokens=87, elapsed_s=0.87), LaneTally(tokens=128, elapsed_s=1.945)
    whole = (87 / 0.87) / (128 / 1.945)
    speedup, over = compared_speedup(spec_t, base_t, spec_times, base_times)
    assert over == 87 and abs(speedup - 2.0) < 1e-9 and abs(speedup - whole) > 1e-6    # not the whole lanes'
    stats = RunStats(k=3)
    for i, t in enumerate(base_times[1:]):
        stats.add(TargetToken(index=i, token_id=5, piece="a", p=0.5, t=t))
    stats.times["spec"], stats.tallies["spec"] = spec_times, spec_t
    assert stats.measured_speedup() == speedup                        # the strip's figure is the same one
    spec, plain = _done([1] * 87, "spec", "eos", 0.87, rounds=40), _done([2] * 128, "base", "max_tokens", 1.945)
    h = headline(spec, plain, greedy=False, compared=(speedup, over))
    assert "first 87 tokens" in h.line and "2.00× the plain rate" in h.line and "per token" not in h.line
    from specviz.engine.analysis.ledger import build
    assert build(spec_t, base_t, speedup=speedup).speedup == speedup


def test_equal_lengths_keep_the_whole_lanes_rate_ratio():
    from specviz.engine.metrics.measures import compared_speedup, lane_speedup
    spec_t, base_t = LaneTally(tokens=64, elapsed_s=1.0), LaneTally(tokens=64, elapsed_s=1.5)
    assert compared_speedup(spec_t, base_t, [0.0, 0.5], [0.0, 0.1]) == (lane_speedup(spec_t, base_t), None)
