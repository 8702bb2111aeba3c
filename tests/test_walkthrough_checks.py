"""The teacher's walkthrough's checks, aimed both ways: a Race tab read as one record passes, and each
defect issue 60 found (two values for one symbol, a verdict against its own lanes, a note that hides what
it assumes or advises a losing k) fails. What the browser would read is written out here; the script
itself (scripts/walkthrough.py --teacher) drives Chromium and is run by hand.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "walkthrough_teacher", Path(__file__).resolve().parent.parent / "scripts" / "walkthrough_teacher.py")
teacher = sys.modules.setdefault("walkthrough_teacher", importlib.util.module_from_spec(_SPEC))
_SPEC.loader.exec_module(teacher)        # registered first: its dataclasses look their module up

RACE = teacher.Race("bundled-greedy-k3", "bundled", 0.0, 3)
HEADLINE = "▲ Faster: Same text, 20 target passes instead of 56: 1.62× the speed."
WHY = ("Why: The draft guessed right 6 times in 10; each round cost 1.0 plain steps and gave 2.8 tokens, so "
       "speculation ran 1.62x. In the formula: the target accepted 61% of the drafts it judged, so each target "
       "pass gave 2.80 tokens while a round of k = 3 drafts cost 1.72 plain steps (3 draft steps at c = 0.046 "
       "each, then a verify pass at v = 1.81); at these prices speculation pays above a = 0.40.")


def seen(**changes) -> dict:
    """A finished greedy race as the script reads it: every figure one value, the verdict its lanes'."""
    base = {
        "text": f"{HEADLINE}\n{WHY}\nacceptance rate\n0.61\ntokens per pass\n2.80\nmeasured speedup\n1.62×\n"
                "a = 0.61 c = 0.046 v = 1.81 break-even a = 0.40 theory = 1.63×\n"
                "Typical here at k = 3, across races (a prediction for the next one): a draft step 0.310 plain "
                "steps (3 timings), a verify pass 2.60 plain steps (3 timings).",
        "tips": ["theory speedup: S = E / (k·c + v): c = one draft step", "E / (k·c + v): k = 3, c = 0.046, v = 1.81"],
        "headline": HEADLINE, "why": WHY, "ran": "Ran: bundled: k = 3, greedy, 56 new tokens at most",
        "verdict": "faster", "box_verdict": "faster", "same_text": "1", "speedup": "1.6213",
        "figs": ["a = 0.61", "c = 0.046", "v = 1.81", "break-even a = 0.40", "theory = 1.63×"],
        "strip": {"acceptance rate": "0.61", "tokens per pass": "2.80", "measured speedup": "1.62×"},
        "spec_meter": "Speculative decoding ✓ max tokens\n3.00 s 56 tokens 18.7 tok/s 20 rounds",
        "base_meter": "Plain target decoding ✓ max tokens\n4.86 s 56 tokens 11.5 tok/s", "repeat": None, "error": "",
        "k_note": "k = 3 suits this machine (a prediction): typical here, across 4 races and the timing at load, a "
                  "draft step costs 0.05; assuming the draft's held-out acceptance a = 0.60, the formula expects 1.40x.",
        "explain": "Bundled, typical here (across 4 races and the timing at load; a prediction, not one race's "
                   "figures): a = 0.60 assumed (its draft's held-out acceptance), c 0.05, at k = 3, the k advised."}
    return {**base, **changes}


def test_a_race_read_as_one_record_passes():
    assert teacher.check(seen(), RACE) == []


@pytest.mark.parametrize("changes, says", [
    ({"text": seen()["text"] + " the pair's cost model: c = 0.014, v = 0.36"}, "c shows 2 values"),
    ({"text": seen()["text"] + " so speculation ran 1.19x"}, "1.19x in words"),
    ({"text": seen()["text"] + " each target pass gave 3.40 tokens"}, "tokens per pass is 2.80 on the strip"),
    ({"text": seen()["text"].replace("guessed right 6", "guessed right 8")}, "a (in tenths)"),
    ({"verdict": "about even", "box_verdict": "about even", "same_text": None,
      "headline": "≈ About even: Same text: 1.81× the speed.", "speedup": "1.81",
      "text": "≈ About even: 1.81× the speed."}, "'about even' beside the measured 1.81x"),
    ({"verdict": "faster", "speedup": "0.98", "same_text": None, "text": "0.98× the speed"}, "'faster' beside"),
    ({"base_meter": "Plain target decoding\n2.00 s 56 tokens"}, "the meters' clocks give 0.67x"),
    ({"box_verdict": "about even"}, "the ledger box about even"),
    ({"k_note": "k = 10 suits this machine (a prediction): assuming the draft's held-out acceptance a = 0.60, "
                "the formula expects 0.99x."}, "advises a k it expects to lose"),
    ({"k_note": "k = 3 suits this machine; the formula expects 1.40x."}, "does not say what it assumes"),
    ({"explain": ""}, "the Explain is empty"),
    ({"explain": "Bundled, typical here: a = 0.51 assumed (its draft's held-out acceptance)"},
     "does not say this race accepted 0.61"),
    ({"ran": "Ran: bundled: k = 4, greedy"}, "other settings than asked"),
    ({"phone": {"text": "▲ Faster: …instead of 128: 1.0", "cut": True}}, "phone: the headline's figure"),
])
def test_each_defect_the_issue_found_fails(changes, says):
    found = teacher.check(seen(**changes), RACE)
    assert any(says in f for f in found), found


def test_a_differing_race_named_by_the_notes_passes():
    note = ("k = 3 suits this machine (a prediction): assuming the draft's held-out acceptance a = 0.51, the "
            "formula expects 1.20x. The latest race accepted a = 0.61, above the draft's usual 0.51: with that a "
            "the best k may differ.")
    assert teacher.check(seen(k_note=note), RACE) == []
    assert teacher.check(seen(k_note="k = 3 is this pair's own setting: not measured on this machine yet."), RACE) == []


def test_race_3x_is_judged_by_its_median_and_range():
    rep = {"median": "1.5000", "low": "1.3000", "high": "1.7000", "verdict": "faster"}
    head = "▲ Faster: median 1.50× the plain speed over 3 races (range 1.30–1.70×). The panes show the first " \
           "race: Same text, 20 target passes instead of 56: 1.62× the speed."
    race3 = teacher.Race("bundled-greedy-k3-race3x", "bundled", 0.0, 3, repeat=True)
    assert teacher.check(seen(repeat=rep, headline=head), race3) == []
    wide = {**rep, "low": "0.9000"}          # a range that holds 1.0 cannot be "faster"
    assert any("Race 3x's median" in f for f in teacher.check(seen(repeat=wide, headline=head), race3))
    first = "▲ Faster: Same text, 20 target passes instead of 56: 1.62× the speed."    # the first race headlined
    assert any("not the median" in f for f in teacher.check(seen(repeat=rep, headline=first), race3))


def test_the_matrix_covers_what_the_issue_asks():
    races = teacher.MATRIX
    assert {r.pair for r in races} == {"bundled", "smollm2"} and {r.temperature for r in races} == {0.0, 0.8}
    assert any(r.repeat for r in races) and any(not r.repeat for r in races) and any(r.tree for r in races)
    assert {3, 6} <= {r.k for r in races if not r.tree} and len({r.name for r in races}) == len(races)
