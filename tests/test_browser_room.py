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


@pytest.fixture
def warming_url(tiny_dirs, tmp_path, monkeypatch):
    """The app served while its default pair is still warming up; `release` lets the warm-up end."""
    import threading
    from specviz.view.serve import serve
    from tests.helpers import ADD, app_with, tiny_preset
    monkeypatch.setenv("SPECVIZ_HOME", str(tmp_path))
    preset = tiny_preset(tiny_dirs, examples=(ADD,))
    app = app_with({"tiny": preset}, max_new_tokens=200)
    release, load = threading.Event(), app.pairs._load

    def slow_load(p):
        release.wait(120)
        return load(p)
    app.pairs._load = slow_load
    app.pairs.preload(preset)
    demo, url = serve(app)
    yield url, release
    release.set()
    demo.close()


def test_a_page_opened_during_warm_up_says_so_and_its_first_race_starts_by_itself(browser, warming_url):
    url, release = warming_url
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        pg = context.new_page()
        pg.goto(url)
        pg.wait_for_selector("#warm-notice [data-warm=warming]", timeout=30_000)
        said = pg.inner_text("#warm-notice")
        assert re.search(r"Warming up \(about \d+ (s|min)\)", said) and "starts by itself" in said, said
        assert not pg.query_selector("#status .status-done")
        release.set()                              # the pair is ready: the line goes, the race starts itself
        wait_finished(pg, timeout=120_000)
        assert not pg.is_visible("#warm-notice [data-warm=warming]")
    finally:
        context.close()
