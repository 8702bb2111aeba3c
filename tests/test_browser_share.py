"""A class from one link, in a real browser: a share link fills the form when the page opens, "copy
link" writes it back for the current form, and a class link pins the pair and k and sets the
example prompts; a bad value in a link is named in one line and left at its default."""
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser_support import XSS, app_url, browser, page, set_slider  # noqa: F401

pytestmark = pytest.mark.slow    # Chromium driving the served app


def open_link(browser, url):
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    pg = context.new_page()
    pg.goto(url)
    pg.wait_for_selector("#run")
    return context, pg


def slider(pg, elem_id):
    return pg.input_value(f"#{elem_id} input[type=number]")


def test_a_share_link_fills_the_form_and_copy_link_writes_it_back(browser, app_url):
    prompt = "def mul(a, b):\n    return"
    context, pg = open_link(browser, f"{app_url}?pair=tiny&prompt={quote(prompt)}&k=3&temperature=0.5&seed=7")
    try:
        pg.wait_for_function("() => document.querySelector('#prompt textarea').value.startsWith('def mul')")
        assert pg.input_value("#prompt textarea") == prompt
        pg.wait_for_function("() => document.querySelector('#k input[type=number]').value === '3'")
        assert (slider(pg, "k"), slider(pg, "temperature"), pg.input_value("#seed input")) == ("3", "0.5", "7")
        set_slider(pg, "k", 5)
        pg.click("#copy-link")
        pg.wait_for_function("() => { const t = document.querySelector('#share-link textarea, #share-link input');"
                             " return t && t.value.startsWith('http'); }")
        url = pg.input_value("#share-link textarea, #share-link input")
        query = parse_qs(urlsplit(url).query)
        assert url.startswith(app_url) and query["pair"] == ["tiny"] and query["k"] == ["5"]
        assert query["prompt"] == [prompt] and query["seed"] == ["7"] and query["temperature"] == ["0.5"]
        # the button says what happened: copied, or where to copy the link from (no clipboard granted here)
        pg.wait_for_function("() => /Link copied|Copy it from the box/.test(document.querySelector('#copy-link').textContent)")
    finally:
        context.close()


def test_a_class_link_pins_pair_and_k_and_sets_the_examples(browser, app_url):
    url = f"{app_url}?pair=tiny&k=2&class=1&prompts={quote('import sys')}&prompts={quote(XSS)}"
    context, pg = open_link(browser, url)
    try:
        pg.wait_for_selector("#link-note .link-class")
        assert "k = 2" in pg.inner_text("#link-note")
        assert slider(pg, "k") == "2" and pg.input_value("#prompt textarea") == "import sys"
        assert pg.locator("#k input[type=range]").is_disabled()
        assert pg.locator("#preset input").is_disabled()
        examples = pg.inner_text("#settings")
        assert "import sys" in examples and "def add" not in examples
        assert pg.locator("#settings img[src=x]").count() == 0          # the XSS example is text
        assert not pg.locator("#use-k").is_visible()
    finally:
        context.close()


def test_a_bad_link_value_is_named_and_the_rest_still_opens(browser, app_url):
    context, pg = open_link(browser, f"{app_url}?pair=nope&k=99&seed=3")
    try:
        pg.wait_for_selector("#link-note .status-error")
        note = pg.inner_text("#link-note")
        assert "'nope'" in note and "k must be between" in note
        assert slider(pg, "k") == "4" and pg.input_value("#seed input") == "3"
    finally:
        context.close()


def test_the_projector_switch_is_on_every_tab_and_keeps_tabs_and_run_on_one_line(browser, app_url):
    """At 1366x768 the projector zoom once folded two tabs into Gradio's "..." menu and wrapped Run,
    and its switch was only in the Workshop tab."""
    context, pg = open_link(browser, app_url)
    try:
        for on in (False, True):
            if on:
                pg.click("#projector input")
                pg.wait_for_function("() => document.body.classList.contains('projector')")
                pg.wait_for_timeout(500)             # Gradio re-measures its tab bar on resize
            # Gradio lays its tab bar out after the first paint: give it time to show all six before counting.
            try:
                pg.wait_for_function("() => [...document.querySelectorAll('#tabs [role=tab]')]"
                                     ".filter(e => e.offsetParent).length === 6", timeout=10_000)
            except PlaywrightTimeout:
                pass                                   # the assertion below names what was on the bar
            shown = pg.eval_on_selector_all("#tabs [role=tab]", "els => els.filter(e => e.offsetParent).length")
            assert shown == 6, f"projector {'on' if on else 'off'}: {shown} of 6 tabs on the bar"
            run, stop = (pg.locator(s).bounding_box() for s in ("#run", "#stop"))
            assert abs(run["y"] - stop["y"]) < 2 and abs(run["height"] - stop["height"]) < 2      # one line each
        for name in ("Explain", "Workshop", "Race"):
            pg.click(f"button[role=tab]:has-text('{name}')")
            assert pg.locator("#projector input").is_visible() and pg.locator("#projector input").is_checked()
        pg.click("#projector input")
        pg.wait_for_function("() => !document.body.classList.contains('projector')")
    finally:
        context.close()


def test_the_lesson_plan_opens_in_the_workshop_tab(page):
    page.click("button[role=tab]:has-text('Workshop')")
    page.click("#lesson-plan > button.label-wrap")
    page.wait_for_selector("#lesson-plan table", timeout=10_000)
    text = page.inner_text("#lesson-plan")
    assert "Lesson plan (45 minutes)" in text and "Room setup" in text
