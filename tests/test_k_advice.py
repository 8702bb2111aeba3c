"""The app measures a pair's costs on this machine once it is loaded and offers the k they favour."""
from __future__ import annotations

import time

from tests.helpers import app_with
from specviz.models.presets import Preset

from .helpers import steady, wait_for


def _steady_timing(monkeypatch):
    """The load-time timing replaced by a quiet machine's (a busy test machine's tiny-model passes are
    inside their noise, and then no k is advised: test_noisy_timings_advise_nothing)."""
    from specviz.app import advisor
    from specviz.engine.analysis.calibrate import MachineCosts
    costs = MachineCosts(plain_s=0.01, draft_s=0.001, pass_s={1: 0.01, **{n: 0.01 * (1 + 0.04 * n) for n in range(2, 14)}},
                         round_draft_s={k: 0.0012 * k for k in range(1, 13)})
    monkeypatch.setattr(advisor, "measure_costs", lambda pair, k_max: steady(costs))


def test_a_loaded_pair_is_measured_and_its_k_offered(tiny_dirs, monkeypatch):
    _steady_timing(monkeypatch)
    preset = Preset("tiny", "tiny pair", tiny_dirs["target"], tiny_dirs["cut"], k=7, acceptance=0.6)
    app = app_with({"tiny": preset}, advise_k=True)
    assert app.advisor.suggested_k(preset) == 7                                       # not measured yet: the preset's k
    assert app.advisor.k_note(preset).startswith("k = 7 is this pair's own setting: not measured on this machine yet")
    app.pairs.pair(preset)
    assert wait_for(lambda: "tiny" in app.advisor.advice, timeout=120)
    advice = app.advisor.advice["tiny"]
    lo, hi = app.limits.k_range
    assert lo <= advice.k <= hi and app.advisor.suggested_k(preset) == advice.k
    assert app.advisor.k_note(preset).startswith(f"k = {advice.k} suits this machine") and "a = 0.60" in app.advisor.k_note(preset)


def test_no_measuring_unless_asked_or_without_an_acceptance(tiny_dirs):
    quiet = Preset("q", "q", tiny_dirs["target"], tiny_dirs["cut"], k=3, acceptance=0.6)
    app = app_with({"q": quiet})                    # advise_k off: tests, scripts
    app.pairs.pair(quiet)
    unknown = Preset("u", "u", tiny_dirs["target"], tiny_dirs["cut"], k=3)   # no held-out acceptance
    app2 = app_with({"u": unknown}, advise_k=True)
    app2.pairs.pair(unknown)
    time.sleep(1.0)
    assert app.advisor.advice == {} and app2.advisor.advice == {} and app2.advisor.suggested_k(unknown) == 3


def test_hub_pairs_that_would_need_a_download_say_so_in_the_menu(tiny_dirs):
    local = Preset("tiny", "tiny pair", tiny_dirs["target"], tiny_dirs["cut"])
    hub = Preset("hub", "gpt2 pair", "specviz-tests/never-cached-target", "specviz-tests/never-cached-draft")
    app = app_with({"tiny": local, "hub": hub})
    assert app.pairs.menu_label(local) == "tiny pair"
    assert app.pairs.menu_label(hub) == "gpt2 pair · needs the network"      # nothing of it is cached here


def test_picking_a_pair_swaps_an_example_prompt_and_keeps_the_visitors_own(tiny_dirs):
    """A prompt box still holding an example (of any pair) gets the new pair's first example; text the
    visitor wrote stays. The chat example once went on to the bundled code model, which wrote '#' lines."""
    from specviz.view.form import _on_preset
    chatty = Preset("chatty", "chatty", tiny_dirs["target"], tiny_dirs["cut"], 4, ("What is a star?",), chat=True)
    code = Preset("code", "code", tiny_dirs["target"], tiny_dirs["cut"], 4, ("def add(a, b):",))
    app = app_with({"chatty": chatty, "code": code})
    assert _on_preset(app, "code", "What is a star?")[-1] == "def add(a, b):"
    assert _on_preset(app, "chatty", "def add(a, b):")[-1] == "What is a star?"
    kept = _on_preset(app, "code", "My own question")[-1]
    assert not isinstance(kept, str)                  # gr.skip(): the box is left as it is


def test_the_page_s_k_watch_offers_a_late_measurement_without_moving_the_slider(tiny_dirs, monkeypatch):
    """view/form.py's k_watch: while the pair is loading or measured it keeps ticking; once measured it
    shows the measured k's line and a "use k = N" button, and stops; the slider itself is never an
    output, so every laptop starts from the preset's k. A class link's pinned k gets no suggestion."""
    from specviz.view.form import _k_measured, _on_preset, _use_k
    _steady_timing(monkeypatch)
    preset = Preset("tiny", "tiny pair", tiny_dirs["target"], tiny_dirs["cut"], k=7, acceptance=0.6)
    app = app_with({"tiny": preset}, advise_k=True)
    note, use, watch = _k_measured(app, "tiny")
    assert not app.advisor.pending(preset) and watch.active is False and use.visible is False
    app.pairs.pair(preset)                                                      # loads it; the measurement follows
    assert app.advisor.pending(preset) or "tiny" in app.advisor.advice
    assert wait_for(lambda: "tiny" in app.advisor.advice, timeout=120) and not app.advisor.pending(preset)
    note, use, watch = _k_measured(app, "tiny")
    measured = app.advisor.advice["tiny"].k
    assert "suits this machine" in note and watch.active is False
    assert use.visible is True and use.value == f"use k = {measured}" and _use_k(app, "tiny") == measured
    assert _on_preset(app, "tiny", "")[1] == 7                            # a pick sets the preset's own k
    note, use, watch = _k_measured(app, "tiny", {"pinned": True, "prompts": []})
    assert note == "" and use.visible is False and watch.active is False


