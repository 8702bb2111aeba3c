"""A token tree in a real browser: the draft shape box, step mode drawing the round's tree with the
target's path, a node's details on tap, and a tree race's box under the ledger (tiny local models,
served as tests/test_browser.py serves them)."""
import pytest

from tests.browser_support import (kinds, run_race, set_slider, sync_api,  # noqa: F401
                                   app_url, browser, page, wait_finished)   # fixtures among them

pytestmark = pytest.mark.slow    # Chromium driving the served app


def _shape(page, text: str) -> None:
    box = page.locator("#tree textarea, #tree input").first
    box.fill(text)
    box.press("Tab")


def test_step_mode_draws_the_tree_and_its_path(page):
    page.wait_for_selector("#tree", state="visible")
    _shape(page, "2,2,1")
    page.fill("#prompt textarea", "def add(a, b):\n    return")
    page.click("button[role=tab]:has-text('Step mode')")
    page.click("#step")
    page.wait_for_selector("#step-explain .tree-draw .tree-node", timeout=60_000)
    text = page.inner_text("#step-explain")
    assert "the draft proposes a tree of 10 nodes (shape 2,2,1)" in text
    nodes = page.eval_on_selector_all(
        "#step-explain .tree-draw li.tree-node",
        "els => els.map(e => ({cls: e.className, depth: e.dataset.depth, node: e.dataset.node,"
        " level: (function(x){let n = 0; while (x && !x.classList.contains('tree-draw')) {"
        " if (x.tagName === 'UL') n++; x = x.parentElement;} return n;})(e)}))")
    drafted = [n for n in nodes if n["depth"] is not None]
    assert len(drafted) == 10 and {n["depth"] for n in drafted} == {"1", "2", "3"}
    assert all(int(n["depth"]) == n["level"] for n in drafted)        # each depth one indent further
    path = [n for n in nodes if "on-path" in n["cls"]]
    # The path: accepted nodes one level below the last, ending in the correction or the bonus.
    assert path and path[-1]["node"] in ("resampled", "bonus")
    assert [n["level"] for n in path] == list(range(1, len(path) + 1))
    assert all("fate-accepted" in n["cls"] for n in path[:-1])
    # Two first tokens at depth 1: one is kept or both are judged; the rest are drawn as what they were.
    assert {c.split()[1] for c in (n["cls"] for n in drafted)} <= {
        "fate-accepted", "fate-rejected", "fate-discarded", "fate-unjudged"}
    # The path is outlined on screen, and a node opens its details like a chain token.
    outline = page.eval_on_selector("#step-explain .tree-node.on-path > .tok",
                                    "e => getComputedStyle(e).outlineStyle")
    assert outline == "solid"
    first = page.locator("#step-explain .tree-draw li.tree-node > .tok").first
    first.click()
    pop = page.locator("#tip-pop")
    assert pop.is_visible() and pop.locator(".tip-text").text_content() == first.get_attribute("data-tip")
    # The key for the drawing is in the tab.
    assert "on the path" in page.inner_text("#step-legend")


def test_a_tree_race_shows_its_notes_and_its_box(page):
    page.wait_for_selector("#tree", state="visible")
    _shape(page, "2,2,1")
    run_race(page, "def add(a, b):\n    return", max_new=32)
    wait_finished(page)
    page.wait_for_selector("#tree-box #tree-choices", timeout=20_000)
    assert "1st choice" in page.inner_text("#tree-choices")
    assert "against a chain of the same depth" in page.inner_text("#tree-box")
    spec = kinds(page, "spec-pane")
    assert len([k for k in spec if k not in ("rejected",)]) == 32
    page.click(".view-switch button[data-view=rounds]")
    assert page.locator("#spec-pane .tree-note").first.is_visible()
    page.click(".view-switch button[data-view=text]")
    assert not page.locator("#spec-pane .tree-note").first.is_visible()


def test_a_bad_shape_is_refused_in_one_line(page):
    page.wait_for_selector("#tree", state="visible")
    _shape(page, "2,x")
    run_race(page, "def f():", max_new=8)
    page.wait_for_selector("#status .status-error", timeout=20_000)
    assert "draft shape must be chain" in page.inner_text("#status")
