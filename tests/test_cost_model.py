"""One cost model per (pair, device, decode path, machine): c and v as the median of their samples with
range and count; a figure inside its noise shown with its spread and never advising; a single race's
verdict that holds still; N races reported as their median and range."""
from __future__ import annotations

import re

import pytest

from specviz.engine.analysis.cost_model import MIN_SAMPLES, CostModel, race_sample
from specviz.engine.analysis.ledger import build
from specviz.engine.analysis.repeat import repeated
from specviz.engine.metrics.measures import LaneTally
from specviz.engine.metrics.theory import expected_speedup


def model(c: dict, v: dict) -> CostModel:
    m = CostModel(("pair", "cpu", "eager", "here"))
    m.c_samples = {k: list(x) for k, x in c.items()}
    m.v_samples = {n: list(x) for n, x in v.items()}
    return m


def test_noisy_samples_give_their_spread_and_no_advice():
    """The load-time timing once read c = 0.01 and v = 0.35 on a busy machine and advised k = 10."""
    noisy = model({k: [0.01, 0.05, 0.2] for k in range(1, 9)}, {k + 1: [0.35, 1.2, 2.1] for k in range(1, 9)})
    c, v = noisy.chain(3)
    assert (c.value, c.low, c.high, c.samples) == (0.05, 0.01, 0.2, 3)
    assert c.noise and v.noise and not c.settled and not v.settled           # ranges wider than the values
    assert "0.01-0.20" in c.text() and "timing noise" in v.text()
    advice = noisy.advise(0.6, (1, 8))
    assert advice.k is None and advice.expected is None and "noise" in advice.reason
    cheap = model({3: [0.05] * 3}, {4: [0.8, 0.85, 0.9]})                    # a pass cheaper than a step
    assert cheap.v(4).noise and cheap.advise(0.6, (3, 3)).k is None


def test_one_race_is_not_a_figure_the_advice_says_what_it_needs():
    once = model({3: [0.05]}, {4: [1.3]})
    advice = once.advise(0.6, (3, 3))
    assert advice.k is None and advice.reason == "two more races to say"
    once.add_run(0.055, 1.32, 3, 4)
    assert once.advise(0.6, (3, 3)).reason == "one more race to say"
    once.add_run(0.05, 1.31, 3, 4)
    assert once.c(3).samples == MIN_SAMPLES and once.advise(0.6, (3, 3)).k == 3
    assert model({}, {}).advise(0.6, (1, 4)).reason.startswith("nothing measured here yet")


def test_the_advice_names_the_ks_within_noise_of_the_best():
    tight = model({k: [0.05] * 3 for k in range(1, 9)}, {k + 1: [1.0 + 0.05 * k] * 3 for k in range(1, 9)})
    best = max(range(1, 9), key=lambda k: expected_speedup(0.7, k, 0.05, 1.0 + 0.05 * k))
    advice = tight.advise(0.7, (1, 8))
    assert advice.k == best and advice.within == (best, best)               # no spread: one k
    loose = model({k: [0.04, 0.05, 0.06] for k in range(1, 9)},
                  {k + 1: [0.9 + 0.05 * k, 1.0 + 0.05 * k, 1.2 + 0.05 * k] for k in range(1, 9)})
    lo, hi = loose.advise(0.7, (1, 8)).within
    assert hi > lo                                                          # spread: a range of k
    assert lo <= loose.advise(0.7, (1, 8)).k <= hi


def test_the_load_time_timing_seeds_every_repeat_and_races_add_their_own():
    from specviz.engine.analysis.calibrate import MachineCosts
    costs = MachineCosts(plain_s=0.01, draft_s=0.001, pass_s={1: 0.01, 4: 0.013},
                         round_draft_s={3: 0.0015}, pass_samples={4: (0.012, 0.013, 0.015)},
                         round_samples={3: (0.0015, 0.0014, 0.0018)})
    m = CostModel(("p", "cpu", "eager", "here"))
    m.seed(costs)
    assert m.v(4).samples == 3 and m.v(4).value == pytest.approx(1.3) and m.v(4).high == pytest.approx(1.5)
    assert m.c(3).value == pytest.approx(0.05)
    spec = LaneTally(rounds=10, drafted=30, accepted=20, rejected=8, tokens=30, draft_s=0.03, verify_s=0.2,
                     elapsed_s=0.25)
    plain = LaneTally(tokens=30, elapsed_s=0.3)
    c, v, k, n = race_sample(spec, plain)
    assert (k, n) == (3, 4) and c == pytest.approx(0.1) and v == pytest.approx(2.0)
    m.add_race(spec, plain)
    assert m.c(3).samples == 4 and m.v(4).samples == 4 and m.runs == 1
    tree_c, tree_v, _, tree_n = race_sample(spec, plain, tree=True)
    assert tree_c is None and tree_n == 4 and tree_v == pytest.approx(2.0)  # a tree prices its pass, not a draft step


