"""Reading the race in a real browser: the speculative pane's Text and Rounds views, and a judged token's
popover drawing the real p and q of its position (Playwright driving the system Chromium)."""
import pytest

from tests.browser_support import (app_url, browser, page, run_race, wait_finished)  # noqa: F401  fixtures

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
    token = page.locator("#spec-pane [data-kind=rejected], #spec-pane [data-kind=accepted]").first
    token.click()
    pop = page.locator("#tip-pop")
    pop.wait_for(state="visible")
    rows = pop.locator(".pic-row")
    assert rows.count() >= 2
    assert pop.locator(".pic-row.pic-draft").count() == 1                       # the judged draft, marked
    assert pop.locator(".pic-draw").count() == 1                               # u against the keep chance
    note = pop.locator(".pic-note").inner_text()
    assert "min(p, q)" in note and "max(0, p − q)" in note
