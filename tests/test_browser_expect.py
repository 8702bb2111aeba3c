"""The line of what to expect from the pair, in a real browser: for each pair it reads that pair's
expect.json (chat first, code, the speedups when measured), follows a change of the pair, opens its source
on a click or a tap (nothing hover-only), keeps every text escaped, and fits a phone (390 px) and a laptop
(1366x768). It sits above the race's panes, not in the settings a phone folds away: a phone visitor reads
it on the first screen without opening anything, and every screen shows one copy."""
import json
import shutil

import pytest

from specviz.models.expect import draft_fingerprint, write_expect
from tests.browser_support import XSS, browser, wait_settings_fold  # noqa: F401
from tests.helpers import app_with, tiny_preset

pytestmark = pytest.mark.slow    # Chromium driving the served app


def record(folder, kinds: dict, **more) -> dict:
    return {"pair": "tiny", "draft_fingerprint": draft_fingerprint(folder), "prompts": ["benchmarks/x.json"],
            "k": 3, "temperature": 0.0, "max_new_tokens": 96, "measured": "2026-11-29", "machine": "a test CPU",
            "command": "python scripts/pair_expect.py --preset tiny", "kinds": kinds, **more}


@pytest.fixture(scope="module")
def served(tiny_dirs, tmp_path_factory):
    """Two tiny pairs, each draft a copy with its own expect.json: one measured on chat and code, one on
    code only with a speedup (and a command full of markup)."""
    from specviz.view.serve import serve
    root = tmp_path_factory.mktemp("expect")
    chat_draft, code_draft = root / "chat-draft", root / "code-draft"
    shutil.copytree(tiny_dirs["cut"], chat_draft)
    shutil.copytree(tiny_dirs["random"], code_draft)
    files = {"both": record(chat_draft, {"chat": {"acceptance": 0.4375, "speedup": None},
                                         "code": {"acceptance": 0.8125, "speedup": None}}),
             "code": record(code_draft, {"code": {"acceptance": 0.65, "speedup": 1.87}}, command=f"run {XSS}")}
    write_expect(chat_draft, files["both"])
    write_expect(code_draft, files["code"])
    both = tiny_preset({"target": tiny_dirs["target"], "cut": str(chat_draft)}, key="both", label="both kinds pair")
    code = tiny_preset({"target": tiny_dirs["target"], "cut": str(code_draft)}, key="code", label="code only pair")
    demo, url = serve(app_with({"both": both, "code": code}))
    yield url, files
    demo.close()


def open_at(browser, url, w, h):
    context = browser.new_context(viewport={"width": w, "height": h}, has_touch=w < 640, is_mobile=w < 640)
    pg = context.new_page()
    pg.dialogs = []
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    pg.goto(url)
    pg.wait_for_selector("#run")
    wait_settings_fold(pg)
    if not pg.locator("#preset input").is_visible():          # a phone folds the settings away
        pg.click("#settings > button.label-wrap")
        pg.wait_for_selector("#preset input", state="visible")
    return context, pg


def line_of(pg, key: str):
    pg.wait_for_selector(f"#pair-expect .pair-expect[data-pair='{key}']", timeout=10_000)
    return pg.locator("#pair-expect .pair-expect")


@pytest.mark.parametrize("size", [(1366, 768), (390, 844)], ids=["1366x768", "390x844"])
def test_each_pair_shows_its_own_figures_and_their_source(browser, served, size):
    url, files = served
    w, h = size
    context, pg = open_at(browser, url, w, h)
    try:
        line = line_of(pg, "both")
        text = line.locator(".pe-line").inner_text()
        assert "44% of drafts on chat and 81% on code (k = 3, greedy)" in text
        assert float(line.get_attribute("data-chat")) == files["both"]["kinds"]["chat"]["acceptance"]
        assert float(line.get_attribute("data-code")) == files["both"]["kinds"]["code"]["acceptance"]
        assert line.is_visible()
        box = line.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= w, box
        assert pg.evaluate("document.documentElement.scrollWidth") <= w      # nothing runs off the page
        source = line.locator(".pe-origin")
        assert not source.is_visible()
        summary = line.locator(".pe-source > summary")
        summary.tap() if w < 640 else summary.click()          # a tap or a click opens it: nothing hover-only
        assert source.is_visible() and "benchmarks/x.json" in source.inner_text()
        assert "2026-11-29" in source.inner_text() and "a test CPU" in source.inner_text()
        # The other pair: its own file's figures replace the line.
        pg.locator("#preset input").click()
        pg.get_by_role("option", name="code only pair").click()
        line = line_of(pg, "code")
        assert line.get_attribute("data-chat") is None
        assert float(line.get_attribute("data-code")) == files["code"]["kinds"]["code"]["acceptance"]
        text = line.locator(".pe-line").inner_text()
        assert "accepts 65% of drafts (k = 3, greedy)" in text and "1.87× on code" in text
        summary = line.locator(".pe-source > summary")
        summary.tap() if w < 640 else summary.click()
        shown = line.locator(".pe-origin").inner_text()
        assert "<script>alert(2)</script>" in shown                 # shown as text, never run
        assert pg.dialogs == [] and pg.locator("#pair-expect script, #pair-expect img").count() == 0
        box = line.bounding_box()
        assert box["x"] + box["width"] <= w and pg.evaluate("document.documentElement.scrollWidth") <= w
    finally:
        context.close()


