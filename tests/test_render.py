"""Token HTML: escaped, classes from a fixed set, append-only, text preserved."""
import html
import json
import re
from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from specviz import SpecConfig, race
from specviz.engine.loop.events import Accepted, Bonus, Drafted, Rejected, Resampled, TargetToken
from specviz.view.race_view import RaceView
from specviz.view.render import KINDS, clean, fragment, token_span

ALLOWED_CLASSES = {"tok", "tok-accepted", "tok-rejected", "tok-resampled", "tok-bonus", "tok-target", "round-mark",
                   "ws", "nl"}


class Collector(HTMLParser):
    """Parses rendered HTML: every tag and attribute, and the visible text."""
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.attrs, self.text = [], [], []
        self.by_kind: list[tuple[str | None, str]] = []   # (data-kind of the enclosing span, text)
        self._open: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.append(dict(attrs))
        self._open.append(dict(attrs).get("data-kind"))

    def handle_endtag(self, tag):
        self._open.pop()

    def handle_data(self, data):
        self.text.append(data)
        self.by_kind.append((self._open[-1] if self._open else None, data))


def parse(markup: str) -> Collector:
    c = Collector()
    c.feed(markup)
    c.close()
    return c


def events_for(piece: str):
    yield Drafted(round=1, token_ids=[5, 6], pieces=[piece, piece], q=[0.5, 0.4])
    yield Accepted(round=1, position=0, token_id=5, piece=piece, p=0.3, q=0.5, accept_prob=0.6, u=0.2, rule="ratio", index=0)
    yield Rejected(round=1, position=1, token_id=6, piece=piece, p=0.1, q=0.4, accept_prob=0.25, u=0.9, rule="ratio", discarded=0)
    yield Resampled(round=1, position=1, token_id=7, piece=piece, prob=0.7, p=0.5, top_residual=[(7, piece, 0.7)], index=1)
    yield Bonus(round=2, position=2, token_id=8, piece=piece, p=0.9, index=2)
    yield TargetToken(index=0, token_id=9, piece=piece, p=0.4)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_is_escaped_and_visible_text_is_preserved(text):
    for event in events_for(text):
        markup = fragment(event)
        doc = parse(markup)
        # Only our own span tags, with only our own attributes and classes.
        assert set(doc.tags) == {"span"}
        for attrs in doc.attrs:
            assert set(attrs) <= {"class", "data-kind", "data-round", "data-tip", "data-show", "tabindex"}
            assert set(attrs["class"].split()) <= ALLOWED_CLASSES
            assert attrs.get("data-kind", "accepted") in {v[0] for v in KINDS.values()}
        expected = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        if event.kind in ("accepted", "resampled", "bonus", "target_token"):
            assert "".join(doc.text) == expected


def test_injection_payloads_stay_text():
    for payload in ['<img src=x onerror=alert(1)>', '"><script>alert(1)</script>', "' onmouseover='alert(1)",
                    "</span><b>x</b>", "&lt;already&gt;", "\ud800broken"]:
        markup = token_span(Accepted(round=1, position=0, token_id=1, piece=payload, p=0.5, q=0.5, accept_prob=1.0, u=0.1, rule="ratio", index=0))
        assert "<img" not in markup and "<script" not in markup and "<b>" not in markup
        assert markup.count("<span") == markup.count("</span>") and set(parse(markup).tags) == {"span"}
        assert "".join(parse(markup).text) == html.unescape(clean(payload))    # whitespace runs in .ws spans


def test_tooltip_carries_the_numbers():
    span = token_span(Rejected(round=3, position=1, token_id=6, piece="x", p=0.1, q=0.4, accept_prob=0.25, u=0.9, rule="ratio", discarded=2))
    title = html.unescape(re.search(r'data-tip="([^"]*)"', span).group(1))
    assert "p (target) = 0.100" in title and "q (draft) = 0.400" in title
    assert "min(1, p/q) = 0.250" in title and "u = 0.900" in title and "2 later drafts discarded" in title
    assert title.startswith("'x'  id 6\n") and 'tabindex="0"' in span
    assert 'data-round="3"' in span and 'data-kind="rejected"' in span


