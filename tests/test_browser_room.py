"""A room in a real browser: six tabs behind one address race at once; the sixth is told its place in
line (never an error, never Gradio's "busy") and gets its race."""
import re

import pytest

from tests.browser_support import app_url, browser, run_race, slow_target, wait_finished  # noqa: F401

pytestmark = pytest.mark.slow    # Chromium driving the served app

PLACE = re.compile(r"\d+(st|nd|rd|th) in line, about \d+ (s|min)")


def test_a_sixth_tab_from_one_address_waits_its_turn_and_says_where_it_stands(browser, app_url, slow_target):
    contexts, pages = [], []
    try:
        for _ in range(6):                     # six tabs of one room: one address (127.0.0.1), six sessions
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            pg = context.new_page()
            pg.goto(app_url)
            pg.wait_for_selector("#run")
            contexts.append(context)
            pages.append(pg)
        for pg in pages[:5]:
            run_race(pg, "def add(a, b):\n", max_new=48)
        sixth = pages[5]
        run_race(sixth, "def add(a, b):\n", max_new=48)
        sixth.wait_for_function("re => new RegExp(re).test(document.querySelector('#status').innerText)",
                                arg=PLACE.pattern, timeout=30_000)
        said = sixth.inner_text("#status")
        assert "busy" not in said.lower() and "error" not in said.lower(), said
        for pg in pages:                        # every tab gets its race, the sixth too
            wait_finished(pg, timeout=180_000)
        assert not sixth.query_selector("#status .status-error")
    finally:
        for context in contexts:
            context.close()
