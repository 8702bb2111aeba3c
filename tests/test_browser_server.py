"""The Server tab in a real browser (Playwright driving the system Chromium), against responses recorded from a
real vLLM server (tests/vllm_replay.py): the host's server listed by label, tokens colored by their fates, the
server's figures, the exactness verdict, the listed plain endpoint raced after it; and no Server tab when the host
listed none."""
import pytest

from specviz.remote.servers import Server
from specviz.view.serve import serve
from tests.browser_support import browser  # noqa: F401 - the shared Chromium fixture
from tests.helpers import app_with, tiny_preset

from .vllm_replay import recorded_routes, serving

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def urls(tiny_dirs):
    with serving(recorded_routes()) as server:
        app = app_with({"tiny": tiny_preset(tiny_dirs)}, servers=(Server("Lab vLLM", server, baseline_url=server),))
        demo, url = serve(app)
        plain, plain_url = serve(app_with({"tiny": tiny_preset(tiny_dirs)}))
        yield url, plain_url
        demo.close()
        plain.close()


def test_the_server_tab_shows_a_real_servers_rounds(browser, urls):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(urls[0])
    page.get_by_role("tab", name="Server").click()
    page.locator("#server-prompt textarea").fill("def is_prime(n):")
    page.locator("#server-max input[type=number]").fill("48")
    page.locator("#server-max input[type=number]").press("Enter")
    page.locator("#server-ask").click()
    page.wait_for_selector("#server-figures table", timeout=60_000)
    assert page.locator("#server-spec .tok-accepted").count() == 31
    assert page.locator("#server-spec .server-thrown").count() > 0
    assert "2.94 tokens a step" in page.locator("#server-figures").inner_text()
    # the listed plain endpoint, asked after the speculative one: its pane and the comparison in the status line
    page.locator("#server-status", has_text="speculation ran").wait_for(timeout=60_000)
    assert "(the same text)" in page.locator("#server-status").inner_text()
    assert "return True" in page.locator("#server-base").inner_text()
    assert "logprob -8" in page.locator("#server-check").inner_text()
    page.close()


def test_no_server_tab_without_a_listed_server(browser, urls):
    page = browser.new_page()
    page.goto(urls[1])
    page.wait_for_selector("#run")
    assert page.get_by_role("tab", name="Server").count() == 0
    page.close()
