"""The app in a real browser: Playwright drives the system Chromium against the app served on
a free local port (tiny local models; the target is slowed a little so Stop has a run to stop)."""
import json
import re
import time

import pytest

from tests.browser_support import (TARGET_PASSES, XSS, kinds, run_race, set_slider, sync_api,  # noqa: F401
                                   app_url, browser, page, slow_target, wait_finished)   # fixtures among them

pytestmark = pytest.mark.slow    # Chromium driving the served app


def test_race_fills_both_panes_with_every_kind(page):
    seen = set()
    for prompt in ("def add(a, b):\n    return", "import os\nimport sys\n\n\nclass", "for i in range(10):\n    print(i)\nfor i in"):
        run_race(page, prompt, max_new=64)
        wait_finished(page)
        page.wait_for_function("document.querySelectorAll('#base-pane [data-kind]').length == 64", timeout=10_000)
        spec, base = kinds(page, "spec-pane"), kinds(page, "base-pane")
        assert set(base) == {"target"} and len(base) == 64
        assert set(spec) <= {"accepted", "rejected", "resampled", "bonus"}
        # Output tokens (not the struck-through rejected drafts) number exactly 64 too.
        assert len([k for k in spec if k != "rejected"]) == 64
        seen |= set(spec)
        rounds = page.eval_on_selector_all("#spec-pane [data-round]", "els => els.map(e => +e.dataset.round)")
        assert rounds == sorted(rounds) and rounds[-1] > 1
    assert seen == {"accepted", "rejected", "resampled", "bonus"}


def test_tooltips_plots_stats_and_speedup(page):
    run_race(page, "def add(a, b):\n    return", max_new=48)
    wait_finished(page)
    titles = page.eval_on_selector_all("#spec-pane [data-kind]", "els => els.map(e => e.dataset.tip)")
    assert titles and all(t and "p (target)" in t or "bonus" in t or "resampled" in t for t in titles)
    rejected = page.eval_on_selector_all("#spec-pane [data-kind=rejected]", "els => els.map(e => e.dataset.tip)")
    assert all("rejected" in t and "q (draft)" in t for t in rejected)
    for plot in ("plot-acceptance", "plot-race", "plot-hist", "plot-position"):
        page.wait_for_selector(f"#{plot} .js-plotly-plot .main-svg", timeout=20_000)
    strip = page.inner_text("#stats")
    assert re.search(r"MEASURED SPEEDUP\s+\d+\.\d\d×", strip, re.I)
    assert re.search(r"ACCEPTANCE RATE\s+[01]\.\d\d", strip, re.I)
    assert "×" in page.inner_text("#status")
    # The measured speedup as data, for scripts: the same number the strip and the status show.
    value = float(page.get_attribute("#speedup", "data-value"))
    assert f"{value:.2f}×" in page.inner_text("#speedup") and f"{value:.2f}×" in page.inner_text("#status")
    assert page.get_attribute("#speedup", "data-final") == "1"          # the race's own figure, not a live one


def test_stop_halts_both_lanes(page, slow_target):
    run_race(page, "import os\n", max_new=200)
    page.wait_for_function("document.querySelectorAll('#base-pane [data-kind]').length > 5", timeout=30_000)
    page.click("#stop")
    page.wait_for_selector("#status .status-done", timeout=15_000)
    assert "Stopped" in page.inner_text("#status")
    assert len(kinds(page, "base-pane")) < 200
    assert len([k for k in kinds(page, "spec-pane") if k != "rejected"]) < 200
    # The app still serves: a new run completes.
    run_race(page, "import os\n", max_new=16)
    wait_finished(page)


def test_injection_prompt_is_shown_as_text(page):
    run_race(page, XSS, max_new=16)
    wait_finished(page)
    assert page.dialogs == []
    assert page.locator("img[src=x]").count() == 0
    assert page.locator("#spec-pane script, #base-pane script, #status script").count() == 0
    assert page.input_value("#prompt textarea") == XSS


def test_errors_show_in_the_page(page):
    run_race(page, "   ")
    page.wait_for_selector("#status .status-error", timeout=15_000)
    assert "empty" in page.inner_text("#status")


