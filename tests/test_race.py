"""The race: two lanes interleaved, each exact and each on its own clock."""
import threading
import time

from specviz import SpecConfig, decode_baseline, race, speculate

from .helpers import PROMPTS


def dones(events):
    return {e.lane: e for e in events if e.kind == "done"}


def test_lanes_match_solo_runs(pair):
    cfg = SpecConfig(k=4, max_new_tokens=50)
    for prompt in PROMPTS:
        both = dones(race(pair, prompt, cfg))
        assert both["spec"].token_ids == list(speculate(pair, prompt, cfg))[-1].token_ids
        assert both["base"].token_ids == list(decode_baseline(pair, prompt, cfg))[-1].token_ids
        assert both["spec"].token_ids == both["base"].token_ids     # greedy: identical output


def test_sampled_lanes_match_solo_runs(pair):
    cfg = SpecConfig(k=3, max_new_tokens=40, temperature=1.0, seed=9)
    both = dones(race(pair, PROMPTS[0], cfg))
    assert both["spec"].token_ids == list(speculate(pair, PROMPTS[0], cfg))[-1].token_ids
    assert both["base"].token_ids == list(decode_baseline(pair, PROMPTS[0], cfg))[-1].token_ids


def test_each_clock_counts_only_its_own_compute(pair):
    """The consumer sleeps after every event; no lane clock may include that time."""
    start, slept = time.perf_counter(), 0.0
    events = []
    for event in race(pair, PROMPTS[0], SpecConfig(k=4, max_new_tokens=40)):
        events.append(event)
        time.sleep(0.004)
        slept += 0.004
    wall = time.perf_counter() - start
    both = dones(events)
    assert both["spec"].t + both["base"].t <= wall - slept


def test_scheduler_advances_the_lane_that_is_behind(pair):
    clocks = {"spec": 0.0, "base": 0.0}
    finished = set()
    for event in race(pair, PROMPTS[2], SpecConfig(k=4, max_new_tokens=40)):
        other = "base" if event.lane == "spec" else "spec"
        # The lane moved was not ahead of the other (unless the other had finished).
        assert other in finished or clocks[event.lane] <= clocks[other]
        clocks[event.lane] = event.t
        if event.kind == "done":
            finished.add(event.lane)
    assert finished == {"spec", "base"}


def test_cancel_stops_both_lanes(pair):
    cancel = threading.Event()
    seen = []
    for event in race(pair, PROMPTS[0], SpecConfig(k=2, max_new_tokens=200), cancel=cancel):
        seen.append(event)
        if len(seen) == 10:
            cancel.set()
    both = dones(seen)
    assert both["spec"].stop_reason == both["base"].stop_reason == "cancelled"
    assert len(seen) < 40     # stopped within a round of each lane, not after 200 tokens