def test_a_greedy_correction_is_not_called_a_residual_draw():
    """Greedy: the correction is the target's argmax and the event's list is p's top, so the tooltip says so
    (it once read "drawn from norm(max(0, p − q))" and listed the rejected draft as a residual candidate)."""
    from specviz.engine.loop.events import Resampled
    from specviz.engine.analysis.explain import tooltip
    top = [(5, "·isinstance", 0.449), (6, "·n", 0.449)]
    greedy = tooltip(Resampled(round=4, position=1, token_id=5, piece="·isinstance", prob=0.449, p=0.449, top_residual=top))
    assert "its own most likely token" in greedy and "target's top: '·isinstance' 0.45" in greedy
    assert "norm(max" not in greedy and "residual" not in greedy
    sampled = tooltip(Resampled(round=4, position=1, token_id=5, piece="a", prob=0.7, p=0.3, top_residual=[(5, "a", 0.7)]))
    assert "drawn from norm(max(0, p − q))" in sampled and "residual probability = 0.700" in sampled


def test_tiny_probabilities_keep_two_significant_digits():
    """A rejected draft read "p (target) = 0.000  q (draft) = 0.001  min(1, p/q) = 0.043": p/q of two
    numbers printed as 0 and 0.001 cannot be 0.043. Below 0.01 a probability keeps two significant digits."""
    from specviz.engine.loop.events import Rejected
    from specviz.engine.analysis.explain import tooltip
    tip = tooltip(Rejected(round=1, position=0, token_id=3, piece="x", p=0.0000432, q=0.001004, accept_prob=0.043,
                           u=0.5, rule="ratio", discarded=0))
    assert "p (target) = 0.000043   q (draft) = 0.0010" in tip and "min(1, p/q) = 0.043" in tip
    zero = tooltip(Rejected(round=1, position=0, token_id=3, piece="x", p=0.0, q=0.25, accept_prob=0.0, u=0.5,
                            rule="ratio", discarded=0))
    assert "p (target) = 0.000   q (draft) = 0.250" in zero


def test_a_near_tie_between_a_rejected_draft_and_its_correction_is_said():
    """Step mode read "not the target's most likely token (p = 0.449): rejected" then "its own top choice
    (p = 0.449)": a contradiction to the eye. Near-ties get the digits that separate them, exact ties the rule."""
    from specviz.engine.analysis.explain import tie_note
    def pair(p_rejected, p_top, rule="argmax"):
        return (Rejected(round=4, position=1, token_id=6, piece="·n", p=p_rejected, q=0.9, accept_prob=0.0, u=None,
                         rule=rule, discarded=0),
                Resampled(round=4, position=1, token_id=5, piece="·isinstance", prob=p_top, p=p_top,
                          top_residual=[(5, "·isinstance", p_top), (6, "·n", p_rejected)]))
    assert tie_note(*pair(0.44912, 0.44934)) == (" The two are nearly tied: p = 0.4493 against 0.4491, "
                                                 "and greedy keeps the larger.")
    assert "exactly tied (p = 0.449000 each)" in tie_note(*pair(0.449, 0.449))
    assert tie_note(*pair(0.30, 0.449)) == ""                      # 0.300 and 0.449 read apart already
    assert tie_note(*pair(0.4491, 0.4491, rule="ratio")) == ""     # sampled rules: p/q and u explain it
    assert tie_note(None, pair(0.4491, 0.4491)[1]) == ""
    # Step mode says it under the correction's sentence.
    from specviz.engine.loop.events import RoundEnd, to_dict
    from specviz.view.tabs.step import _reveal_round
    rejected, correction = pair(0.44912, 0.44934)
    end = RoundEnd(round=4, drafted=1, accepted=0, emitted=1, draft_s=0.0, verify_s=0.0, bookkeeping_s=0.0,
                   total_tokens=1, total_drafted=1, total_accepted=0, text="x", k_next=1, full=True)
    state = {"records": [to_dict(Drafted(round=4, token_ids=[6], pieces=["·n"], q=[0.9])),
                         to_dict(rejected), to_dict(correction), to_dict(end)], "next": 0, "html": ""}
    _, explained, _ = _reveal_round(state)
    assert "p = 0.4493 against 0.4491, and greedy keeps the larger." in explained


