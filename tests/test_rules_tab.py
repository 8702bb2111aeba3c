"""The Acceptance rules tab's handler on the tiny models (random draft, so the lossy rules' laws are far
from p), and the kinds plot on hand-made events. Handlers are called directly, as the page calls them."""
import itertools
import re

import numpy as np
import pytest
import torch

from scripts.color_check import to_lab, to_linear
from specviz.engine.loop.events import Accepted, Drafted, Rejected
from specviz.engine.analysis.token_kinds import acceptance_by_kind
from specviz.app import rules_check
from specviz.view.tabs import rules as rules_tab
from specviz.view.render import clean
from specviz.view.kinds_plot import kinds_figure
from specviz.app.rules_check import RuleRow, check_rule, first_position
from specviz.view.tabs.rules import LOSSY, run_rules
from tests.helpers import ADD, app_with, form, tiny_preset

FORM = form(prompt=ADD, preset="tiny-random", k=3, temperature=0.0, max_new_tokens=200)


@pytest.fixture(scope="module")
def app(tiny_dirs):
    preset = tiny_preset(tiny_dirs, "tiny-random", "random", 3, ("x",), "tiny, random draft")
    return app_with({"tiny-random": preset}, max_new_tokens=100)


def delta_e(a: str, b: str) -> float:
    """CIELAB Delta E 1976 between two '#rrggbb' colours, with scripts/color_check.py's conversion."""
    lab = lambda h: to_lab(to_linear([int(h[i:i + 2], 16) for i in (1, 3, 5)]))      # noqa: E731
    return float(np.linalg.norm(lab(a) - lab(b)))


def rows_of(html: str) -> dict[str, tuple[str, str]]:
    """rule name -> (data-lossless, data-mc) from the tab's table."""
    return {m[0]: (m[1], m[2]) for m in re.findall(r'data-rule="([^"]+)" data-lossless="(\w+)" data-mc="(\w*)"', html)}


def test_the_tab_races_every_rule_and_the_lossy_ones_fail(app):
    updates = list(run_rules(app, 1.0, **FORM))
    html, figure, cancel = updates[-1]
    assert cancel is None and "6 rules raced, 48 new tokens each, temperature 1" in html
    rows = rows_of(html)
    assert list(rows) == ["exact", "block", "sample_match", "greedy_match", "typical(epsilon=0.09,delta=0.3)", "ensemble(w=0.5)"]
    assert rows["exact"] == ("true", "pass") and rows["sample_match"] == ("true", "pass")
    assert rows["block"] == ("true", "pass")
    for name in ("greedy_match", "typical(epsilon=0.09,delta=0.3)", "ensemble(w=0.5)"):
        assert rows[name] == ("false", "fail"), name
    assert html.count(clean(LOSSY)) == 3
    assert "<td>—</td>" not in html                                      # every figure measured
    figures = [u[1] for u in updates if hasattr(u[1], "data")]
    assert len(figures) == 1                                              # drawn once, then skipped
    names = [trace.name for trace in figures[0].data]
    assert names[0] == "target p" and "typical(epsilon=0.09,delta=0.3) (LOSSY)" in names and "exact" in names
    # Bars side by side are told apart: two colours closer than Delta E 20 (exact's and sample_match's
    # greens were 11.8 apart) differ in their fill pattern too.
    look = [(trace.marker.color, trace.marker.pattern.shape or "") for trace in figures[0].data]
    for (c1, s1), (c2, s2) in itertools.combinations(look, 2):
        assert delta_e(c1, c2) >= 20 or s1 != s2, (c1, c2)


def test_each_rule_row_is_measured_and_named_by_the_run(app, monkeypatch):
    seen = []
    real = rules_check.race_rule
    monkeypatch.setattr(rules_tab, "race_rule", lambda *a: (real(*a), seen.append(a[2]))[0])
    list(run_rules(app, 0.8, **FORM))
    assert [r.recorded for r in seen] == [r.name for r in seen]        # Done.stats names the rule raced
    for r in seen:
        assert 0 <= r.a <= 1 and 0 <= r.a_d <= r.a and 1 <= r.tau <= 4 and r.tokens == 48 and r.speedup > 0
        assert 0 <= r.kept <= 3
    # token-wise against block, same prompt, seed and pair: the block row is its own run, with the rule named
    exact, block = (next(r for r in seen if r.name == name) for name in ("exact", "block"))
    assert block.recorded == "block" and exact.recorded == "exact"


def test_refusals_are_one_line(app):
    for temperature, words in ((0.0, "between 0.05 and 2"), (3, "between 0.05 and 2"), ("hot", "temperature")):
        html, _, _ = list(run_rules(app, temperature, **FORM))[-1]
        assert "status-error" in html and words in html
    html, _, _ = list(run_rules(app, 1.0, **{**FORM, "prompt": ""}))[-1]
    assert "status-error" in html