def test_a_stale_file_shows_nothing_and_takes_no_room(browser, tiny_dirs, tmp_path):
    """Figures measured with other weights (a fingerprint that is not the draft's) are never shown."""
    from specviz.view.serve import serve
    folder = tmp_path / "draft"
    shutil.copytree(tiny_dirs["cut"], folder)
    stale = record(folder, {"chat": {"acceptance": 0.5}}, draft_fingerprint="0123456789ab")
    (folder / "expect.json").write_text(json.dumps(stale))
    preset = tiny_preset({"target": tiny_dirs["target"], "cut": str(folder)}, key="stale", label="stale pair")
    demo, url = serve(app_with({"stale": preset}))
    context, pg = open_at(browser, url, 1366, 768)
    try:
        pg.wait_for_selector("#pair-expect", state="attached")
        assert pg.locator("#pair-expect .pair-expect").count() == 0
        assert pg.locator("#pair-expect").evaluate("e => e.getBoundingClientRect().height") == 0
    finally:
        context.close()
        demo.close()


def test_a_share_link_that_names_a_pair_opens_on_that_pairs_line(browser, served):
    url, files = served
    context, pg = open_at(browser, url + "?pair=code", 1366, 768)
    try:
        line = line_of(pg, "code")
        assert float(line.get_attribute("data-code")) == files["code"]["kinds"]["code"]["acceptance"]
        assert pg.locator("#pair-expect .pair-expect").count() == 1
    finally:
        context.close()



def visible_lines(pg) -> list:
    """The copies of the expect line a visitor sees now."""
    return [line for line in pg.locator(".pair-expect").all() if line.is_visible()]


def open_phone(browser, url):
    """A phone's page as it opens: the settings folded away, nothing tapped."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    pg = context.new_page()
    pg.goto(url)
    pg.wait_for_selector("#run")
    wait_settings_fold(pg)
    return context, pg


def beside_the_race(pg, line, w: int, h: int) -> None:
    """On the first screen, inside its width, in the race's column and above its panes."""
    box, pane = line.bounding_box(), pg.locator("#spec-pane").bounding_box()
    results = pg.locator("#results").bounding_box()
    assert box["x"] >= results["x"] and box["x"] + box["width"] <= w, (box, results)
    assert box["y"] >= 0 and box["y"] + box["height"] <= h and box["y"] < pane["y"], (box, pane)


def test_a_phone_reads_the_line_beside_the_race_without_opening_anything(browser, served):
    url, files = served
    context, pg = open_phone(browser, url)
    try:
        assert not pg.locator("#preset input").is_visible()          # the settings are folded
        line = line_of(pg, "both")
        assert line.is_visible()
        assert "44% of drafts on chat and 81% on code (k = 3, greedy)" in line.locator(".pe-line").inner_text()
        assert float(line.get_attribute("data-chat")) == files["both"]["kinds"]["chat"]["acceptance"]
        beside_the_race(pg, line, 390, 844)
        assert len(visible_lines(pg)) == 1
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390
        # Another pair picked in the settings, folded again: the line above the race is that pair's.
        pg.click("#settings > button.label-wrap")
        pg.wait_for_selector("#preset input", state="visible")
        pg.locator("#preset input").click()
        pg.get_by_role("option", name="code only pair").click()
        line = line_of(pg, "code")
        assert len(visible_lines(pg)) == 1                              # still one copy, settings open
        pg.click("#settings > button.label-wrap")
        pg.wait_for_selector("#preset input", state="hidden")
        assert float(line.get_attribute("data-code")) == files["code"]["kinds"]["code"]["acceptance"]
        assert line.get_attribute("data-chat") is None
        beside_the_race(pg, line, 390, 844)
    finally:
        context.close()


def test_a_laptop_sees_one_copy_beside_the_race_on_the_first_screen(browser, served):
    url, _ = served
    context, pg = open_at(browser, url, 1366, 768)
    try:
        line = line_of(pg, "both")
        assert pg.locator("#preset input").is_visible()                # the settings are open here
        assert len(visible_lines(pg)) == 1 and line.is_visible()
        beside_the_race(pg, line, 1366, 768)
    finally:
        context.close()


def test_a_share_link_opens_a_phone_on_that_pairs_line_beside_the_race(browser, served):
    url, files = served
    context, pg = open_phone(browser, url + "?pair=code")
    try:
        line = line_of(pg, "code")
        assert float(line.get_attribute("data-code")) == files["code"]["kinds"]["code"]["acceptance"]
        assert line.is_visible() and len(visible_lines(pg)) == 1
        beside_the_race(pg, line, 390, 844)
    finally:
        context.close()
