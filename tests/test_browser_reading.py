"""Reading the race in a real browser: the speculative pane's Text and Rounds views, a judged token's
popover drawing the real p and q of its position, the verdict's headline and its why above the fold at
1366x768, the Explain tab's p-and-q toy, and the title's sentence on a phone (Playwright driving the
system Chromium)."""
import re

import pytest

from tests.browser_support import (app_url, browser, page, run_race, wait_finished,  # noqa: F401  fixtures
                                   wait_settings_fold)

pytestmark = pytest.mark.slow    # Chromium driving the served app


def test_text_view_folds_rejected_drafts_and_rounds_view_shows_them(page):
    run_race(page, "def add(a, b):\n    return", max_new=48, temperature=1.0)
    wait_finished(page)
    page.wait_for_selector(".view-switch button[data-view=text][aria-pressed=true]")
    assert page.get_attribute("#spec-pane", "data-view") == "text"           # the default a visitor meets
    rejected = page.locator("#spec-pane [data-kind=rejected]")
    assert rejected.count() > 0
    # Text: a thrown-away draft is a small mark, its own text takes no room, round bars are hidden.
    assert rejected.first.evaluate("e => getComputedStyle(e).fontSize") == "0px"
    marks = page.locator("#spec-pane .round-mark")
    assert marks.count() == 0 or marks.first.evaluate("e => getComputedStyle(e).display") == "none"
    glyph = page.locator("#spec-pane .tok-accepted .ws, #spec-pane .tok-resampled .ws").first
    if glyph.count():
        assert glyph.evaluate("e => getComputedStyle(e, '::after').content") in ("none", "normal")
    # Calm: kept drafts read as plain text; a correction is tinted, counts the drafts thrown away there,
    # is tall enough to tap, and opens those drafts with itself; the hint says "click" with a mouse.
    accepted = page.locator("#spec-pane [data-kind=accepted]").first
    assert accepted.evaluate("e => getComputedStyle(e).backgroundColor") in ("rgba(0, 0, 0, 0)", "transparent")
    fixed = page.locator("#spec-pane [data-kind=resampled][data-thrown]").first
    thrown = int(fixed.get_attribute("data-thrown"))
    assert thrown >= 1 and fixed.evaluate("e => getComputedStyle(e, '::after').content") == f'"{thrown}"'
    assert fixed.evaluate("e => e.getBoundingClientRect().height") >= 24
    space = page.locator("#spec-pane [data-kind=resampled] > .ws:not(.nl)").first
    if space.count():        # the underline stops at the word: its leading space is a box of its own
        assert space.evaluate("e => getComputedStyle(e).display") == "inline-block"
    assert page.inner_text(".view-switch:not(.view-spacer) .view-hint").endswith("click it")
    fixed.click()
    pop = page.locator("#tip-pop")
    pop.wait_for(state="visible")
    assert "thrown away here" in pop.inner_text() and "correction" in pop.inner_text()
    assert pop.locator(".pic-row.pic-draft").count() >= 1                 # the thrown draft's own picture
    page.keyboard.press("Escape")
    # Rounds: every draft inline again, and the choice survives a reload.
    page.click(".view-switch button[data-view=rounds]")
    assert page.get_attribute("#spec-pane", "data-view") == "rounds"
    assert rejected.first.evaluate("e => getComputedStyle(e).fontSize") != "0px"
    page.reload()
    page.wait_for_selector(".view-switch button[data-view=rounds][aria-pressed=true]")
    page.click(".view-switch button[data-view=text]")


def test_a_tokens_popover_draws_p_and_q_with_the_draft_marked(page):
    run_race(page, "def add(a, b):\n    return", max_new=32, temperature=1.0)
    wait_finished(page)
    token = page.locator("#spec-pane [data-kind=accepted]").first     # in the Text view a rejected draft is hidden
    token.click()
    pop = page.locator("#tip-pop")
    pop.wait_for(state="visible")
    rows = pop.locator(".pic-row")
    assert rows.count() >= 2
    assert pop.locator(".pic-row.pic-draft").count() == 1                       # the judged draft, marked
    assert pop.locator(".pic-draw").count() == 1                               # u against the keep chance
    note = pop.locator(".pic-note").inner_text()
    assert "min(p, q)" in note and "max(0, p − q)" in note


