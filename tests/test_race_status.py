"""The finished race's status tells the truth at a glance: the verdict with the race's headline (greedy:
the same text in fewer target passes; sampled: each lane's length and stop reason, compared per token;
repetition named), read by scripts from data attributes, and the ledger's why right under it."""
import html
import re

import pytest

from specviz.engine.analysis.ledger import build
from specviz.engine.loop.events import Done
from specviz.engine.metrics.measures import LaneStats, LaneTally
from specviz.view.handlers import _summary, run_race, why
from specviz.view.race_view import RaceView
from tests.helpers import ADD, app_with, form, tiny_preset

FORM = form(prompt=ADD, k=3, temperature=0.0, max_new_tokens=24)


@pytest.fixture(scope="module")
def app(tiny_dirs):
    return app_with({"tiny": tiny_preset(tiny_dirs, k=3, examples=("x",))}, max_new_tokens=100)


def last(app, **changes):
    return list(run_race(app, **{**FORM, **changes}))[-1]


def test_a_greedy_race_says_same_text_in_fewer_passes_and_why(app, quiet_machine):
    end = last(app)
    status = end.status
    assert 'data-same-text="1"' in status and 'data-per-token="0"' in status
    passes = re.search(r"Same text, (\d+) target passes instead of (\d+): \d+\.\d\d× the speed", html.unescape(status))
    assert passes and int(passes.group(1)) < int(passes.group(2))
    # the why sits in the status, right under the headline, without repeating the verdict's word
    why_text = html.unescape(re.search(r'<p class="why" id="race-why"[^>]*>(.*?)</p>', status).group(1))
    assert why_text.startswith("<b>Why:</b> ") and not re.match(r"<b>Why:</b> (Faster|Slower|About even):", why_text)
    # ... and only there: the ledger box below keeps where the time went
    assert why_text.removeprefix("<b>Why:</b> ")[:40] not in html.unescape(end.ledger)
    assert "Where each lane's time went" in html.unescape(end.ledger)


def test_a_sampled_race_states_both_lanes_and_compares_per_token(app, quiet_machine):
    status = html.unescape(last(app, temperature=1.0, seed=5).status)
    assert 'data-per-token="1"' in status and "compared per token" in status
    assert len(re.findall(r"\d+ tokens in \d+\.\d\d s \(", status)) == 2       # each lane's length and stop reason


def _done(ids, lane, tally):
    return Done(text="", token_ids=ids, stop_reason="max_tokens", stats=LaneStats(tally), lane=lane)


def test_a_repetitive_text_is_named_and_marked():
    spec_t = LaneTally(rounds=10, drafted=40, accepted=38, rejected=2, tokens=50, elapsed_s=0.5)
    base_t = LaneTally(tokens=50, elapsed_s=2.0)
    view = RaceView(4)
    ids = [7, 8, 9, 10, 11] * 10
    view.dones = {"spec": _done(ids, "spec", spec_t), "base": _done(ids, "base", base_t)}
    status = _summary(view, build(spec_t, base_t), None, True, "torch.float32")
    assert 'data-repetitive="1"' in status and "repeats what it already wrote" in status
    varied = list(range(50))
    view.dones = {"spec": _done(varied, "spec", spec_t), "base": _done(varied, "base", base_t)}
    assert "data-repetitive" not in _summary(view, build(spec_t, base_t), None, True, "torch.float32")


def test_the_why_opens_with_a_plain_sentence_and_never_the_verdicts_word():
    slow = build(LaneTally(rounds=10, drafted=40, accepted=4, rejected=9, tokens=14, draft_s=0.8, verify_s=1.3,
                           target_s=1.2, elapsed_s=2.4), LaneTally(tokens=22, target_s=1.5, elapsed_s=1.7))
    assert slow.verdict == "slower" and why(slow) == slow.cause
    assert why(slow).startswith("The draft guessed right 3 times in 10; each round cost ")
    assert "The main cause: " in why(slow) and not re.match(r"(Faster|Slower|About even):", why(slow))
    empty = build(LaneTally(), LaneTally())
    assert why(empty) == empty.cause                      # "Not enough of a race to tell ..." stays whole


def test_a_busy_machine_is_said_in_a_students_words_and_a_clear_win_stays_faster(app, busy_machine):
    status = html.unescape(last(app).status)
    assert "This machine was busy (other programs used 90% of its CPU): both lanes slowed" in status
    assert "repeat the race for a firmer figure" in status