SPEC = LaneTally(rounds=20, drafted=60, accepted=40, rejected=15, tokens=64, draft_s=0.3, verify_s=1.5, elapsed_s=1.9)


def _plain(seconds: float) -> LaneTally:
    return LaneTally(tokens=64, elapsed_s=seconds)


def test_the_cost_model_s_spread_never_moves_one_race_s_verdict():
    """A race of 13.6 s against 24.7 s (1.81x) was headlined "About even" because the cost model's spread
    was wide. The verdict is the race's: its lanes' times and its own interval."""
    spread = model({3: [0.08, 0.1, 0.12]}, {4: [1.0, 1.4, 1.8]})            # v: 1.4 +- 29% across races
    assert build(SPEC, _plain(1.9 * 0.87), spread).verdict == "slower"        # this race: a clear loss
    assert build(SPEC, _plain(1.9 * 1.5), spread).verdict == "faster"
    # Its own timings wide enough to hold 1.0: about even, and the sentence gives the interval.
    even = build(SPEC, _plain(1.9 * 1.15), spread, interval=(0.9, 1.4))
    assert even.verdict == "about even" and "from 0.90x to 1.40x" in even.cause


def test_a_1_8x_race_under_a_noisy_cost_model_is_called_faster():
    noisy = model({3: [0.006, 0.014, 0.2]}, {4: [0.19, 0.36, 2.1]})        # a busy machine's samples
    led = build(SPEC, _plain(1.9 * 1.81), noisy)
    assert led.speedup == pytest.approx(1.81) and led.verdict == "faster"
    assert led.c == pytest.approx(0.3 / 60 / (1.9 * 1.81 / 64)) and led.v == pytest.approx(1.5 / 20 / (1.9 * 1.81 / 64))
    assert led.typical["c"] == 0.014 and led.typical["v"] == 0.36                 # the model, kept apart


def test_a_busy_machine_is_said_in_words_and_does_not_overrule_the_lanes():
    busy = "other programs used 74% of its CPU"
    slow = build(SPEC, _plain(1.9 * 0.8), busy=busy)
    assert slow.verdict == "slower" and busy in slow.cause and "both lanes slowed" in slow.cause
    fast = build(SPEC, _plain(1.9 * 1.3), busy=busy)
    assert fast.verdict == "faster" and fast.uncertain.startswith("This machine was busy (")
    assert "repeat the race for a firmer figure" in fast.uncertain


def test_a_race_with_nothing_priced_prints_no_break_even_claim():
    """"no a pays at this k" was printed whenever nothing was priced, under a race that won."""
    from specviz.view.ledger_view import ledger_html
    cheap = LaneTally(rounds=20, drafted=60, accepted=40, rejected=15, tokens=64, draft_s=0.03, verify_s=0.4,
                      elapsed_s=0.5)                                            # a pass timed cheaper than a step
    untimed = LaneTally(rounds=20, drafted=60, accepted=40, rejected=15, tokens=64, elapsed_s=0.5)
    for spec in (cheap, untimed):
        led = build(spec, _plain(1.9), model({3: [0.01, 0.05, 0.2]}, {4: [0.35, 1.2, 2.1]}))
        assert led.verdict == "faster" and not led.priced and led.theory is None and led.break_even_a is None
        text = led.cause + re.sub(r"<[^>]+>", " ", ledger_html(led))     # what is read, not the tooltips
        for claim in ("no a pays", "no acceptance rate pays", "pays above", "break-even a ="):
            assert claim not in text, claim
        assert "not priced" in ledger_html(led)
    assert "timings were disturbed" in build(cheap, _plain(1.9)).cause


