"""The token classifier (engine/analysis/token_kinds.py) on hand-made cases, with the bundled tokenizer and
SmolLM2's (skipped when that model was never fetched), and its fold over a run's events."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as E

import pytest
from transformers import AutoTokenizer

from specviz.engine.analysis.token_kinds import KINDS, KindTally, acceptance_by_kind, classify, token_text
from specviz.paths import MODELS

SMOLLM2 = Path.home() / ".cache/specviz/models/HuggingFaceTB--SmolLM2-135M-Instruct"


@pytest.mark.parametrize("text, prev, kind", [
    ("\n    ", "):", "whitespace"), (" ", "the", "whitespace"),
    (" 4", "+", "number"), ("2", " 4", "number"), ("3.14", "=", "number"),
    ("def", None, "keyword"), (" return", "\n    ", "keyword"), (" const", ";", "keyword"), (" in", " x", "keyword"),
    ("for", " in", "word_continuation"),                       # ' in' + 'for' + 'mation': not a keyword
    ("_", "foo", "identifier"), ("foo_bar", " ", "identifier"), ("getValue", ".", "identifier"),
    ("get", ".", "identifier"), ("Value", "get", "identifier"), ("bar", "_", "identifier"),
    ("(", "print", "punctuation"), ("):", "x", "punctuation"), (" +", ")", "punctuation"), (" #", " 1", "punctuation"),
    (" the", "said", "word_start"), ("The", None, "word_start"), ("x", "(", "word_start"), ("qui", " ", "word_start"),
    ("ck", " qui", "word_continuation"), ("ish", "brown", "word_continuation"), ("n", "row", "word_continuation"),
    ("'s", "it", "other"), ("ing,", "go", "other"), ("", "a", "other"), ("\ufffd", "a", "other"),
])
def test_classify_hand_made(text, prev, kind):
    assert kind in KINDS
    assert classify(text, prev) == kind


CODE = "def foo_bar(x):\n    return self.getValue() + 42 # the quick brownish fox"
# token text -> kind, for the tokens either tokenizer makes of CODE (each checked where it occurs)
EXPECTED = {"def": "keyword", " return": "keyword", "\n   ": "whitespace", "):": "punctuation", "(": "punctuation",
            "_": "identifier", "bar": "identifier", "get": "identifier", "Value": "identifier", "()": "punctuation",
            " +": "punctuation", " 4": "number", "4": "number", "2": "number", " #": "punctuation", " ": "whitespace",
            " the": "word_start", " quick": "word_start", " fox": "word_start", " self": "word_start",
            " brownish": "word_start", "x": "word_start", ".": "punctuation", "ck": "word_continuation",
            "row": "word_continuation", "ish": "word_continuation", "ox": "word_continuation"}


def check_tokenizer(tokenizer) -> int:
    ids = tokenizer.encode(CODE, add_special_tokens=False)
    texts = [token_text(tokenizer, i) for i in ids]
    assert "".join(texts) == CODE
    checked, prev = 0, None
    for text in texts:
        if text in EXPECTED:
            assert classify(text, prev) == EXPECTED[text], (text, prev)
            checked += 1
        prev = text
    return checked


def test_bundled_tokenizer():
    assert check_tokenizer(AutoTokenizer.from_pretrained(MODELS / "target")) >= 20


@pytest.mark.skipif(not SMOLLM2.is_dir(), reason="SmolLM2 not fetched (python -m specviz fetch)")
def test_smollm2_tokenizer():
    tokenizer = AutoTokenizer.from_pretrained(SMOLLM2)
    assert check_tokenizer(tokenizer) >= 20
    assert classify(token_text(tokenizer, tokenizer.eos_token_id), None) == "other"


def test_sentencepiece_marker_counts_as_a_leading_space():
    vocab = {0: "▁foo", 1: "bar"}
    fake = E(decode=lambda ids, **kw: vocab[ids[0]].lstrip("▁"), convert_ids_to_tokens=lambda i: vocab[i],
             all_special_ids=[])
    assert token_text(fake, 0) == " foo" and classify(token_text(fake, 0), "x") == "word_start"
    assert classify(token_text(fake, 1), " foo") == "word_continuation"


def test_fold_counts_drafted_judged_and_accepted_per_kind():
    events = [
        E(kind="drafted", round=1, token_ids=[1, 2, 3], pieces=[" return", " x", "_"], lane="spec"),
        E(kind="accepted", round=1, position=0, token_id=1, piece=" return", lane="spec"),
        E(kind="rejected", round=1, position=1, token_id=2, piece=" x", lane="spec"),
        E(kind="resampled", round=1, position=1, token_id=4, piece=" (", lane="spec"),
        E(kind="target_token", token_id=9, piece=" y", lane="base"),
        E(kind="drafted", round=2, token_ids=[5, 6], pieces=["a", "b"], lane="spec"),   # after ' (': word start
        E(kind="accepted", round=2, position=0, token_id=5, piece="a", lane="spec"),
        E(kind="accepted", round=2, position=1, token_id=6, piece="b", lane="spec"),
        E(kind="bonus", round=2, position=2, token_id=7, piece=")", lane="spec"),
    ]
    rows = {r["kind"]: r for r in acceptance_by_kind(events)}
    assert rows["keyword"] == {"kind": "keyword", "drafted": 1, "judged": 1, "accepted": 1, "acceptance_rate": 1.0,
                               "draft_acceptance_rate": 1.0}
    assert rows["word_start"]["drafted"] == 2 and rows["word_start"]["judged"] == 2
    assert rows["word_start"]["acceptance_rate"] == 0.5                # ' x' rejected, 'a' accepted
    assert rows["identifier"] == {"kind": "identifier", "drafted": 1, "judged": 0, "accepted": 0,
                                  "acceptance_rate": None, "draft_acceptance_rate": 0.0}   # '_' discarded unjudged
    assert rows["word_continuation"]["accepted"] == 1
    tally = KindTally()
    for e in events:
        tally.add(e)
    assert sum(tally.judged.values()) == 4 and sum(tally.accepted.values()) == 3