def test_pane_html_is_append_only_and_text_matches(pair):
    view = RaceView(k=4)
    previous = {"spec": "", "base": ""}
    for event in race(pair, "def add(a, b):\n    return", SpecConfig(k=4, max_new_tokens=40)):
        view.add(event)
        for lane in previous:
            assert view.pane(lane).startswith(previous[lane])   # streaming sends only the appended part
            previous[lane] = view.pane(lane)
    for lane in ("spec", "base"):
        doc = parse(view.pane(lane))
        done = next(e for e in view.trace if e["kind"] == "done" and e["lane"] == lane)
        # Visible output text = the final text, once rejected drafts are left out.
        shown = "".join(text for kind, text in doc.by_kind if kind != "rejected")
        assert shown == done["text"]


def test_one_explanation_serves_page_step_mode_and_terminal():
    """The tooltip, step mode's sentence and the terminal's line come from engine/analysis/explain.py."""
    from specviz.cli.terminal import explanation
    from specviz.engine.analysis.explain import sentence, tooltip
    from specviz.view.tabs.step import _reveal_round, _tok
    event = Rejected(round=2, position=1, token_id=7, piece="x<y", p=0.1, q=0.4, accept_prob=0.25, u=0.9, rule="ratio", discarded=2)
    assert clean(tooltip(event)) in token_span(event)
    assert "min(1, p/q) = 0.250" in sentence(event) and "u = 0.900" in sentence(event)
    assert explanation(event).startswith("  round 2: ")
    from specviz.engine import to_dict
    from specviz.engine.loop.events import RoundEnd
    drafted = Drafted(round=2, token_ids=[7, 8, 9], pieces=["x<y", "b", "c"], q=[0.4, 0.3, 0.2])
    end = RoundEnd(round=2, drafted=3, accepted=1, emitted=2, draft_s=0.1, verify_s=0.1, bookkeeping_s=0.0,
                   total_tokens=5, total_drafted=6, total_accepted=3, text="ab", k_next=3, full=True)
    state = {"records": [to_dict(e) for e in (drafted, event, end)], "next": 0, "html": ""}
    _, html_out, _ = _reveal_round(state)
    assert sentence(event, quote=_tok) in html_out


def test_one_visible_form_for_whitespace_control_and_partial_bytes(pair):
    """engine/detokenize.visible and token_text: spaces, newlines, tabs and control characters drawn,
    a token holding part of a multi-byte character shown as its bytes (never U+FFFD), in the pane
    (rejected drafts), step mode's chips and the tooltips alike."""
    from specviz.engine.loop.detokenize import IncrementalDetokenizer, visible
    from specviz.view.render import draft_chips, marked
    assert visible(" a\n\tb\r\x1b\u200b") == "·a⏎→b\\r\\x1b\\u200b"
    tok = pair.tokenizer
    ids = tok.encode("日本 🎉", add_special_tokens=False)
    pieces = [IncrementalDetokenizer(tok).piece_of(i) for i in ids]
    assert all("\ufffd" not in p for p in pieces) and any(re.search(r"<0x[0-9A-F]{2}>", p) for p in pieces)
    rejected = token_span(Rejected(round=1, position=0, token_id=ids[0], piece=pieces[0], p=0.1, q=0.4,
                                   accept_prob=0.25, u=0.9, rule="ratio", discarded=0))
    assert "\ufffd" not in rejected and "&lt;0x" in rejected and "no later drafts discarded" in html.unescape(rejected)
    chips = draft_chips(Drafted(round=1, token_ids=ids[:2], pieces=pieces[:2], q=[0.5, 0.4]))
    assert "\ufffd" not in chips and "&lt;0x" in chips
    # Output text keeps its characters (it copies as text) with the glyph laid over them.
    out = marked("a \n\tb")
    assert 'data-show="·"' in out and 'data-show="⏎"' in out and 'data-show="→"' in out
    assert "".join(parse(out).text) == "a \n\tb"