def _open(browser, app_url, width, height):
    context = browser.new_context(viewport={"width": width, "height": height}, has_touch=width < 640,
                                  is_mobile=width < 640)
    pg = context.new_page()
    pg.goto(app_url)
    pg.wait_for_selector("#run")
    wait_settings_fold(pg)
    return context, pg


def test_the_headline_and_its_why_are_read_at_a_glance_on_a_laptop(browser, app_url):
    """1366x768 after a greedy race: the status says the lanes wrote the same text (as data too), and the
    verdict and its why are on the first screen, not ~1,200 px down under the legend and cards."""
    context, pg = _open(browser, app_url, 1366, 768)
    try:
        run_race(pg, "def add(a, b):\n    return", max_new=32)
        wait_finished(pg)
        summary = pg.locator("#race-summary")
        assert summary.get_attribute("data-same-text") == "1" and summary.get_attribute("data-per-token") == "0"
        assert pg.inner_text("#race-headline").split(": ", 1)[1].startswith("Same text, ")
        assert pg.get_attribute("#speedup", "data-final") == "1"          # the script's figure still there
        pg.evaluate("window.scrollTo(0, 0)")
        for part in ("#race-headline", "#race-why"):
            box = pg.locator(part).bounding_box()
            assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 768, (part, box)
        assert pg.inner_text("#race-why").startswith("Why:")
        # sampled: each lane's length and stop reason, compared per token
        run_race(pg, "def add(a, b):\n    return", max_new=32, temperature=1.0)
        wait_finished(pg)
        assert pg.get_attribute("#race-summary", "data-per-token") == "1"
        assert "per token" in pg.inner_text("#race-headline")
    finally:
        context.close()


def _toy_rows(page) -> list[tuple[float, float, float, float]]:
    """Each toy row's (q, kept drafts, corrections, what comes out), as the row writes them."""
    out = []
    for text in page.eval_on_selector_all("#pq-toy .toy-row .pic-num", "els => els.map(e => e.textContent)"):
        q, kept, fixed, total = map(float, re.findall(r"\d+\.\d+", text)[:4])
        out.append((q, kept, fixed, total))
    return out


def test_the_explain_tab_has_a_p_and_q_toy_that_always_gives_back_p(page):
    """Dragging q moves the kept share and the corrections, never what comes out: p."""
    page.click("button[role=tab]:has-text('Explain')")
    page.wait_for_selector("#pq-toy .toy-row", timeout=10_000)
    before = _toy_rows(page)
    assert len(before) == 5
    head = page.inner_text("#pq-toy .toy-head")
    page.locator("#pq-toy .toy-row input[type=range]").first.fill("0.9")   # most of q on the first token
    page.wait_for_function("(h) => document.querySelector('#pq-toy .toy-head').textContent !== h", arg=head)
    after = _toy_rows(page)
    assert after[0][0] == 0.9 and [r[1] for r in after] != [r[1] for r in before]     # q and the kept share moved
    for (_, kept, fixed, total), old in zip(after, before):
        assert abs(kept + fixed - total) <= 0.011 and total == old[3]      # kept + corrected: the same p as before


def test_a_phone_says_what_the_page_is(browser, app_url):
    context, pg = _open(browser, app_url, 390, 844)
    try:
        sentence = pg.locator("#title p")
        assert sentence.is_visible() and "draft model guesses tokens" in sentence.inner_text()
        box = sentence.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390            # within the screen, wrapped
    finally:
        context.close()


def test_a_tap_on_a_folded_draft_opens_its_details_on_a_phone(browser, app_url):
    """A tap also sends mouseover; opening there once put the details under the finger, the tap's click
    never came and they closed again: on a phone the × of a thrown-away draft opened nothing. The thrown
    drafts open from the corrected word that stands for them; the hint says "tap" on a touch screen."""
    context, pg = _open(browser, app_url, 390, 844)
    try:
        run_race(pg, "def add(a, b):\n    return", max_new=48, temperature=1.0)
        wait_finished(pg)
        assert pg.inner_text(".view-switch:not(.view-spacer) .view-hint").endswith("tap it")
        mark = pg.locator("#spec-pane [data-kind=resampled][data-thrown]").first
        mark.scroll_into_view_if_needed()
        mark.tap()
        pop = pg.locator("#tip-pop")
        pop.wait_for(state="visible", timeout=5_000)
        assert pop.locator(".pic-row").count() >= 2 and "rejected" in pop.inner_text()
        pg.wait_for_timeout(1200)                           # still open once the tap's mouse events are past
        assert pop.is_visible()
    finally:
        context.close()
