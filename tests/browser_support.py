"""Shared by the browser tests: the app served on a free local port with the tiny models (its target
slowed a little so Stop has a run to stop), Chromium driven by Playwright, and page helpers.
Importing it skips the importing module when Chromium is missing (unless SPECVIZ_REQUIRE_BROWSER)."""
import os
import time

import pytest

from specviz.view.serve import serve
from tests.helpers import ADD, app_with, tiny_preset

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
TARGET_PASSES = [0]   # target forward passes served by the app under test
PASS_DELAY_S = [0.004]  # added to each target pass; the Stop tests raise it so a run lasts seconds
XSS = '<img src=x onerror=alert(1)>"\'><script>alert(2)</script>'

if not os.path.exists(CHROMIUM):
    if os.environ.get("SPECVIZ_REQUIRE_BROWSER"):
        raise RuntimeError("browser tests need /usr/bin/chromium (apt-get install -y chromium)")
    pytest.skip("no /usr/bin/chromium: apt-get install -y chromium to run the browser tests", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def app_url(tiny_dirs):
    preset = tiny_preset(tiny_dirs, examples=(ADD, "import os\n"),
                         label="tiny test pair: a 4-layer target with its own 2-layer cut as the draft")
    app = app_with({"tiny": preset}, max_new_tokens=200)
    pair = app.pairs.pair(preset)
    forward = pair.target.forward
    def slowed(*args, **kwargs):     # a few ms a pass: a long run lasts long enough to be stopped
        TARGET_PASSES[0] += 1
        time.sleep(PASS_DELAY_S[0])
        return forward(*args, **kwargs)
    pair.target.forward = slowed
    demo, url = serve(app)
    yield url
    demo.close()
    pair.target.forward = forward


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, app_url):
    context = browser.new_context(viewport={"width": 1400, "height": 1300}, accept_downloads=True)
    pg = context.new_page()
    pg.dialogs = []
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    pg.goto(app_url)
    pg.wait_for_selector("#run")
    yield pg
    context.close()


def set_slider(page, elem_id: str, value) -> None:
    """Type `value` in the slider's number box, and wait until the slider itself shows it: a click
    right after must send this value, not the one before it."""
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")
    page.wait_for_function("([id, v]) => { const r = document.querySelector(`#${id} input[type=range]`);"
                           " return !r || Number(r.value) === Number(v); }", arg=[elem_id, value], timeout=5_000)


def wait_settings_fold(page) -> None:
    """A phone folds the settings once the page has rendered (assets/page.js): wait for that, so a
    test never reads them as open just before the fold (CI: the fold then hid #max-new under it)."""
    page.wait_for_selector("body[data-settings-fold=done]", state="attached")


def run_race(page, prompt: str, max_new: int = 64, temperature: float = 0.0):
    # A phone folds the settings away (below 640 px): open them. Elsewhere they are open: wait for
    # them, never click (a page still rendering read as folded, and the click then folded it).
    wait_settings_fold(page)
    if page.viewport_size["width"] < 640 and not page.locator("#max-new").is_visible():
        page.click("#settings > button.label-wrap")
    page.wait_for_selector("#max-new input[type=number]", state="visible")
    page.fill("#prompt textarea", prompt)
    set_slider(page, "max-new", max_new)
    set_slider(page, "temperature", temperature)
    page.click("#run")
    # Run clears the previous race at once ("Starting …"): wait for that, so nothing stale is read.
    page.wait_for_selector("#status .status-done, #status .status-error", state="detached", timeout=15_000)


def wait_finished(page, timeout=90_000):
    page.wait_for_selector("#spec-meter .finished", timeout=timeout)
    page.wait_for_selector("#base-meter .finished", timeout=timeout)
    page.wait_for_selector("#status .status-done", timeout=timeout)


def kinds(page, pane: str) -> list[str]:
    return page.eval_on_selector_all(f"#{pane} [data-kind]", "els => els.map(e => e.dataset.kind)")


@pytest.fixture
def slow_target():
    PASS_DELAY_S[0] = 0.05
    yield
    PASS_DELAY_S[0] = 0.004
