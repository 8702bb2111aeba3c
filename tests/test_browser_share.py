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


def copy_link(pg, before: str = "") -> str:
    """Press the link button beside Run and read the link it wrote (a new one, where `before` is given)."""
    pg.click("#copy-link")
    return wait_link(pg, before)


def wait_link(pg, before: str = "") -> str:
    pg.wait_for_function("(old) => { const t = document.querySelector('#share-link textarea, #share-link input');"
                         " return t && t.value.startsWith('http') && t.value !== old; }", arg=before)
    return pg.input_value("#share-link textarea, #share-link input")


# Every field of the form away from its default, as a visitor sets it: (id, how, value), and the value the
# opened page must show.
CHANGED = [("k", "slider", 3), ("temperature", "slider", 0.7), ("seed", "number", 11), ("top-k", "slider", 17),
           ("top-p", "slider", 0.85), ("max-new", "slider", 33), ("confidence-stop", "slider", 0.3)]


def form_values(pg) -> dict:
    """What the form shows, field by field."""
    values = {elem_id: pg.input_value(f"#{elem_id} input[type=number]") for elem_id, _, _ in CHANGED}
    values.update(prompt=pg.input_value("#prompt textarea"), stops=pg.input_value("#stop-strings textarea"),
                  tree=pg.input_value("#tree input, #tree textarea"), adaptive=pg.is_checked("#adaptive input"),
                  drafter=pg.eval_on_selector("#drafter", "el => el.querySelector('input:checked').value"),
                  preset=pg.input_value("#preset input"))
    return values


def set_form(pg, prompt: str, stops: str) -> None:
    """Every field of the form changed from its default (a tree needs the model drafter, so the tree is
    set in a second round)."""
    pg.fill("#prompt textarea", prompt)
    for elem_id, how, value in CHANGED:
        if how == "slider":
            set_slider(pg, elem_id, value)
        else:
            pg.fill(f"#{elem_id} input", str(value))
            pg.press(f"#{elem_id} input", "Tab")
    pg.fill("#stop-strings textarea", stops)
    pg.press("#stop-strings textarea", "Tab")
    pg.check("#adaptive input")
    pg.click("#drafter label:has-text('prompt lookup')")


def test_a_share_link_fills_the_form_and_copy_link_writes_it_back(browser, app_url):
    prompt = "def mul(a, b):\n    return"
    context, pg = open_link(browser, f"{app_url}?pair=tiny&prompt={quote(prompt)}&k=3&temperature=0.5&seed=7")
    try:
        pg.wait_for_function("() => document.querySelector('#prompt textarea').value.startsWith('def mul')")
        assert pg.input_value("#prompt textarea") == prompt
        pg.wait_for_function("() => document.querySelector('#k input[type=number]').value === '3'")
        assert (slider(pg, "k"), slider(pg, "temperature"), pg.input_value("#seed input")) == ("3", "0.5", "7")
        set_slider(pg, "k", 5)
        url = copy_link(pg)
        query = parse_qs(urlsplit(url).query)
        assert url.startswith(app_url) and query["pair"] == ["tiny"] and query["k"] == ["5"]
        assert query["prompt"] == [prompt] and query["seed"] == ["7"] and query["temperature"] == ["0.5"]
        assert set(query) == {"pair", "prompt", "k", "temperature", "seed"}       # the rest at their defaults
        # the panel says what happened: copied, or where to copy the link from (no clipboard granted here)
        pg.wait_for_function("() => /Link copied|Copy it from the box/.test(document.querySelector('#share-said').textContent)")
        assert pg.get_attribute("#copy-link", "aria-label") == "Copy a link to this race"
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
            row, link = (pg.locator(s).bounding_box() for s in ("#run-row", "#copy-link"))
            assert abs(link["y"] - run["y"]) < 2 and link["x"] + link["width"] <= row["x"] + row["width"] + 1
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


def test_every_field_changed_travels_in_the_link_and_opens_the_same_form(browser, app_url):
    """Each field away from its default -> "copy link" -> a page opened from that link -> the same form."""
    context, pg = open_link(browser, app_url)
    other = None
    try:
        pg.wait_for_selector("#max-new input[type=number]", state="visible")
        set_form(pg, "x = '<b>'\n  y", "END\n<i>")
        pg.wait_for_timeout(300)                 # the last field's value reaches the page's state
        shown = form_values(pg)
        query = parse_qs(urlsplit(url := copy_link(pg)).query)
        for name in ("top_k", "top_p", "max_new_tokens", "drafter", "stop_strings", "confidence_stop", "adaptive_k"):
            assert name in query, (name, url)
        other, opened = open_link(browser, url)
        opened.wait_for_function("() => document.querySelector('#max-new input[type=number]').value === '33'")
        opened.wait_for_timeout(300)
        assert form_values(opened) == shown and not opened.locator("#link-note .status-error").count()
        # the tree (it runs only with the model drafter, so a second link carries it)
        opened.click("#drafter label:has-text('draft model')")
        opened.uncheck("#adaptive input")
        set_slider(opened, "confidence-stop", 0)
        opened.fill("#tree input, #tree textarea", "2,2,1")
        opened.press("#tree input, #tree textarea", "Tab")
        opened.wait_for_timeout(300)
        url2 = copy_link(opened)
        assert parse_qs(urlsplit(url2).query)["tree"] == ["2,2,1"]
        third, page3 = open_link(browser, url2)
        try:
            page3.wait_for_function("() => (document.querySelector('#tree input, #tree textarea') || {}).value === '2,2,1'")
            page3.wait_for_timeout(300)
            assert form_values(page3) == form_values(opened)
        finally:
            third.close()
    finally:
        context.close()
        if other is not None:
            other.close()


