"""A race watched live in Chromium: what streaming does to the page, independent of timing.

Updates append tokens to the panes (the nodes already shown stay the same nodes), the charts are not
touched while the race streams, nothing arrives after "Stopped.", and the round timeline under the
panes has one verify block per round and one plain pass per plain token."""
import re
import time

import pytest

from tests.browser_support import (kinds, run_race, app_url, browser, page, slow_target,  # noqa: F401
                                   wait_finished)   # fixtures among them

pytestmark = pytest.mark.slow    # Chromium driving the served app

# Installed before Run: counts pane tokens removed and chart nodes touched, once the race's first token is in.
WATCH = """() => {
  const w = window.__watch = { removed: 0, charts: 0, started: false };
  const seen = (r) => [...r.addedNodes].some((n) => n.nodeType === 1 && (n.matches('[data-kind]') || n.querySelector('[data-kind]')));
  new MutationObserver((records) => {
    for (const r of records) {
      if (seen(r)) w.started = true;
      if (w.started) w.removed += [...r.removedNodes].filter((n) => n.nodeType === 1 && n.matches('[data-kind]')).length;
    }
  }).observe(document.querySelector('#spec-pane'), { childList: true, subtree: true });
  const charts = new MutationObserver((records) => {
    // the race's last update (its status, its plots) ends the streaming
    if (w.started && !document.querySelector('#status .status-done')) w.charts += records.length;
  });
  document.querySelectorAll('[id^=plot-]').forEach((el) => charts.observe(el, { childList: true, subtree: true, attributes: true }));
}"""


def test_updates_append_tokens_and_leave_charts_alone(page, slow_target):
    urls = []
    listen = lambda request: urls.append(request.url)          # noqa: E731
    page.on("request", listen)
    run_race(page, "import os\n", max_new=48)
    page.evaluate(WATCH)
    page.wait_for_function("document.querySelectorAll('#spec-pane [data-kind]').length >= 3", timeout=30_000)
    # the first token shown, marked on the node itself: an update that re-rendered the pane would drop it
    page.evaluate("() => { window.__first = document.querySelector('#spec-pane [data-kind]'); }")
    shown = len(kinds(page, "spec-pane"))
    wait_finished(page)
    assert len(kinds(page, "spec-pane")) > shown
    assert page.evaluate("() => window.__first.isConnected && document.querySelector('#spec-pane [data-kind]') === window.__first")
    watch = page.evaluate("() => window.__watch")
    assert watch["started"] and watch["removed"] == 0
    assert watch["charts"] == 0          # no chart touched while the race streamed
    page.wait_for_selector("#plot-race .js-plotly-plot .main-svg", timeout=20_000)     # drawn at the end
    page.remove_listener("request", listen)
    # the tokens came down the race's own live feed (view/live_channel.py), read once
    assert len([u for u in urls if "/specviz/live/" in u]) == 1


def test_nothing_arrives_after_stopped(page, slow_target):
    run_race(page, "import os\n", max_new=200)
    page.wait_for_function("document.querySelectorAll('#base-pane [data-kind]').length > 5", timeout=30_000)
    page.click("#stop")
    # said at once, by the page itself, before the server has ended the lanes
    assert page.inner_text("#status", timeout=500).strip() == "Stopped."
    counts = (len(kinds(page, "spec-pane")), len(kinds(page, "base-pane")))
    blocks = page.locator("#timeline .tl-b").count()
    page.wait_for_selector("#status .status-done", timeout=15_000)       # the server's own last update
    time.sleep(0.5)
    assert "Stopped" in page.inner_text("#status")
    assert (len(kinds(page, "spec-pane")), len(kinds(page, "base-pane"))) == counts
    assert page.locator("#timeline .tl-b").count() == blocks
    for meter in ("#spec-meter", "#base-meter"):
        assert "running" not in page.inner_text(meter)
        assert "stopped" in page.inner_text(meter)
    run_race(page, "import os\n", max_new=16)        # the next race streams again
    wait_finished(page)
    assert len([k for k in kinds(page, "spec-pane") if k != "rejected"]) == 16


def test_timeline_draws_each_round_and_each_plain_pass(page):
    run_race(page, "def add(a, b):\n    return", max_new=32)
    wait_finished(page)
    rounds = int(re.search(r"(\d+) rounds", page.inner_text("#spec-meter")).group(1))
    assert page.locator("#timeline .tl-verify").count() == rounds
    assert page.locator("#timeline .tl-pass").count() == len(kinds(page, "base-pane")) == 32
    # every round drew as many draft steps as it drafted, and under its pass the fate of each token it decided
    fates = page.eval_on_selector_all("#timeline .tl-fates-spec .tl-f", "els => els.map(e => e.className)")
    spec = [k for k in kinds(page, "spec-pane")]
    assert len(fates) == len(spec)
    assert page.locator("#timeline .tl-draft").count() >= rounds
    # the axis was fitted: the last block ends inside the box, ticks are drawn
    assert page.locator("#timeline .tl-tick").count() >= 2
    box = page.locator("#timeline .live-box").bounding_box()
    last = page.locator("#timeline .tl-b").last.bounding_box()
    assert last["x"] + last["width"] <= box["x"] + box["width"] + 1
    assert box["height"] >= 100