@pytest.mark.parametrize("width", [1400, 1024, 390])
def test_long_runs_scroll_inside_their_pane(browser, app_url, width):
    """A long run stays inside its pane (it scrolls, following the newest token), never over the legend."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    pg = context.new_page()
    pg.goto(app_url)
    pg.wait_for_selector("#run")
    run_race(pg, "import os\n", max_new=200)
    wait_finished(pg)
    geometry = pg.evaluate("""() => {
        const box = id => document.querySelector(id).getBoundingClientRect();
        const pane = document.querySelector('#spec-pane .prose.token-pane') || document.querySelector('#spec-pane');
        const last = [...document.querySelectorAll('#spec-pane [data-kind]')].pop().getBoundingClientRect();
        return {specBottom: box('#spec-pane').bottom, baseBottom: box('#base-pane').bottom, legendTop: box('#legend').top,
                lastTop: last.top, lastBottom: last.bottom,
                scrolls: pane.scrollHeight > pane.clientHeight,
                atEnd: pane.scrollHeight - pane.scrollTop - pane.clientHeight < 4};
    }""")
    context.close()
    assert geometry["specBottom"] <= geometry["legendTop"] and geometry["baseBottom"] <= geometry["legendTop"]
    assert geometry["scrolls"] and geometry["atEnd"]
    # The newest token is on screen inside the pane, not spilled over the legend.
    assert geometry["lastBottom"] <= geometry["specBottom"] + 1 and geometry["lastTop"] < geometry["legendTop"]


def test_step_mode_advances_rounds(page):
    page.click("button[role=tab]:has-text('Step mode')")
    page.click("#step")
    page.wait_for_selector("#step-explain ol li", timeout=30_000)
    page.wait_for_function("document.querySelector('#step-explain').innerText.includes('Round 1:')", timeout=30_000)
    first = page.inner_text("#step-explain")
    assert re.search(r"draft", first) and ("accepted" in first or "rejected" in first)
    page.locator("#step-explain").click()                  # focus outside any input: the right arrow steps
    page.keyboard.press("ArrowRight")
    page.wait_for_function("document.querySelector('#step-explain').innerText.includes('Round 2:')", timeout=30_000)
    rounds = page.eval_on_selector_all("#step-pane [data-round]", "els => els.map(e => +e.dataset.round)")
    assert set(rounds) == {1, 2}
    # Every colour the tab shows (the pane's verdicts, the draft's pending chips) has its key in the tab.
    kinds = "els => [...new Set(els.flatMap(e => [...e.classList].filter(c => c.startsWith('tok-'))))]"
    shown = set(page.eval_on_selector_all("#step-pane .tok, #step-explain .tok", kinds))
    keyed = set(page.eval_on_selector_all("#step-legend .tok", kinds))
    assert page.is_visible("#step-legend") and "tok-pending" in shown and shown <= keyed, (shown, keyed)
    # A drafted lone space ("·", as engine/detokenize.visible draws it) is a chip one can see and tap, not a
    # dot 4 px wide: every pending chip is at least 0.75 of its font size wide, whatever the draft made.
    page.eval_on_selector("#step-explain", "e => e.insertAdjacentHTML('beforeend', "
                          "'<span class=\"tok tok-pending\" id=\"lone-space\">·</span>')")
    narrow = page.eval_on_selector_all(
        "#step-pane .tok-pending, #step-explain .tok-pending",
        "els => els.filter(e => e.getBoundingClientRect().width < 0.75 * parseFloat(getComputedStyle(e).fontSize))"
        ".map(e => e.textContent)")
    assert narrow == [], narrow


def test_lossless_check_and_trace_download(page, tmp_path):
    page.click("button[role=tab]:has-text('Lossless?')")
    # the tab renders its slider a moment after the click: a value typed before then was lost
    page.wait_for_selector("#lossless-samples input[type=range]", state="visible")
    set_slider(page, "lossless-samples", 50)
    page.click("#lossless-run")
    # The last batch's text has the verdict: wait for it, then read the count (a run of the slider's
    # old 300 samples once timed out here waiting for "50 samples", with nothing to say what ran).
    page.wait_for_function("document.querySelector('#lossless-result').innerText.includes('Verdict')", timeout=90_000)
    assert "50 samples" in page.inner_text("#lossless-result"), page.inner_text("#lossless-result")
    page.wait_for_selector("#plot-lossless .js-plotly-plot .main-svg", timeout=20_000)
    assert "Chi-square" in page.inner_text("#lossless-result")
    page.click("button[role=tab]:has-text('Race')")
    run_race(page, "def add(a, b):\n    return", max_new=24)
    wait_finished(page)
    with page.expect_download() as info:
        page.click("#download-trace")
    path = tmp_path / "trace.json"
    info.value.save_as(path)
    trace = json.loads(path.read_text())
    assert trace["events"][-1]["kind"] == "done" and trace["config"]["max_new_tokens"] == 24
    assert str(tmp_path.parent.parent) not in path.read_text() and "/tmp" not in json.dumps(trace["models"])


def test_a_downloaded_trace_loads_back_into_the_page(page, browser, app_url, tmp_path):
    """The trace a race downloads, picked in "Load a trace" on a fresh page, fills both panes, the
    strip and the ledger as the race did, with no model run; a file that is no trace gets one line."""
    run_race(page, "def add(a, b):\n    return", max_new=32)
    wait_finished(page)
    assert page.get_attribute("#download-trace", "href").startswith("specviz/trace/")
    with page.expect_download() as info:
        page.click("#download-trace")
    path = tmp_path / "specviz-trace.json"
    info.value.save_as(path)
    ours = lambda pg, pane: re.sub(r' id="html-\w+"', "", pg.inner_html(f"#{pane}"))   # noqa: E731 (Gradio's own ids)
    shown = {pane: ours(page, pane) for pane in ("spec-pane", "base-pane", "stats", "ledger")}
    before = TARGET_PASSES[0]
    fresh = browser.new_context(viewport={"width": 1400, "height": 1300}).new_page()
    try:
        fresh.goto(app_url)
        fresh.wait_for_selector("#trace-file", state="attached")
        bad = tmp_path / "notes.json"
        bad.write_text('{"hello": "<b>world</b>"}')
        fresh.set_input_files("#trace-file", str(bad))
        fresh.wait_for_selector("#status .status-error", timeout=15_000)
        assert "not a specviz trace" in fresh.inner_text("#status") and "\n" not in fresh.inner_text("#status")
        fresh.set_input_files("#trace-file", str(path))
        fresh.wait_for_selector("#status .status-done", timeout=15_000)
        fresh.wait_for_selector("#race-ran[data-replayed='1']", timeout=5_000)
        assert kinds(fresh, "base-pane") == ["target"] * 32 and kinds(fresh, "spec-pane")
        for pane, html in shown.items():
            assert ours(fresh, pane) == html, pane
        fresh.wait_for_selector("#plot-kinds .js-plotly-plot .main-svg", timeout=20_000)
        assert TARGET_PASSES[0] == before           # replayed: no model ran
    finally:
        fresh.context.close()


def test_the_max_new_tokens_slider_shows_the_number_that_runs(page):
    """A typed 13 runs 13 tokens, and the slider's thumb says 13 (it snapped to 16 on a step of 8)."""
    run_race(page, "def add(a, b):\n    return", max_new=13)
    assert page.locator("#max-new input[type=range]").input_value() == "13"
    wait_finished(page)
    page.wait_for_function("document.querySelectorAll('#base-pane [data-kind]').length == 13", timeout=10_000)