def test_the_class_options_beside_the_link_button_write_class_and_examples(browser, app_url):
    """No URL typed: "lock for a class" adds class=1, "use these examples" the examples shown (this page's
    prompt first), and a page opened from that link shows them, locked, with both options ticked."""
    context, pg = open_link(browser, app_url)
    other = None
    try:
        pg.fill("#prompt textarea", XSS)
        url = copy_link(pg)
        assert "class" not in parse_qs(urlsplit(url).query)
        pg.check("#share-lock input")
        url = wait_link(pg, url)
        assert parse_qs(urlsplit(url).query)["class"] == ["1"] and "prompts" not in parse_qs(urlsplit(url).query)
        pg.check("#share-examples input")
        url = wait_link(pg, url)
        query = parse_qs(urlsplit(url).query)
        assert query["class"] == ["1"] and query["prompts"] == [XSS, "def add(a, b):\n    return", "import os\n"]
        other, opened = open_link(browser, url)
        opened.wait_for_selector("#link-note .link-class")
        assert opened.locator("#k input[type=range]").is_disabled()
        assert opened.locator("#settings img[src=x]").count() == 0 and XSS in opened.inner_text("#settings")
        opened.click("#copy-link")
        opened.wait_for_selector("#share-lock input", state="visible")
        assert opened.is_checked("#share-lock input") and opened.is_checked("#share-examples input")
        opened.click("#share-close")                                   # the panel closes, and opens again
        opened.wait_for_selector("#share-panel", state="hidden")
        opened.click("#copy-link")
        opened.wait_for_selector("#share-lock input", state="visible")
    finally:
        context.close()
        if other is not None:
            other.close()


def test_phone_keeps_run_stop_and_the_link_button_on_one_line(browser, app_url):
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    pg = context.new_page()
    try:
        pg.goto(app_url)
        pg.wait_for_selector("#copy-link")
        boxes = [pg.locator(s).bounding_box() for s in ("#run", "#run3", "#stop", "#copy-link")]
        assert all(abs(b["y"] - boxes[0]["y"]) < 2 for b in boxes)
        assert boxes[-1]["x"] + boxes[-1]["width"] <= 390 and boxes[-1]["width"] >= 24
    finally:
        context.close()


def test_a_loaded_trace_fills_the_form_so_run_races_it_again(browser, app_url, tmp_path):
    """A race with settings away from their defaults, downloaded, then loaded on a fresh page: the form
    there holds the race's prompt and settings, so Run races the same again."""
    context, pg = open_link(browser, app_url)
    fresh = None
    try:
        pg.wait_for_selector("#max-new input[type=number]", state="visible")
        pg.fill("#prompt textarea", "import os\n")
        for elem_id, value in (("k", 2), ("temperature", 0.9), ("top-k", 12), ("top-p", 0.8), ("max-new", 20)):
            set_slider(pg, elem_id, value)
        pg.fill("#seed input", "5")
        pg.fill("#stop-strings textarea", "zzz")
        pg.press("#stop-strings textarea", "Tab")
        pg.wait_for_timeout(300)
        shown = {elem_id: slider(pg, elem_id) for elem_id in ("k", "temperature", "top-k", "top-p", "max-new")}
        pg.click("#run")
        pg.wait_for_selector("#status .status-done", timeout=90_000)
        with pg.expect_download() as info:
            pg.click("#download-trace")
        path = tmp_path / "specviz-trace.json"
        info.value.save_as(path)
        fresh, other = open_link(browser, app_url)
        other.wait_for_selector("#trace-file", state="attached")
        other.set_input_files("#trace-file", str(path))
        other.wait_for_selector("#link-note #trace-form", timeout=20_000)
        assert other.input_value("#prompt textarea") == "import os\n"
        assert {elem_id: slider(other, elem_id) for elem_id in shown} == shown
        assert other.input_value("#seed input") == "5" and other.input_value("#stop-strings textarea") == "zzz"
    finally:
        context.close()
        if fresh is not None:
            fresh.close()