def test_repeat_reports_the_median_and_the_range():
    rep = repeated([1.32, 2.78, 1.21, 1.69, 1.28])
    assert (rep.median, rep.low, rep.high) == (1.32, 1.21, 2.78) and rep.verdict == "faster" and not rep.crosses
    assert "median 1.32x (range 1.21-2.78x)" in rep.line()
    mixed = repeated([0.87, 1.17, 1.05])
    assert mixed.median == 1.05 and mixed.crosses and "1 of 3 races alone would read slower" in mixed.line()
    assert repeated([None, None]) is None


@pytest.mark.slow    # two CLI subprocesses, each loading torch and a pair
def test_cli_repeat_reports_the_median_and_range_of_its_races(tiny_dirs):
    import json
    from .helpers import cli
    r = cli("run", "--prompt", "def add(a, b):", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"],
            "--max-new-tokens", "12", "--baseline", "--repeat", "3", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout.strip().splitlines()[-1])
    assert rep["kind"] == "repeated" and len(rep["speedups"]) == 3
    assert rep["median"] == sorted(rep["speedups"])[1] and rep["low"] == min(rep["speedups"])
    text = cli("run", "--prompt", "def add(a, b):", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"],
               "--max-new-tokens", "12", "--baseline", "--repeat", "2", "--no-color")
    assert text.returncode == 0 and "Repeated 2x: median" in text.stdout


def test_race_3x_on_the_page_reports_the_median_and_range_of_three_races(tiny_dirs):
    """The race tab's "Race 3x": the first race in the panes, then two more; the status gives the median of
    the three with their range, and every race joined the pair's cost model."""
    import html
    import re
    from specviz.view.handlers import run_race
    from .helpers import FORM, tiny_app
    app = tiny_app(tiny_dirs)
    updates = list(run_race(app, **{**FORM, "max_new_tokens": 12}, repeat=3))
    statuses = [u.status for u in updates if isinstance(u.status, str)]
    assert any("Race 2 of 3" in s for s in statuses) and any("Race 3 of 3" in s for s in statuses)
    last = html.unescape(updates[-1].status)
    found = re.search(r'id="race-repeat" data-median="([0-9.]+)" data-low="([0-9.]+)" data-high="([0-9.]+)"', last)
    assert found and float(found[2]) <= float(found[1]) <= float(found[3])
    assert "Repeated 3x: median" in last and "The panes show the first race." in last
    model = app.advisor.costs.latest("tiny")
    assert model.runs + model.dropped_races == 3            # each race joined the model (or was dropped as a busy one)
    single = html.unescape(list(run_race(app, **{**FORM, "max_new_tokens": 12}))[-1].status)
    assert "race-repeat" not in single and model.runs + model.dropped_races == 4
    assert "median" in re.search(r'id="race-headline">(.*?)</div>', last).group(1)    # Race 3x headlines the median


def test_a_figure_keeps_the_latest_samples_only():
    from specviz.engine.analysis.cost_model import KEEP
    m = model({}, {})
    for i in range(KEEP + 10):
        m.add_run(0.05 + i, None, 3, None)
    assert m.c(3).samples == KEEP
    assert m.c_samples[3][0] == 0.05 + 10 and len(m.c_samples[3]) == KEEP  # the oldest ten dropped


def test_one_stray_timing_among_many_does_not_make_a_figure_noise():
    """The bundled draft's five timed repeats at load read c = 0.004 with one at 0.22 (the machine woke a
    thread): the whole range is 50x the value; the middle half is not."""
    m = model({3: [0.004, 0.0042, 0.0039, 0.0041, 0.22]}, {4: [1.2] * 5})
    c = m.c(3)
    assert c.samples == 5 and c.high < 0.01 and not c.noise and c.settled
    assert model({3: [0.004, 0.22, 0.0041]}, {}).c(3).noise          # with three samples, all of them count


@pytest.mark.slow    # three workshop races on the tiny pair
def test_the_workshop_race_repeated_three_times_answers_with_the_median_and_range(tiny_dirs, monkeypatch):
    """The workshop's "race 3x": three races, the answer their median, the range said, one race's passes shown."""
    import statistics
    from specviz.app import workshop
    from .helpers import tiny_app
    app = tiny_app(tiny_dirs)
    app.pairs.presets["bundled"] = app.pairs.presets["tiny"]
    seen = []
    real = workshop.race_stats

    def counted(*args, **kwargs):
        stats = real(*args, **kwargs)
        seen.append(stats.measured_speedup())
        return stats
    monkeypatch.setattr(workshop, "race_stats", counted)
    outcome = workshop.race(app, repeat=3)
    assert len(seen) == 3
    assert outcome.value == round(statistics.median(seen), 2)
    assert f"range {min(seen):.2f}-{max(seen):.2f}×" in outcome.shown and "median of 3" in outcome.shown
    assert outcome.why.startswith("Repeated 3x: median")
    assert workshop.BY_KEY["race"].repeatable and not workshop.BY_KEY["passes"].repeatable