def test_closing_the_tab_frees_the_worker(browser, app_url, slow_target):
    """A visitor who closes the tab mid-run: the engine stops within a round, the next user runs at once."""
    context = browser.new_context()
    pg = context.new_page()
    pg.goto(app_url)
    pg.wait_for_selector("#run")
    pg.fill("#prompt textarea", "import os\n")
    set_slider(pg, "max-new", 200)
    pg.click("#run")
    pg.wait_for_function("document.querySelectorAll('#base-pane [data-kind]').length > 5", timeout=30_000)
    context.close()                       # the tab goes away mid-race
    time.sleep(1.0)
    settled = TARGET_PASSES[0]
    time.sleep(1.5)
    assert TARGET_PASSES[0] == settled     # no more target passes: the run was stopped
    from gradio_client import Client          # and the decoding slot is free again: the next request is served
    out = Client(app_url, verbose=False, download_files=False).predict(
        "def f(x):", "tiny", 4, 0.0, 0, 1.0, 8, 0, "model", api_name="/generate")
    assert len(out["token_ids"]) == 8



def test_workshop_predict_run_answer_and_reopen(page):
    page.click("button[role=tab]:has-text('Workshop')")
    page.wait_for_selector("#ws-question h3")
    assert "Exercise 1" in page.inner_text("#ws-question")
    page.click("#ws-run")                                        # no prediction yet: refused
    page.wait_for_selector("#ws-result .status-error", timeout=15_000)
    assert "prediction first" in page.inner_text("#ws-result")
    page.fill("#ws-number textarea, #ws-number input", "1.5")
    page.click("#ws-run")
    page.wait_for_selector("#ws-measured", timeout=60_000)
    assert page.inner_text("#ws-predicted") == "1.5" and "×" in page.inner_text("#ws-measured")
    assert "target" in page.inner_text(".ws-why")
    assert page.inner_text("#ws-ran").startswith("Ran: tiny test pair") and "k = 4, greedy" in page.inner_text("#ws-ran")
    page.wait_for_function("document.querySelector('#ws-pick').innerText.includes('The race ✓')", timeout=10_000)
    page.click("#ws-pick label:has-text('Exercise 3')")          # a choice question
    page.wait_for_function("document.querySelector('#ws-question').innerText.includes('Exercise 3')", timeout=10_000)
    assert page.locator("#ws-choice").is_visible() and not page.locator("#ws-number").is_visible()
    page.click("#ws-pick label:has-text('Exercise 1')")          # reopened: the answer is still there
    page.wait_for_selector("#ws-measured", timeout=10_000)
    assert page.inner_text("#ws-predicted") == "1.5"
    measured = page.inner_text("#ws-measured")
    page.reload()                                                # kept in the browser across a reload
    page.wait_for_selector("#run")
    page.click("button[role=tab]:has-text('Workshop')")
    page.wait_for_selector("#ws-measured", timeout=15_000)
    assert page.inner_text("#ws-predicted") == "1.5" and page.inner_text("#ws-measured") == measured
    assert "The race ✓" in page.inner_text("#ws-pick")


