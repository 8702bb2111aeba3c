"""The next round's draft launched before this round's events are built (engine/loop/ahead.py), proven on
the CPU with SPECVIZ_DRAFT_AHEAD=on: the order of the host's calls (every round but the first drafts
before the previous round's events exist); runs that are the drafting-after-events runs event for
event, timing aside (greedy, seeded sampling, trees, adaptive k, prompt lookup, the block rule, the
graph path's stand-in, EOS, a stop string, the token budget, Stop); greedy output equal to generate();
and the round's phases on the CPU stand-ins of CUDA's events: still one host read a round, every event
read after the device reached it, a draft made ahead charged to its own round."""
from __future__ import annotations

import threading
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

from specviz import SpecConfig, speculate
from specviz.engine import to_dict
from specviz.engine.loop import ahead, speculative
from specviz.errors import ConfigError
from specviz.runtime import graph_model, timing

from .helpers import N, PROMPTS, last, reference

# What the clock decides (seconds, timestamps, rates) and what timing chose (the lean draft's format).
CLOCKED = {"t", "elapsed_s", "draft_s", "verify_s", "target_s", "accept_s", "bookkeeping_s", "tokens_per_s",
           "capture_s", "draft_format_by"}


def untimed(record):
    """An event record (to_dict) without what the clock decides, nested stats included."""
    if isinstance(record, dict):
        return {k: untimed(v) for k, v in record.items() if k not in CLOCKED and not k.endswith("_s")}
    if isinstance(record, list):
        return [untimed(v) for v in record]
    return record


def run(pair, prompt, cfg, mode, monkeypatch, cancel=None):
    monkeypatch.setenv(ahead.ENV, mode)
    return list(speculate(pair, prompt, cfg, cancel=cancel))


@pytest.fixture
def calls(monkeypatch):
    """The host's order of 'draft launched' (a drafter's propose, with the length of the ids it drafts
    from) and 'events built' (commit_round, with the round and the length after it committed)."""
    log = []
    original_commit = speculative.commit_round

    def commit(out, proposal, v, r, *a, **kw):
        events = original_commit(out, proposal, v, r, *a, **kw)
        log.append(("events", r, len(out.ids)))
        return events
    monkeypatch.setattr(speculative, "commit_round", commit)
    original_propose = speculative.Rounds._propose
    original_ahead = speculative.Rounds._ahead

    def propose(self, ids, widths):
        log.append(("draft", len(ids)))
        return original_propose(self, ids, widths)

    def drafted_ahead(self, v):
        made = original_ahead(self, v)
        if made is not None:
            log.append(("draft", len(made.ids)))
        return made
    monkeypatch.setattr(speculative.Rounds, "_propose", propose)
    monkeypatch.setattr(speculative.Rounds, "_ahead", drafted_ahead)
    return log


def test_each_round_is_drafted_before_the_previous_rounds_events_are_built(pair, calls, monkeypatch):
    events = run(pair, PROMPTS[0], SpecConfig(k=4, max_new_tokens=N), "on", monkeypatch)
    drafted = [0] + [e.drafted for e in events if e.kind == "round_end"]     # drafted[r]: round r's drafts
    rounds = len(drafted) - 1
    lengths = [len(pair.tokenizer(PROMPTS[0])["input_ids"])] + [c[2] for c in calls if c[0] == "events"]
    expected = []
    for r in range(1, rounds + 1):
        if r == 1 or not drafted[r]:            # drafted in its own step: the first round, or one with no room to draft
            expected.append(("draft", lengths[r - 1]))
        if r < rounds and drafted[r + 1]:       # round r + 1 drafted from what round r commits, before r's events
            expected.append(("draft", lengths[r]))
        expected.append(("events", r, lengths[r]))
    assert calls == expected and lengths[-1] - lengths[0] == len(last(events).token_ids)
    assert sum(1 for r in range(2, rounds + 1) if drafted[r]) >= 3


def test_off_the_rounds_draft_after_the_previous_events(pair, calls, monkeypatch):
    last(run(pair, PROMPTS[0], SpecConfig(k=4, max_new_tokens=N), "off", monkeypatch))
    assert [c[0] for c in calls] == ["draft", "events"] * (len(calls) // 2)


def test_auto_drafts_ahead_on_cuda_only(monkeypatch):
    monkeypatch.delenv(ahead.ENV, raising=False)
    assert ahead.drafts_ahead(torch.device("cuda", 0)) and not ahead.drafts_ahead(torch.device("cpu"))
    monkeypatch.setenv(ahead.ENV, "on")
    assert ahead.drafts_ahead(torch.device("cpu"))
    monkeypatch.setenv(ahead.ENV, "off")
    assert not ahead.drafts_ahead(torch.device("cuda", 0))
    monkeypatch.setenv(ahead.ENV, "sometimes")
    with pytest.raises(ConfigError, match="SPECVIZ_DRAFT_AHEAD must be one of auto, on, off"):
        ahead.drafts_ahead(torch.device("cpu"))


CONFIGS = [
    SpecConfig(k=4, max_new_tokens=N),
    SpecConfig(k=3, max_new_tokens=N, temperature=1.0, seed=5),
    SpecConfig(k=5, max_new_tokens=N, temperature=0.8, top_p=0.9, seed=2, adaptive_k=True),
    SpecConfig(k=4, max_new_tokens=N, drafter="prompt_lookup"),
    SpecConfig(tree=(2, 2, 1), max_new_tokens=N, temperature=1.0, seed=7),
    SpecConfig(tree=(3, 2), tree_budget=4, max_new_tokens=N, temperature=1.0, seed=1),
    SpecConfig(k=4, max_new_tokens=N, temperature=1.0, seed=4, rule="block"),
    SpecConfig(k=4, max_new_tokens=N, temperature=1.0, seed=6, confidence_stop=0.3),
    SpecConfig(k=6, max_new_tokens=7),                 # the token budget cuts a round short
    SpecConfig(k=4, max_new_tokens=N, cuda_graphs=True),
    SpecConfig(k=3, max_new_tokens=N, temperature=1.0, seed=3, cuda_graphs=True),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.to_dict().items()
                                                                 if v != getattr(SpecConfig(), k)))