def test_a_step_mode_run_refines_c_and_v_in_the_models_plain_step():
    """Step mode runs a speculative lane alone: its draft steps and passes are priced in the plain step
    the model already timed (calibration and races), and counted like a race's."""
    from specviz.engine.analysis.cost_model import CostModel
    from specviz.engine.metrics.measures import LaneTally
    model = CostModel(("p", "cpu", "eager", "here"))
    spec = LaneTally(rounds=10, drafted=30, accepted=20, rejected=5, tokens=30, draft_s=0.6, verify_s=1.2,
                     elapsed_s=2.0)
    assert not model.add_step_run(spec) and model.runs == 0          # no plain step timed here yet
    model.add_race(spec, LaneTally(tokens=40, elapsed_s=4.0))        # a race's plain lane: 0.1 s a step
    before = len(model.c_samples[3])
    assert model.add_step_run(spec)
    assert model.c_samples[3][-1] == pytest.approx(0.6 / 30 / 0.1)   # c: a draft step in plain steps
    assert model.v_samples[4][-1] == pytest.approx(1.2 / 10 / 0.1)   # v: a pass over k + 1 = 4 tokens
    assert len(model.c_samples[3]) == before + 1 and model.runs == 2


def test_step_mode_folds_its_run_into_the_pairs_cost_model(tiny_dirs):
    from specviz.view.tabs.step import step_round
    from .helpers import FORM, tiny_app
    app = tiny_app(tiny_dirs)
    preset = app.pairs.known("tiny")
    model = app.advisor.costs.get(preset.key, app.pairs.pair(preset).device, "eager")
    model.plain_samples.append(0.01)
    runs = model.runs
    step_round(app, None, **{**FORM, "temperature": 0.0, "k": 3, "max_new_tokens": 12})
    assert model.runs == runs + 1


@pytest.mark.parametrize("a", [0.2, 0.4, 0.51, 0.6, 0.8])
def test_the_k_advice_never_names_a_k_it_expects_to_lose(a):
    """A fresh start once advised "k = 10 ... expects 0.99x": a k the formula itself expected to lose."""
    from specviz.app.k_advice import from_model
    dear = model({k: [0.3] * 3 for k in range(1, 11)}, {k + 1: [1.2 + 0.1 * k] * 3 for k in range(1, 11)})
    advice = from_model(dear, a, (1, 10))
    if advice.k is None:
        assert "expects no k from 1 to 10 to gain" in advice.advice.reason and "not measured to pay" in advice.line()
        assert all(expected_speedup(a, k, 0.3, 1.2 + 0.1 * k) < 1 for k in range(1, 11))
    else:
        assert advice.expected >= 1.0
        lo, hi = advice.advice.within
        assert all(expected_speedup(a, k, 0.3, 1.2 + 0.1 * k) >= 1 for k in range(lo, hi + 1))
    assert from_model(dear, 0.2, (1, 10)).k is None                  # at a = 0.2 every k loses here


def test_the_k_advice_says_it_is_a_prediction_and_names_a_race_that_differs():
    from specviz.app.k_advice import from_model
    tight = model({k: [0.05] * 3 for k in range(1, 9)}, {k + 1: [1.0 + 0.05 * k] * 3 for k in range(1, 9)})
    advice = from_model(tight, 0.51, (1, 8))
    line = advice.line(seen_a=0.61)
    assert "(a prediction)" in line and "typical here" in line and "assuming the draft's acceptance a = 0.51 (on held-out prompts)" in line
    assert "The latest race accepted a = 0.61, above the draft's usual 0.51" in line
    assert "latest race" not in advice.line(seen_a=0.52)