def test_workshop_k_sweep_plots_measured_points_on_the_theory(page):
    page.click("button[role=tab]:has-text('Workshop')")
    page.click("#ws-pick label:has-text('Exercise 6')")
    page.wait_for_function("document.querySelector('#ws-question').innerText.includes('best k')", timeout=10_000)
    page.click("#ws-choice label:has-text('4')")
    page.click("#ws-run")
    page.wait_for_selector("#ws-measured", timeout=120_000)
    assert re.search(r"k = \d measured; within noise", page.inner_text("#ws-measured"))
    page.wait_for_selector("#ws-plot .js-plotly-plot .main-svg", timeout=20_000)
    names = page.eval_on_selector_all("#ws-plot .legendtext", "els => els.map(e => e.textContent)")
    assert {"speedup, measured", "speedup, theory", "tokens/round, measured", "tokens/round, theory"} <= set(names)
    measured = page.evaluate("""() => { const gd = document.querySelector('#ws-plot .js-plotly-plot');
        return gd.data.find(t => t.name === 'speedup, measured').x; }""")
    assert measured == [1, 2, 3, 4, 5, 6, 7, 8]


def test_the_empty_prompt_s_tip_follows_the_chat_switch_and_keeps_the_text(browser, tiny_dirs):
    """A chat pair is asked, a raw model continued: the box's placeholder says which (it once gave
    code advice, 'end mid-line or after a colon', over SmolLM2's chat questions). Text typed stays."""
    from tests.helpers import app_with
    from specviz.models.presets import Preset
    from specviz.view.serve import serve
    code = Preset("code", "code pair", tiny_dirs["target"], tiny_dirs["cut"], 4, ("def add(a, b):",))
    chatty = Preset("chatty", "chatty pair", tiny_dirs["target"], tiny_dirs["cut"], 4, ("What is a star?",), chat=True)
    demo, url = serve(app_with({"code": code, "chatty": chatty}))
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    try:
        pg = context.new_page()
        pg.goto(url)
        box = pg.locator("#prompt textarea")
        assert "continues your text" in box.get_attribute("placeholder")
        box.fill("my own words")
        pg.locator("#preset input").click()
        pg.get_by_role("option", name="chatty pair").click()
        pg.wait_for_function("document.querySelector('#prompt textarea').placeholder.includes('Ask a question')",
                             timeout=10_000)
        assert box.input_value() == "my own words"
        pg.locator("#preset input").click()
        pg.get_by_role("option", name="code pair").click()
        pg.wait_for_function("document.querySelector('#prompt textarea').placeholder.includes('continues')",
                             timeout=10_000)
        assert box.input_value() == "my own words"
    finally:
        context.close()
        demo.close()


