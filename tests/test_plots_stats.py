"""Stats folded from a fixed event trace, the figures built from them, and the theory."""
import json

import pytest

from specviz.engine.metrics import theory
from specviz.engine.loop.events import Accepted, Bonus, Done, Drafted, Rejected, Resampled, RoundEnd, TargetToken
from specviz.engine.metrics.measures import LaneStats, LaneTally
from specviz.engine.analysis.stats import RunStats
from specviz.view import race_plots
from specviz.view.plots import what_if
from specviz.view.race_view import RaceView


def fixed_trace():
    """Two rounds at k = 3: round 1 accepts all and earns a bonus; round 2 rejects at position 1."""
    yield Drafted(round=1, token_ids=[1, 2, 3], pieces=["a", "b", "c"], q=[0.9, 0.8, 0.7], t=0.01)
    for i, tok in enumerate([1, 2, 3]):
        yield Accepted(round=1, position=i, token_id=tok, piece="abc"[i], p=0.9, q=0.9, accept_prob=1.0, u=0.5, rule="ratio", index=i, t=0.02)
    yield Bonus(round=1, position=3, token_id=4, piece="d", p=0.5, index=3, t=0.02)
    yield RoundEnd(round=1, drafted=3, accepted=3, emitted=4, draft_s=0.006, verify_s=0.014, bookkeeping_s=0.001, total_tokens=4, total_drafted=3, total_accepted=3, text="abcd", k_next=3, full=True, t=0.02)
    yield TargetToken(index=0, token_id=1, piece="a", p=0.9, t=0.01)
    yield TargetToken(index=1, token_id=2, piece="b", p=0.9, t=0.02)
    yield Drafted(round=2, token_ids=[5, 6, 7], pieces=["e", "f", "g"], q=[0.9, 0.8, 0.7], t=0.03)
    yield Accepted(round=2, position=0, token_id=5, piece="e", p=0.9, q=0.9, accept_prob=1.0, u=0.5, rule="ratio", index=4, t=0.04)
    yield Rejected(round=2, position=1, token_id=6, piece="f", p=0.1, q=0.8, accept_prob=0.125, u=0.9, rule="ratio", discarded=1, t=0.04)
    yield Resampled(round=2, position=1, token_id=9, piece="x", prob=0.6, p=0.3, top_residual=[(9, "x", 0.6)], index=5, t=0.04)
    yield RoundEnd(round=2, drafted=3, accepted=1, emitted=2, draft_s=0.006, verify_s=0.014, bookkeeping_s=0.001, total_tokens=6, total_drafted=6, total_accepted=4, text="abcdex", k_next=3, full=True, t=0.04)
    yield Done(text="abcdex", token_ids=[1, 2, 3, 4, 5, 9], stop_reason="max_tokens", stats=LaneStats(LaneTally()), t=0.04)
    yield TargetToken(index=2, token_id=3, piece="c", p=0.9, t=0.03)
    yield Done(text="abc", token_ids=[1, 2, 3], stop_reason="max_tokens", stats=LaneStats(LaneTally()), lane="base", t=0.03)


def folded():
    stats = RunStats(k=3)
    for event in fixed_trace():
        stats.add(event)
    return stats


def test_fold():
    s = folded()
    assert s.acceptance_rate == pytest.approx(4 / 5)            # 4 accepted of 5 verified (1 discarded)
    assert s.tokens_per_round == pytest.approx(3.0)             # (4 + 2) tokens over 2 full rounds
    # a per round = accepted / judged (round 2: 1 kept, 1 rejected; its third draft never judged), and
    # a so far, which ends at the race's acceptance rate
    assert s.per_round_acceptance() == [(1, 1.0, 1.0), (2, 0.5, pytest.approx(0.8))]
    assert s.per_round_acceptance()[-1][2] == pytest.approx(s.acceptance_rate)
    assert dict(s.positions.judged) == {0: 2, 1: 2, 2: 1} and dict(s.positions.accepted) == {0: 2, 1: 1, 2: 1}
    assert s.tokens["spec"][-1] == 6 and s.tokens["base"][-1] == 3
    assert s.measured_speedup() == pytest.approx((6 / 0.04) / (3 / 0.03))
    # c = draft seconds per draft step x plain tokens per second = (0.012 / 6) * 100
    assert s.cost_ratio() == pytest.approx(0.2)
    # v = verify seconds per round / seconds per plain token = (0.028 / 2) * 100
    assert s.verify_ratio() == pytest.approx(1.4)
    th = s.theory()
    assert th["tokens_per_round"] == pytest.approx(theory.expected_tokens_per_round(0.8, 3))
    assert th["speedup"] == pytest.approx(theory.expected_speedup(0.8, 3, 0.2, 1.4))
    assert th["speedup"] < theory.expected_speedup(0.8, 3, 0.2, theory.GPU_IDEAL_V)   # a dearer verify pass lowers it


def folded_view() -> RaceView:
    view = RaceView(k=3)
    for event in fixed_trace():
        view.add(event)
    return view


