"""The block rule seen: step mode draws each block round's joint test (which prefix, w, h, u), the
explanations say why a draft was kept or dropped with the round's numbers, the form offers the rule,
and a saved trace keeps the test (to_dict / from_dict)."""
import re

from specviz import SpecConfig, speculate
from specviz.app.request import FORM_FIELDS, RunRequest
from specviz.engine.analysis.explain import sentence, tooltip
from specviz.engine.loop.events import from_dict, to_dict
from specviz.view.block_view import block_html, block_sentence, kept_prefix
from specviz.view.tabs.step import _reveal_round

from .helpers import PROMPTS

CFG = dict(k=4, temperature=1.0, rule="block", max_new_tokens=40, seed=3)


def block_events(pair, **changes):
    return list(speculate(pair, PROMPTS[0], SpecConfig(**{**CFG, **changes})))


def test_step_mode_draws_the_joint_test_of_each_round(pair):
    records = [to_dict(e) for e in block_events(pair)]
    state = {"records": records, "next": 0, "html": "", "finished": False}
    seen = 0
    while not state["finished"]:
        _, explain, state = _reveal_round(state)
        if "block-test" not in explain:
            continue
        seen += 1
        kept = int(re.search(r'data-kept="(\d+)"', explain).group(1))
        rows = re.findall(r'<tr class="(block-\w+)">', explain)
        assert rows.count("block-pass") == 1 and rows.count("block-kept") == max(0, kept - 1)
        assert "joint test h" in explain and "block-sum" in explain
    assert seen > 3


def test_the_picture_and_sentence_name_the_prefix_kept():
    block = [(0.9, 0.5, 0.7), (0.4, 0.3, 0.1), (0.2, 0.2, 0.6)]        # (w, h, u): the 2nd passes, the 3rd not
    assert kept_prefix(block) == 2
    html = block_html(["a", "<b>", "c"], block)
    assert 'data-kept="2"' in html and "&lt;b&gt;" in html and "<b>" not in html      # model text escaped
    assert "keep the first 2 drafts" in html and "kept with the prefix above" in html
    assert "prefix of 2 drafts passed" in block_sentence(block)
    assert "none is kept" in block_sentence([(0.5, 0.1, 0.9)])
    assert "all kept" in block_sentence([(1.0, 1.0, 0.3)])


def test_verdicts_explain_the_joint_test(pair):
    events = block_events(pair)
    verdicts = [e for e in events if e.kind in ("accepted", "rejected")]
    past_a_miss = [e for e in verdicts if e.kind == "accepted" and e.u >= e.accept_prob]
    for e in verdicts:
        said = sentence(e)
        assert "w = " in said and "h = " in said
        assert (f"first {e.kept} draft" in said) if e.kept else "keeps none of its drafts" in said
        assert "joint test h" in tooltip(e)
    for e in past_a_miss:
        assert "a longer prefix passed" in sentence(e)
    corrections = [e for e in events if e.kind == "resampled"]
    assert corrections and all("w·p − q" in sentence(e) for e in corrections)
    # a saved trace keeps the round's joint test
    ends = [e for e in events if e.kind == "round_end"]
    assert all(from_dict(to_dict(e)).block == e.block for e in ends)


def test_greedy_block_is_the_argmax_match_and_the_form_offers_it(pair):
    greedy = block_events(pair, temperature=0.0)
    assert all(e.rule == "argmax" for e in greedy if e.kind in ("accepted", "rejected"))
    assert FORM_FIELDS[-1] == "rule" and RunRequest().rule == "exact"


def test_the_workshop_exercise_measures_both_temperatures(tiny_dirs):
    """Exercise 12 runs both rules at temperature 0 (identical counts: both are the argmax match) and 1
    (the same seeds), and answers from those counts."""
    from specviz.app.workshop import BLOCK_ANSWERS, BY_KEY
    from .helpers import tiny_app
    outcome = BY_KEY["block"].run(tiny_app(tiny_dirs))
    assert outcome.value in BLOCK_ANSWERS and outcome.value not in ("at T = 0 only", "at both")
    cold = re.search(r"at T = 0: ([\d.]+) token-wise, ([\d.]+) block", outcome.shown)
    assert cold and cold.group(1) == cold.group(2)
    hot = re.search(r"at T = 1: ([\d.]+) token-wise, ([\d.]+) block", outcome.shown)
    exact, block = float(hot.group(1)), float(hot.group(2))      # shown to 2 decimals
    assert block >= exact if outcome.value == "at T = 1 only" else block <= exact
    assert "exact then block" in outcome.ran