def test_a_pair_measured_after_the_page_opened_offers_its_k_without_a_reload(browser, tiny_dirs, monkeypatch):
    """A pair is measured once loaded (app/k_advice.py). A visitor whose race loaded it saw the preset's
    k and no line about it until they picked the pair again; the page now offers the measured k once
    measured, as a line and a "use k = N" button: the slider stays at the preset's k (every laptop in a
    room starts from the same race) until the button is clicked. The measurement is slowed here so that
    it ends after the race's own check: the page's watch has to find it."""
    from specviz.app import advisor
    from tests.helpers import app_with
    from specviz.engine.analysis.calibrate import MachineCosts
    from .helpers import steady
    advise = advisor.from_model       # called after the measurement, outside the decoding slot
    monkeypatch.setattr(advisor, "from_model", lambda *a, **kw: (time.sleep(3), advise(*a, **kw))[1])
    # A quiet machine's timing (this busy one's tiny-model passes are noise, and then no k is advised).
    quiet = MachineCosts(plain_s=0.01, draft_s=0.001, pass_s={1: 0.01, **{n: 0.01 * (1 + 0.04 * n) for n in range(2, 14)}},
                         round_draft_s={k: 0.0012 * k for k in range(1, 13)})
    monkeypatch.setattr(advisor, "measure_costs", lambda pair, k_max: steady(quiet))
    from specviz.models.presets import Preset
    from specviz.view.serve import serve
    preset = Preset("tiny", "tiny pair", tiny_dirs["target"], tiny_dirs["cut"], 7, ("def add(a, b):\n    return",),
                    acceptance=0.6)
    app = app_with({"tiny": preset}, advise_k=True)
    demo, url = serve(app)                  # nothing loaded yet: the first race loads (and so measures) it
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    try:
        pg = context.new_page()
        pg.goto(url)
        pg.wait_for_selector("#run")
        assert "k = 7 is this pair's own setting: not measured on this machine yet" in pg.inner_text("#k-note .prose")
        run_race(pg, "def add(a, b):\n    return", max_new=8)
        wait_finished(pg)
        pg.wait_for_function("document.querySelector('#k-note .prose').innerText.includes('suits this machine')",
                             timeout=60_000)
        offered = app.advisor.advice["tiny"].k
        assert f"k = {offered} suits this machine" in pg.inner_text("#k-note .prose")
        assert pg.input_value("#k input[type=number]") == "7"
        assert pg.inner_text("#use-k") == f"use k = {offered}"
        pg.click("#use-k")
        pg.wait_for_function("(k) => document.querySelector('#k input[type=number]').value === k", arg=str(offered))
        pg.wait_for_selector("#use-k", state="hidden", timeout=5_000)     # the slider holds it: nothing to offer
        set_slider(pg, "k", 7)
        pg.wait_for_selector("#use-k", state="visible", timeout=5_000)    # moved away: offered again
        # A page opened now, on the page built before the measurement, gets the line at load, and the
        # preset's k in the slider.
        fresh = context.new_page()
        fresh.goto(url)
        fresh.wait_for_selector("#run")
        fresh.wait_for_function("document.querySelector('#k-note .prose')?.innerText.includes('suits this machine')",
                                timeout=15_000)
        assert fresh.input_value("#k input[type=number]") == "7" and fresh.is_visible("#use-k")
        fresh.close()
        # The Explain tab's calculator takes the same measurement on request.
        pg.click("button[role=tab]:has-text('Explain')")
        pg.click("#whatif-here")
        pg.wait_for_function("document.querySelector('#whatif-here-note').innerText.includes('the k advised')",
                             timeout=15_000)
        assert pg.input_value("#whatif-a input[type=number]") == "0.6"
        assert float(pg.input_value("#whatif-c input[type=number]")) == round(min(app.advisor.advice["tiny"].c, 1.0), 2)
        # Both lines of measured figures read as notes, smaller than the page's text (the calculator's
        # line had the k note's class, whose style was scoped to #k-note, so it came out at body size).
        size = "e => parseFloat(getComputedStyle(e).fontSize)"
        note_px = pg.eval_on_selector("#whatif-here-note .prose > div", size)
        body_px = pg.eval_on_selector("#whatif-here-note .prose", size)
        assert note_px < body_px
        assert pg.eval_on_selector("#k-note .prose > div", size) == note_px
    finally:
        context.close()
        demo.close()