def test_drafting_ahead_changes_no_event(pair, pair_random, cfg, monkeypatch):
    """The drafter and the random generator see the same calls in the same order: the same tokens and
    the same events, draw for draw, as drafting after the events; timing aside."""
    for p, prompt in [(pair, prompt) for prompt in PROMPTS] + [(pair_random, PROMPTS[0])]:
        runs = []
        for mode in ("off", "on"):
            if cfg.cuda_graphs:                 # each run captures and checks afresh
                graph_model.POOL.forget(p.target)
                graph_model.POOL.forget(p.draft)
            runs.append([untimed(to_dict(e)) for e in run(p, prompt, cfg, mode, monkeypatch)])
        assert runs[1] == runs[0]


def test_greedy_output_with_drafting_ahead_equals_generate(pair, pair_random, monkeypatch):
    for p in (pair, pair_random):
        for prompt in PROMPTS:
            for k in (1, 3, 5):
                done = last(run(p, prompt, SpecConfig(k=k, max_new_tokens=N), "on", monkeypatch))
                assert done.token_ids == reference(p, prompt)


def test_eos_and_the_budget_end_the_run_with_no_draft_made_ahead(pair, calls, monkeypatch):
    """EOS among a round's tokens, or no room left for a draft: nothing is drafted ahead, so the run's
    draft forward passes are the drafting-after-events run's."""
    free = last(run(pair, PROMPTS[1], SpecConfig(k=4, max_new_tokens=N), "off", monkeypatch))
    eos = free.token_ids[9]
    cut = replace(pair, eos_token_ids=frozenset({eos}))
    for p, cfg in ((cut, SpecConfig(k=4, max_new_tokens=N)), (pair, SpecConfig(k=4, max_new_tokens=13))):
        after = last(run(p, PROMPTS[1], cfg, "off", monkeypatch))
        calls.clear()
        before = last(run(p, PROMPTS[1], cfg, "on", monkeypatch))
        assert before.stop_reason == after.stop_reason in ("eos", "max_tokens")
        assert before.token_ids == after.token_ids
        assert before.stats.draft_forwards == after.stats.draft_forwards
        assert calls[-1][0] == "events"                          # the last round drafted nothing ahead


def test_a_stop_string_or_stop_leaves_one_draft_unjudged_and_nothing_else(pair, monkeypatch):
    """What no round can foresee (a stop string its tokens complete, Stop pressed while its events are
    consumed) ends the run after a draft was made ahead: the same events, one round's draft passes more."""
    free = last(run(pair, PROMPTS[0], SpecConfig(k=4, max_new_tokens=N), "off", monkeypatch))
    cfg = SpecConfig(k=4, max_new_tokens=N, stop_strings=(free.text[10:13],))
    after, before = (run(pair, PROMPTS[0], cfg, mode, monkeypatch) for mode in ("off", "on"))
    assert last(before).stop_reason == "stop_string"
    assert [untimed(to_dict(e)) for e in before[:-1]] == [untimed(to_dict(e)) for e in after[:-1]]
    extra = last(before).stats.draft_forwards - last(after).stats.draft_forwards
    assert 0 <= extra <= cfg.k

    def stopped(mode):
        cancel = threading.Event()
        monkeypatch.setenv(ahead.ENV, mode)
        events = []
        for event in speculate(pair, PROMPTS[0], SpecConfig(k=4, max_new_tokens=N), cancel=cancel):
            events.append(event)
            if event.kind == "round_end" and event.round == 2:
                cancel.set()                    # Stop, pressed while the page folds round 2
        return events
    after, before = stopped("off"), stopped("on")
    assert last(before).stop_reason == last(after).stop_reason == "cancelled"
    assert [untimed(to_dict(e)) for e in before[:-1]] == [untimed(to_dict(e)) for e in after[:-1]]
    assert last(before).stats.draft_forwards - last(after).stats.draft_forwards == 4   # round 3's draft, unjudged


def test_a_paused_phase_counts_neither_the_pause_nor_a_stretch_before_a_resume(monkeypatch):
    """PhaseMarks on the host's clock: pause..resume is left out of the running phase, and a resume
    opens the phase after a mark without counting the stretch before it."""
    now = iter([0.0, 1.0, 3.0, 10.0, 10.5, 12.0, 20.0])
    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=lambda: next(now)))
    marks = timing.PhaseMarks(torch.device("cpu"))     # 0.0
    marks.mark()               # 1.0: draft 1 s
    marks.resume()             # 3.0: the 2 s before belong to no phase
    marks.mark()               # 10.0: target 7 s
    marks.pause()              # 10.5
    marks.resume()             # 12.0: 1.5 s left out
    marks.mark()               # 20.0: 0.5 + 8 = 8.5 s
    assert marks.seconds() == [1.0, 7.0, 8.5]
