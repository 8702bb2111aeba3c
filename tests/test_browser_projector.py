"""The room sees it: a teacher's projector (1280x720 and 1366x768, projector mode) in a real browser.

A picked token's docked p-and-q picture covers neither that token nor both panes; a long race's round
timeline pages to readable rounds, and its key is not cut; the class link is shown as a QR code."""
import contextlib

import pytest

from tests.browser_support import app_url, browser, run_race, wait_finished  # noqa: F401  (fixtures among them)

pytestmark = pytest.mark.slow    # Chromium driving the served app

PROJECTORS = [(1280, 720), (1366, 768)]

# The rectangles (screen pixels) of the docked details, the token they explain and both panes.
BOXES = """() => {
  const rect = (el) => { const r = el.getBoundingClientRect();
                         return { l: r.left, r: r.right, t: r.top, b: r.bottom }; };
  const pop = document.querySelector('#tip-pop');
  return { pop: rect(pop), token: rect(document.querySelector('[aria-describedby=tip-pop]')),
           spec: rect(document.querySelector('#spec-pane')), base: rect(document.querySelector('#base-pane')),
           width: document.documentElement.clientWidth, height: window.innerHeight,
           rows: pop.querySelectorAll('.pic-row').length, docked: pop.classList.contains('docked') };
}"""


@contextlib.contextmanager
def projector_page(browser, app_url, size=(1280, 720)):
    """The page at `size`, its projector switch on; the browser context closed after."""
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    try:
        pg = context.new_page()
        pg.goto(app_url)
        pg.wait_for_selector("#run")
        pg.click("#projector input")
        pg.wait_for_selector("body.projector", state="attached")
        yield pg
    finally:
        context.close()


def _overlap(a: dict, b: dict) -> bool:
    return min(a["r"], b["r"]) - max(a["l"], b["l"]) > 1 and min(a["b"], b["b"]) - max(a["t"], b["t"]) > 1


@pytest.mark.parametrize("size", PROJECTORS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_docked_picture_covers_neither_its_token_nor_both_panes(browser, app_url, size):
    with projector_page(browser, app_url, size) as pg:
        run_race(pg, "def add(a, b):\n    return", max_new=24, temperature=1.0)
        wait_finished(pg)
        for which in ("first", "last"):          # a token at the pane's start and one at its end
            token = getattr(pg.locator("#spec-pane [data-kind=accepted]"), which)
            token.scroll_into_view_if_needed()
            token.click()
            pg.wait_for_selector("#tip-pop.docked", state="visible")
            box = pg.evaluate(BOXES)
            assert box["docked"] and box["rows"] >= 2                           # the picture is there
            assert not _overlap(box["pop"], box["token"]), (which, box)
            assert not (_overlap(box["pop"], box["spec"]) and _overlap(box["pop"], box["base"])), (which, box)
            assert 0 <= box["pop"]["l"] and box["pop"]["r"] <= box["width"] and box["pop"]["b"] <= box["height"]
            assert box["pop"]["r"] - box["pop"]["l"] >= 250                      # wide enough to read
            pg.keyboard.press("Escape")
            assert pg.locator("#tip-pop").is_hidden()


# The timeline's rounds and plain passes drawn now, the narrowest drawn round, and whether the key is cut.
TIMELINE = """() => {
  const box = document.querySelector('#timeline .live-box'), key = box.querySelector('.tl-key');
  const drawn = (sel) => [...box.querySelectorAll(sel)].filter((el) => el.getClientRects().length);
  const widths = drawn('.tl-verify').map((el) => el.getBoundingClientRect().width);
  return { rounds: drawn('.tl-verify').length, all: box.querySelectorAll('.tl-verify').length,
           passes: drawn('.tl-pass').length, narrowest: Math.min(...widths),
           inside: drawn('.tl-b').every((el) => { const r = el.getBoundingClientRect(), b = box.getBoundingClientRect();
                                                  return r.left >= b.left - 1 && r.right <= b.right + 1; }),
           keyCut: key.scrollWidth > key.clientWidth + 1
                   || key.getBoundingClientRect().bottom > box.getBoundingClientRect().bottom + 1,
           label: (document.querySelector('#timeline .tl-page-label') || {}).textContent || '' };
}"""


def test_a_long_races_timeline_pages_to_readable_rounds_and_its_key_is_whole(browser, app_url):
    with projector_page(browser, app_url) as pg:
        run_race(pg, "import os\n", max_new=96, temperature=1.0)
        wait_finished(pg)
        whole = pg.evaluate(TIMELINE)
        assert whole["all"] > 12 and whole["rounds"] == whole["all"] and not whole["keyCut"], whole
        assert whole["label"] == f"all {whole['all']} rounds"
        pg.click("#timeline .tl-go[data-go=next]")           # the first page of rounds
        first = pg.evaluate(TIMELINE)
        assert first["rounds"] == 12 and first["label"] == f"rounds 1–12 of {whole['all']}", first
        assert first["narrowest"] > 1.5 * whole["narrowest"] and first["inside"], (first, whole)   # zoomed in
        assert 0 < first["passes"] < pg.locator("#timeline .tl-pass").count()   # the plain passes of those seconds
        pg.click("#timeline .tl-go[data-go=next]")
        second = pg.evaluate(TIMELINE)
        assert second["rounds"] >= 1 and second["label"].startswith("rounds 13–") and second["inside"], second
        pg.click("#timeline .tl-go[data-go=all]")
        back = pg.evaluate(TIMELINE)
        assert back["rounds"] == whole["all"] and back["label"] == whole["label"]
        run_race(pg, "import os\n", max_new=8)                  # a new race: drawn whole, no pager for a few rounds
        wait_finished(pg)
        assert pg.locator("#timeline .tl-pager").is_hidden() and pg.locator("#timeline .tl-off").count() == 0


def test_the_class_link_is_shown_as_a_qr_code_to_project(browser, app_url):
    with projector_page(browser, app_url) as pg:
        pg.click("#copy-link")
        pg.wait_for_selector("#share-qr svg", state="visible", timeout=30_000)
        box = pg.locator("#share-qr svg").bounding_box()
        assert abs(box["width"] - box["height"]) <= 1 and box["width"] >= 150         # square, large enough
        size = int(pg.get_attribute("#share-qr svg", "viewBox").split()[-1])
        assert size > 21 + 8 and (size - 8 - 17) % 4 == 0            # a QR symbol (17 + 4v) and its 4-module margins
        assert "Scan" in pg.inner_text("#share-qr")