def test_step_mode_draws_the_revealed_rounds_on_the_clock(page):
    page.fill("#prompt textarea", "def add(a, b):\n    return")
    page.click("button[role=tab]:has-text('Step mode')")
    for n in (1, 2, 3):
        page.click("#step")
        page.wait_for_function("(n) => document.querySelectorAll('#step-timeline .tl-verify').length === n",
                               arg=n, timeout=60_000)
    # each revealed round: its draft steps, its one verify pass, and a fate under it for each token it decided
    decided = page.locator("#step-pane [data-kind]").count()
    assert page.locator("#step-timeline .tl-fates-spec .tl-f").count() == decided
    assert page.locator("#step-timeline .tl-draft").count() >= 3
    assert page.locator("#step-timeline .tl-tick").count() >= 2
    page.click("#step-reset")
    page.wait_for_function("document.querySelectorAll('#step-timeline .tl-b').length === 0", timeout=10_000)


def _docked(page) -> dict:
    return page.evaluate("""() => { const p = document.querySelector('#tip-pop'), b = p.getBoundingClientRect();
      const pane = document.querySelector('.prose.token-pane');
      return { docked: p.classList.contains('docked') && !p.hidden, left: b.left, right: b.right, bottom: b.bottom,
               width: window.innerWidth, height: window.innerHeight, rows: p.querySelectorAll('.pic-row').length,
               size: parseFloat(getComputedStyle(p).fontSize), pane: parseFloat(getComputedStyle(pane).fontSize) }; }""")


def test_a_picked_token_docks_its_p_and_q_picture_in_the_race_and_in_step_mode(page):
    run_race(page, "def add(a, b):\n    return", max_new=24, temperature=1.0)
    wait_finished(page)
    page.locator("#spec-pane [data-kind=accepted]").first.click()
    page.wait_for_selector("#tip-pop.docked", state="visible")
    d = _docked(page)
    assert d["docked"] and d["rows"] >= 2 and d["size"] == d["pane"]          # at the panes' text size
    assert 0 <= d["left"] and d["right"] <= d["width"] and d["bottom"] <= d["height"]
    page.keyboard.press("Escape")
    assert page.locator("#tip-pop").is_hidden()
    page.click("button[role=tab]:has-text('Step mode')")
    page.click("#step")
    page.wait_for_selector("#step-pane [data-kind=accepted], #step-pane [data-kind=rejected]", timeout=60_000)
    page.locator("#step-pane [data-kind=accepted], #step-pane [data-kind=rejected]").first.click()
    page.wait_for_selector("#tip-pop.docked", state="visible")
    assert _docked(page)["rows"] >= 2
    page.click("#tip-pop .dock-close")
    assert page.locator("#tip-pop").is_hidden()


def test_a_phone_gets_the_picture_as_a_bottom_sheet(browser, app_url):
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    pg = context.new_page()
    try:
        pg.goto(app_url)
        pg.wait_for_selector("#run")
        run_race(pg, "def add(a, b):\n    return", max_new=24, temperature=1.0)
        wait_finished(pg)
        token = pg.locator("#spec-pane [data-kind=accepted]").first
        token.scroll_into_view_if_needed()
        token.tap()
        pg.wait_for_selector("#tip-pop.docked", state="visible")
        d = _docked(pg)
        # the screen's width and foot, 10 px clear of its rounded corners
        assert abs(d["left"] - 10) <= 1 and abs(d["right"] - (d["width"] - 10)) <= 1 and abs(d["bottom"] - (d["height"] - 10)) <= 1
        assert d["rows"] >= 2
    finally:
        context.close()


def test_projector_folds_the_why_under_a_one_line_headline_and_nothing_moves(page):
    page.click("#projector input")
    page.wait_for_selector("body.projector", state="attached")
    run_race(page, "def add(a, b):\n    return", max_new=32)
    page.wait_for_selector("#spec-pane [data-kind]", state="attached", timeout=30_000)
    top = page.evaluate("document.querySelector('#spec-pane').getBoundingClientRect().top")
    wait_finished(page)
    assert abs(page.evaluate("document.querySelector('#spec-pane').getBoundingClientRect().top") - top) <= 2
    assert page.locator("#race-why").is_hidden() and page.locator("#race-ran").is_hidden()
    toggle = page.locator("#race-summary .why-toggle")
    assert toggle.is_visible()
    toggle.click()
    assert page.locator("#race-why").is_visible() and toggle.get_attribute("aria-expanded") == "true"