def test_figures_from_the_trace():
    figures = race_plots.figures(folded_view())
    acc, race_fig, hist, pos = (figures[name] for name in ("plot_acceptance", "plot_race", "plot_hist", "plot_position"))
    assert list(acc.data[0].y) == [1.0, 0.5] and list(acc.data[1].y)[-1] == pytest.approx(folded().acceptance_rate)
    # the chart names its figure as the strip does: a = accepted / judged
    assert "accepted / judged" in acc.layout.yaxis.title.text and "acceptance rate" in acc.data[1].name
    assert [tr.name for tr in race_fig.data] == ["speculative", "plain target"]
    assert list(race_fig.data[0].y) == [0, 1, 2, 3, 4, 5, 6] and list(race_fig.data[1].x)[-1] == 0.03
    assert list(hist.data[0].y) == [0, 0.5, 0, 0.5]             # one round with 1 accepted, one with 3
    assert list(hist.data[1].y) == pytest.approx(theory.accepted_pmf(0.8, 3))
    assert list(pos.data[0].y) == [1.0, 0.5, 1.0]
    for fig in (acc, race_fig, hist, pos):
        json.loads(fig.to_json())                                # serializable for the browser


def test_the_race_plots_are_declared_once():
    from specviz.view.handlers import NO_PLOTS, RaceUpdate
    names = [p.name for p in race_plots.RACE_PLOTS]
    assert "plot_kinds" in names and len(set(names)) == len(names)
    assert set(names) <= set(RaceUpdate._fields) and set(NO_PLOTS) == set(names)      # each one an update field
    assert len({p.elem_id for p in race_plots.RACE_PLOTS}) == len(names)
    # the finished race draws every one of them (a streaming race sends none: tests/test_browser_live.py)
    assert set(race_plots.figures(folded_view())) == set(names)
    with pytest.raises(ValueError):
        race_plots.RacePlot("plot_x", "plot-y", lambda view: None)


def test_theory():
    assert theory.expected_tokens_per_round(0.0, 4) == 1.0
    assert theory.expected_tokens_per_round(1.0, 4) == 5.0
    assert theory.expected_tokens_per_round(0.5, 2) == pytest.approx(1.75)
    assert sum(theory.accepted_pmf(0.7, 5)) == pytest.approx(1.0)
    # The mean of the pmf plus the correction/bonus token is the expected tokens per round.
    pmf = theory.accepted_pmf(0.7, 5)
    assert sum(i * p for i, p in enumerate(pmf)) + 1 == pytest.approx(theory.expected_tokens_per_round(0.7, 5))
    assert theory.best_k(0.9, 0.05, 1.0) > theory.best_k(0.5, 0.05, 1.0) >= 1
    # a = 0.5, k = 2: E = 1.75; with c = 0.25 the round costs 1.5 steps, or 1.8 when verifying costs 1.3.
    assert theory.expected_speedup(0.5, 2, 0.25, theory.GPU_IDEAL_V) == pytest.approx(1.75 / 1.5)
    assert theory.expected_speedup(0.5, 2, 0.25, v=1.3) == pytest.approx(1.75 / 1.8)
    fig = what_if(0.8, 0.1, 1.3, 12)
    assert fig.data[2].x[0] == theory.best_k(0.8, 0.1, 1.3, 12)
    assert "v = 1.30" in fig.layout.title.text
    assert "GPU-ideal" in what_if(0.8, 0.1, theory.GPU_IDEAL_V, 12).layout.title.text


def test_token_labels_are_readable_at_plotly_font_size():
    """A chart's axis reads whitespace in words and punctuation in quotes (their glyphs alone were specks),
    and never gives two different tokens the same label."""
    from specviz.view.plots import readable, token_labels
    assert readable(" ") == "space" and readable("\n") == "newline" and readable("\n    ") == "newline + 4 spaces"
    assert readable("\t\t") == "2 tabs"
    assert readable("```") == "“```”" and readable(":") == "“:”"
    assert readable(" the") == "·the" and readable("def") == "def"

    class Tok:                          # decode() as a tokenizer does, over a fixed table
        table = {1: " ", 2: "```", 3: "space", 4: "", 5: "x" * 30}
        def decode(self, ids, **_):
            return self.table[ids[0]]
    labels = token_labels(Tok(), [1, 2, 3, 4, 5])
    assert labels[1] == "“```”" and labels[3] == "id 4" and labels[4].endswith("…") and len(labels[4]) <= 14
    assert labels[0] != labels[2] and len(set(labels)) == 5          # " " and "space" both read "space": ids added


def test_the_what_if_chart_never_draws_an_impossible_speedup():
    """A round yields E tokens for one verify pass and k draft steps: the speedup can never exceed E.
    A v below one step (timing noise: the k note once measured 0.88) drew one above it at k = 1."""
    from specviz.view.tabs.explain import what_if_plot
    for v in (0.5, 0.88, 1.0, 1.4):
        for c in (0.0, 0.04, 0.3):
            fig = what_if_plot(0.8, c, 12, v)
            tokens, speed = fig.data[0].y, fig.data[1].y
            assert all(s <= e + 1e-12 for s, e in zip(speed, tokens))
            assert "v = 0." not in fig.layout.title.text              # the v drawn is never below one step