def test_the_lossless_check_tests_once_not_while_samples_stream_in():
    """A chi-square test rerun after every batch fails by chance far more often than its 1 in 100
    (a room saw "p-value 0.008" at 24 samples for ten seconds, then 0.59 at the end): while samples
    stream in the summary shows the distances, and the p-value and verdict come with the last sample,
    or with a Stop, tested once on what ran."""
    from collections import Counter

    import torch

    from specviz.engine.analysis.lossless import LosslessResult
    from specviz.view.tabs.lossless import _lossless_summary
    r = LosslessResult(Counter({0: 20, 1: 4}), torch.tensor([0.5, 0.5]), torch.tensor([0.9, 0.1]), 1.0)
    streaming = _lossless_summary(r, final=False)
    assert "p-value" not in streaming and "Verdict" not in streaming and "once, on all the samples" in streaming
    assert f"{r.tv_to_target():.3f}" in streaming
    done = _lossless_summary(r)
    assert f"p-value {r.p_value():.3f}" in done and "Verdict" in done
    stopped = _lossless_summary(r, final=False, note="Stopped after 24 samples.", tested=True)
    assert f"p-value {r.p_value():.3f}" in stopped and "Verdict" not in stopped


def test_a_judged_token_carries_its_picture_as_escaped_data():
    # The p-and-q picture travels as numbers and token texts in data-pic (page.js sets them as text);
    # a token that looks like markup stays data, and the judged token is always among the rows.
    import json
    from specviz.engine.loop.events import Rejected
    from specviz.view.render import picture, token_span
    rows = [(5, "<b>x</b>", 0.5, 0.1), (7, " the", 0.2, 0.3), (9, "\n", 0.1, 0.05)]
    rows += [(100 + i, f"t{i}", 0.01, 0.001) for i in range(10)] + [(3, "rare", 0.0001, 0.4)]
    event = Rejected(round=1, position=0, token_id=3, piece="rare", p=0.0001, q=0.4, accept_prob=0.00025,
                     u=0.7, rule="ratio", discarded=1, picture=rows, overlap=0.42)
    span = token_span(event)
    assert "<b>x</b>" not in span and "data-pic=" in span
    data = json.loads(picture(event))
    assert len(data["rows"]) <= 8 and ["rare", 0.0001, 0.4, "draft"] in data["rows"]
    assert data["rows"][0][0] == "<b>x</b>" and ["⏎", 0.1, 0.05, ""] in data["rows"]
    assert data["overlap"] == 0.42 and data["u"] == 0.7 and data["accept"] == 0.00025
    plain = token_span(Rejected(round=1, position=0, token_id=3, piece="a", p=0.1, q=0.4, accept_prob=0.25,
                                u=0.7, rule="ratio", discarded=0))
    assert "data-pic" not in plain           # an event without a picture (an old trace) draws none


def test_a_greedy_correction_s_picture_caption_says_greedy_as_its_details_do():
    """The details of a greedy correction say "its own most likely token"; its picture's caption must not
    speak of a residual drawn from (render.picture's rule is what assets/page.js captions by)."""
    from specviz.engine.analysis.explain import tooltip
    from specviz.view.render import picture
    pic = [(5, "a", 0.449, 0.2), (6, "b", 0.3, 0.5)]
    greedy = Resampled(round=4, position=1, token_id=5, piece="a", prob=0.449, p=0.449, top_residual=[(5, "a", 0.449)],
                       picture=pic, overlap=0.5)
    sampled = Resampled(round=4, position=1, token_id=5, piece="a", prob=0.7, p=0.449, top_residual=[(5, "a", 0.7)],
                        picture=pic, overlap=0.5)
    assert "its own most likely token" in tooltip(greedy)
    assert json.loads(picture(greedy))["rule"] == "argmax"
    assert json.loads(picture(sampled))["rule"] is None