def test_stop_ends_it_with_a_line(app):
    html, _, cancel = list(run_rules(app, 1.0, stop=lambda: True, **FORM))[-1]
    assert "Stopped." in html and cancel is None
    run = run_rules(app, 1.0, **FORM)
    _, _, cancel = next(run)                  # the page's Stop sets the flag the first update hands over
    assert "Racing rule 1 of 6" in next(run)[0]
    cancel.set()
    rest = list(run)
    assert len(rest) == 1 and "Stopped." in rest[0][0] and rest[0][2] is None


def test_first_position_laws_on_a_known_pair():
    p, q = torch.tensor([0.5, 0.3, 0.2, 0.0]), torch.tensor([0.2, 0.2, 0.6, 0.0])
    fp = first_position(p, q)
    assert fp.ids == [2, 0, 1] and fp.cover_p == pytest.approx(1.0)
    rows = {n: RuleRow(n, n in ("exact", "sample_match"), "") for n in ("exact", "sample_match", "greedy_match",
                                                                        "ensemble(w=0.5)")}
    for row in rows.values():
        check_rule(row, fp, 4000, 0)
    assert rows["exact"].tv < 1e-9 and rows["exact"].mc_passed and rows["sample_match"].mc_passed
    assert rows["exact"].expected == pytest.approx(0.2 + 0.2 + 0.2)          # sum min(p, q)
    assert rows["greedy_match"].tv == pytest.approx(0.5) and not rows["greedy_match"].mc_passed
    assert rows["ensemble(w=0.5)"].tv > 0.1 and not rows["ensemble(w=0.5)"].mc_passed


def test_rules_html_escapes_and_labels():
    row = RuleRow("typical", False, "<script>x</script>", mc_p=1e-9)
    html = rules_tab.rules_html([row], "<b>note</b>", "<i>s</i>")
    assert "<script>" not in html and "&lt;b&gt;note" in html and clean(LOSSY) in html and 'data-mc="fail"' in html


# --- acceptance by kind ------------------------------------------------------------------------
def hand_made_events():
    """Round 1 drafts ' the', ' 4', '(': the first two accepted, '(' rejected; round 2 drafts ' 7', ')':
    ' 7' rejected, ')' discarded. Then a plain-lane event, which the fold ignores."""
    v = dict(lane="spec", t=0.1, p=0.5, q=0.4, accept_prob=1.0, u=0.3, rule="ratio")
    no = {**v, "p": 0.1, "accept_prob": 0.25, "u": 0.7}           # a rejection's draw is above its probability
    return [Drafted(round=1, token_ids=[1, 2, 3], pieces=[" the", " 4", "("], q=[0.4, 0.4, 0.4]),
            Accepted(round=1, position=0, token_id=1, piece=" the", index=0, **v),
            Accepted(round=1, position=1, token_id=2, piece=" 4", index=1, **v),
            Rejected(round=1, position=2, token_id=3, piece="(", discarded=0, **no),
            Drafted(round=2, token_ids=[4, 5], pieces=[" 7", ")"], q=[0.5, 0.5]),
            Rejected(round=2, position=0, token_id=4, piece=" 7", discarded=1, **no),
            Drafted(round=1, token_ids=[6], pieces=[" x"], q=[0.5], lane="base")]


def test_kinds_plot_from_hand_made_events(tmp_path):
    table = acceptance_by_kind(hand_made_events())
    fig = kinds_figure(table)
    bars, marks = fig.data
    assert list(bars.x) == ["number", "punctuation", "word<br>start"]          # two lines: a phone's width
    assert list(bars.y) == [0.5, 0.0, 1.0] and list(bars.text) == ["1/2", "0/1", "1/1"]
    assert list(marks.y) == [0.5, 0.0, 1.0] and [d[0] for d in bars.customdata] == [2, 2, 1]
    assert [d[1] for d in bars.customdata] == list(marks.customdata) == ["number", "punctuation", "word start"]
    again = kinds_figure(table + [{"kind": "<img>"}])
    assert list(again.data[0].x) == list(bars.x)                     # an unknown kind is dropped
    assert len(kinds_figure([]).data) == 0


def test_the_kinds_exercise_answers_from_its_own_run(tiny_dirs):
    from specviz.app.workshop import BY_KEY, MIN_JUDGED
    app = app_with({"tiny": tiny_preset(tiny_dirs, examples=(ADD,))})
    ex = BY_KEY["kinds"]
    out = ex.run(app)
    assert out.value in ex.choices and out.shown.startswith(out.value)
    from specviz.view.tabs.workshop import chart_figure
    assert out.chart[0] == "kinds"                  # the logic hands the view data; the view draws it
    figure = chart_figure(out.chart)
    kinds = [d[1] for d in figure.data[0].customdata]          # the kinds' names (the axis breaks them in two)
    judged = {b: (int(t.split("/")[0]), int(t.split("/")[1])) for b, t in zip(kinds, figure.data[0].text)}
    best = max((a / j, k) for k, (a, j) in judged.items() if j >= MIN_JUDGED)
    assert judged[out.value] and best[0] == pytest.approx(judged[out.value][0] / judged[out.value][1])
    assert f"{judged[out.value][0]} of {judged[out.value][1]}" in out.why
    assert out.ran == "tiny · k = 4, greedy, 96 new tokens at most · prompt “def add(a, b): …”"    # what ran