def test_the_calculator_takes_this_machine_s_figures_once_the_pair_is_measured(tiny_dirs, monkeypatch):
    """Explain's "Use this machine's figures": a, c and v as measured here for the selected pair; before
    that, or for a pair the host does not time, a line saying why and the sliders left alone."""
    from specviz.view.tabs.explain import machine_figures
    _steady_timing(monkeypatch)
    preset = Preset("tiny", "tiny pair", tiny_dirs["target"], tiny_dirs["cut"], k=7, acceptance=0.6)
    untimed = Preset("plain", "plain pair", tiny_dirs["target"], tiny_dirs["cut"], k=3)
    app = app_with({"tiny": preset, "plain": untimed}, advise_k=True)
    *sliders, note = machine_figures(app.advisor, app.pairs.presets, "tiny")
    assert not any(isinstance(x, float) for x in sliders) and "run a race with it first" in note
    *sliders, note = machine_figures(app.advisor, app.pairs.presets, "plain")
    assert not any(isinstance(x, float) for x in sliders) and "does not time its pairs" in note
    app.pairs.pair(preset)
    assert wait_for(lambda: "tiny" in app.advisor.advice, timeout=120)
    advice = app.advisor.advice["tiny"]
    a, c, v, note = machine_figures(app.advisor, app.pairs.presets, "tiny")
    assert a == 0.6 and c == round(min(advice.c, 1.0), 2) and 0.5 <= v <= 3.0
    assert f"c = {advice.c:.3f}" in note and f"v = {advice.v:.2f}" in note


def test_the_calculator_says_when_its_one_c_and_v_pick_another_k_than_the_advice(tiny_dirs):
    """The advice prices each k with that k's own timings; the what-if chart draws every k with one c and v
    (those of the advised k). Where the two bests differ (a newcomer saw "k = 5 suits this machine" beside
    the chart's "best k = 3"), the calculator's line says both and why."""
    from specviz.app.k_advice import advise
    from specviz.engine.analysis.calibrate import MachineCosts
    from specviz.view.tabs.explain import machine_figures
    preset = Preset("tiny", "tiny pair", tiny_dirs["target"], tiny_dirs["cut"], k=3, acceptance=0.51)
    app = app_with({"tiny": preset}, advise_k=True)
    v = {1: 1.05, 2: 1.2, 3: 1.3, 4: 1.25, 5: 1.0, 6: 1.05, 7: 1.1, 8: 1.15}     # a verify pass dearer at k = 3
    costs = MachineCosts(plain_s=1.0, draft_s=0.04, pass_s={k + 1: s for k, s in v.items()}, threads=1,
                         round_draft_s={k: 0.04 * k for k in v})
    app.advisor.advice["tiny"] = advise(steady(costs), 0.51, (1, 8))
    assert app.advisor.advice["tiny"].k == 5
    *_, note = machine_figures(app.advisor, app.pairs.presets, "tiny", 12)
    note = __import__("html").unescape(note)
    assert "k = 5 (1.67×)" in note and "the best is k = 3 (1.70×)" in note and "each k's own" in note
    assert "chart stops" not in note
    *_, note = machine_figures(app.advisor, app.pairs.presets, "tiny", 4)                # the advised k beyond the chart's largest
    assert "The chart stops at k = 4" in __import__("html").unescape(note)
    flat = MachineCosts(plain_s=1.0, draft_s=0.04, pass_s={k + 1: 1.0 for k in v}, threads=1,
                        round_draft_s={k: 0.04 * k for k in v})
    app.advisor.advice["tiny"] = advise(steady(flat), 0.51, (1, 8))
    *_, note = machine_figures(app.advisor, app.pairs.presets, "tiny", 12)
    assert "each k&#x27;s own" not in note and "k = " not in note.split("the k advised.")[1]                        # the same best k: nothing to reconcile


def test_the_calculator_blames_per_k_timings_only_where_they_differ(tiny_dirs):
    """Equal timings at every k with figures that round badly (a reviewer's case: a = 0.84, c = 0.27595,
    v = 0.92356): the sliders' two decimals alone moved the chart's best k, and the line blamed per-k timings."""
    from specviz.app.k_advice import advise
    from specviz.engine.analysis.calibrate import MachineCosts
    from specviz.view.tabs.explain import machine_figures
    preset = Preset("tiny", "tiny pair", tiny_dirs["target"], tiny_dirs["cut"], k=3, acceptance=0.84)
    app = app_with({"tiny": preset}, advise_k=True)
    ks = range(1, 13)
    costs = MachineCosts(plain_s=1.0, draft_s=0.27595, pass_s={k + 1: 0.92356 for k in ks}, threads=1,
                         round_draft_s={k: 0.27595 * k for k in ks})
    app.advisor.advice["tiny"] = advise(steady(costs), 0.84, (1, 12))
    *_, note = machine_figures(app.advisor, app.pairs.presets, "tiny", 12)
    assert "each k&#x27;s own" not in note and "chart stops" not in note