def test_a_busy_machine_s_samples_are_dropped_not_averaged_in():
    m = CostModel(("pair", "cpu", "eager", "here"))
    m.add_run(0.05, 0.36, 3, 4)                       # a pass cheaper than a step: dropped
    assert m.v(4).samples == 0 and m.c(3).samples == 1 and m.dropped == 1
    plain = [LaneTally(tokens=64, elapsed_s=1.9 * x) for x in (1.0, 1.02, 0.98)]
    for p in plain:
        assert m.add_race(SPEC, p)
    assert not m.add_race(SPEC, LaneTally(tokens=64, elapsed_s=1.9 * 3))      # a step three times its neighbours'
    assert m.dropped_races == 1 and len(m.plain_samples) == 3 and m.runs == 4


def _race_exercise(monkeypatch, spec, plain):
    """The workshop's race exercise on a race folded into these lane tallies (no model runs)."""
    from specviz.app import workshop
    from specviz.engine.analysis.stats import RunStats
    stats = RunStats(k=3)
    stats.tallies["spec"], stats.tallies["base"] = spec, plain
    monkeypatch.setattr(workshop, "pick", lambda app, role: "tiny")
    monkeypatch.setattr(workshop, "race_stats", lambda app, key, **run: stats)
    monkeypatch.setattr(workshop, "ran", lambda *args, **kwargs: "")
    return workshop.race(None), stats


def test_the_race_exercise_gives_the_race_s_ledger_figures_and_prices_nothing_it_could_not(monkeypatch):
    """The race exercise's why is the race's ledger (engine/analysis/ledger.py), as the race tab's: its a, tau,
    c and v, and no round priced where the ledger prices none. It once priced a round itself, with a verify
    pass of v = 1.00 standing in where none was timed, and a pass timed cheaper than a step as measured."""
    from specviz.app.workshop import race_ledger
    from specviz.engine.metrics.measures import LaneTally
    plain = LaneTally(tokens=29, target_s=2.8, accept_s=0.05, elapsed_s=2.9)
    spec = LaneTally(rounds=10, drafted=28, accepted=18, rejected=8, tokens=29, draft_s=0.14, verify_s=1.3,
                     target_s=1.25, accept_s=0.03, elapsed_s=1.5)
    outcome, stats = _race_exercise(monkeypatch, spec, plain)
    led = race_ledger(stats)
    assert f"a round costs {led.k * led.c + led.v:.2f} plain steps" in outcome.why
    assert f"c = {led.c:.3f} each" in outcome.why and f"v = {led.v:.2f}." in outcome.why
    assert f"accepted {led.a:.0%}" in outcome.why and f"yielded {led.tau:.2f} tokens" in outcome.why
    untimed = LaneTally(rounds=10, drafted=28, accepted=18, rejected=8, tokens=29, elapsed_s=1.5)
    outcome, _ = _race_exercise(monkeypatch, untimed, plain)
    assert "v = 1.00" not in outcome.why and "a round costs" not in outcome.why and "nothing is priced" in outcome.why
    disturbed = LaneTally(rounds=10, drafted=28, accepted=18, rejected=8, tokens=29, draft_s=0.14, verify_s=0.8,
                          target_s=0.75, accept_s=0.03, elapsed_s=1.0)
    outcome, stats = _race_exercise(monkeypatch, disturbed, plain)
    assert race_ledger(stats).v < 1 and "a round costs" not in outcome.why and "disturbed" in outcome.why


def test_a_workshop_figure_the_run_did_not_measure_is_a_dash_not_zero(monkeypatch):
    """The lookup exercise wrote "a = 0.00 ... c = 0.00" for a run that judged no draft and timed no step
    (`... or 0`): a measurement it never made. It now writes "—", as the ledger does."""
    from specviz.app import workshop
    from specviz.engine.analysis.stats import RunStats
    from specviz.engine.metrics.measures import LaneTally
    stats = RunStats(k=3)
    stats.tallies["spec"] = LaneTally(rounds=4, drafted=0, tokens=10, elapsed_s=1.0)
    stats.tallies["base"] = LaneTally(tokens=10, elapsed_s=2.0)
    monkeypatch.setattr(workshop, "pick", lambda app, role: "tiny")
    monkeypatch.setattr(workshop, "race_stats", lambda app, key, **run: stats)
    monkeypatch.setattr(workshop, "ran", lambda *args, **kwargs: "")
    why = workshop.lookup(None).why
    assert "0.00" not in why and "prompt lookup had a = — at no draft cost, the draft model a = — at c = —." in why
