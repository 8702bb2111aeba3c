"""Acceptance by kind of token: which drafts does the draft model get right?

A drafted token is classified by its text, decoded on its own with the target's tokenizer, and
by the text just before it (the previous draft of its round, or the last output token). The
leading-space marker of BPE tokenizers ('Ġ' in GPT-2 style, '▁' in Llama/SentencePiece) counts
as a leading space. The first matching kind wins, in this order:

    whitespace          only spaces, tabs, newlines            '\\n    ', ' '
    number              digits, with . or , between digits     ' 4', '2', '3.14'
    keyword             a Python, JavaScript or C keyword, leading space ignored, not glued to a letter
                        or digit before it (KEYWORDS below; lexical, not contextual: the English ' in'
                        counts as a keyword too, the 'for' of ' in'+'for'+'mation' does not)
                                                               'def', ' return', ' const'
    identifier          letters, digits and '_' that contain '_', or are camelCase, or continue a
                        name with no space: right after '.', '_' or (capitalized) a lowercase letter
                                                               '_', 'foo_bar', 'getValue', 'get' in
                                                               'self.get', 'Value' in 'getValue'
    punctuation         no letter or digit (symbols, brackets, operators; spaces allowed)
                                                               '(', '):', ' +', ' #'
    word_start          a letter, then letters/digits, with a leading space, or at the very start,
                        or after whitespace or punctuation     ' the', ' quick', 'x' in '(x'
    word_continuation   the same shape glued to a letter or digit before it
                                                               'ck' in ' quick', 'ish' in ' brownish'
    other               anything else: letters mixed with punctuation ("'s", 'ing,'), special tokens,
                        a lone piece of a multi-byte character (decodes to '' or U+FFFD)

`acceptance_by_kind(events, tokenizer)` folds a run's events (spec lane) into counts of drafted,
judged (accepted + rejected) and accepted drafts per kind, and the acceptance of each kind with
engine/metrics/measures.py's own definitions: a = accepted / judged, a_d = accepted / drafted.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from ..metrics import measures

KINDS = ("whitespace", "number", "keyword", "identifier", "punctuation", "word_start", "word_continuation", "other")

PYTHON = ("False None True and as assert async await break class continue def del elif else except finally for "
          "from global if import in is lambda nonlocal not or pass raise return try while with yield")
JAVASCRIPT = ("var let const function return if else for while do switch case default break continue new this "
              "typeof instanceof void delete throw try catch finally class extends super import export from async "
              "await yield null undefined true false of in")
C = ("auto break case char const continue default do double else enum extern float for goto if int long register "
     "return short signed sizeof static struct switch typedef union unsigned void volatile while include define")
KEYWORDS = frozenset((PYTHON + " " + JAVASCRIPT + " " + C).split())

SPACE_MARKERS = ("Ġ", "▁")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NAME = re.compile(r"\w+")
_WORD = re.compile(r"[^\W\d_][^\W_]*")        # a letter, then letters or digits


def classify(text: str, prev: str | None = None) -> str:
    """The kind of a token whose own text is `text`, after the text `prev` (None: nothing before)."""
    if not text or "\ufffd" in text:
        return "other"
    if text.isspace():
        return "whitespace"
    core, spaced = text.strip(), text[0].isspace()
    glued_to = "" if spaced or not prev else prev[-1]
    if _NUMBER.fullmatch(core):
        return "number"
    if core in KEYWORDS and not glued_to.isalnum():
        return "keyword"
    if _NAME.fullmatch(core) and ("_" in core or re.search(r"[a-z][A-Z]", core) or glued_to in (".", "_")
                                  or (core[0].isupper() and glued_to.islower())):
        return "identifier"
    if not any(ch.isalnum() or ch == "_" for ch in core):
        return "punctuation"
    if _WORD.fullmatch(core):
        return "word_continuation" if glued_to.isalnum() else "word_start"
    return "other"


def token_text(tokenizer, token_id: int) -> str:
    """A token decoded on its own, its leading-space marker ('Ġ', '▁') kept as a space."""
    text = tokenizer.decode([token_id], clean_up_tokenization_spaces=False)
    if token_id in getattr(tokenizer, "all_special_ids", ()):
        return "\ufffd" + text               # special tokens are 'other'
    raw = tokenizer.convert_ids_to_tokens(token_id) or ""
    if raw.startswith(SPACE_MARKERS) and not text[:1].isspace():
        text = " " + text
    return text


@dataclass
class KindTally:
    """Drafted, judged and accepted drafts per kind, folded from one lane's events in order."""
    tokenizer: object = None                    # None: use the pieces the events carry
    lane: str = "spec"
    drafted: Counter = field(default_factory=Counter)
    judged: Counter = field(default_factory=Counter)
    accepted: Counter = field(default_factory=Counter)
    last_output: str | None = None              # text of the latest output token with text
    _kinds: dict = field(default_factory=dict)  # (round, position) -> kind of the draft there

    def text(self, token_id: int, piece: str) -> str:
        return token_text(self.tokenizer, token_id) if self.tokenizer is not None else piece

    def add(self, event) -> None:
        if getattr(event, "lane", self.lane) != self.lane:
            return
        kind = event.kind
        if kind == "drafted":
            prev = self.last_output
            for pos, (tid, piece) in enumerate(zip(event.token_ids, event.pieces)):
                text = self.text(tid, piece)
                self._kinds[(event.round, pos)] = k = classify(text, prev)
                self.drafted[k] += 1
                prev = text or prev
        elif kind in ("accepted", "rejected"):
            k = self._kinds.get((event.round, event.position)) or classify(self.text(event.token_id, event.piece),
                                                                           self.last_output)
            self.judged[k] += 1
            self.accepted[k] += kind == "accepted"
        if kind in ("accepted", "resampled", "bonus") and event.piece:
            self.last_output = event.piece

    def acceptance(self, kind: str) -> dict:
        """The counts of one kind and its a = accepted / judged and a_d = accepted / drafted (measures.py)."""
        a, j, d = self.accepted[kind], self.judged[kind], self.drafted[kind]
        tally = measures.LaneTally(accepted=a, rejected=j - a, drafted=d)
        return {"kind": kind, "drafted": d, "judged": j, "accepted": a, "acceptance_rate": measures.acceptance_rate(tally),
                "draft_acceptance_rate": measures.draft_acceptance_rate(tally)}

    def table(self) -> list[dict]:
        """One row per kind that was drafted or judged, in KINDS order."""
        return [self.acceptance(k) for k in KINDS if self.drafted[k] or self.judged[k]]


def acceptance_by_kind(events: Iterable, tokenizer=None, lane: str = "spec") -> list[dict]:
    """A run's judged drafts by kind: rows of {kind, drafted, judged, accepted, acceptance_rate,
    draft_acceptance_rate}. tokenizer: the target's (None: the pieces the events carry)."""
    tally = KindTally(tokenizer=tokenizer, lane=lane)
    for event in events:
        tally.add(event)
    return tally.table()
