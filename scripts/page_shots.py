"""The first screen of one race on a projector, a laptop and a phone: docs/page.md's screenshots.

    python scripts/page_shots.py [--out docs/screenshots/race] [--pair smollm2] [--temperature 0.8]
                                 [--seed 1] [--max-new-tokens 128] [--screens projector,laptop,phone]

Opens the page as a share link would (same pair, prompt, temperature and seed, so every screen races
the same text), on a 1280x720 projector (projector mode on), a 1366x768 laptop and a 390x844 phone
(touch), clicks Run, waits for both lanes and saves what the screen shows, scrolled to the top:
`<out>-<screen>.png`. With --tip it also opens the first corrected word's details; with --why, the
status's "why?" (projector and phone fold the why under it).
"""
import argparse
import os
import sys
import time
from urllib.parse import urlencode

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

PROMPT = "Give three short tips for learning a new language."
SCREENS = {"projector": (1280, 720), "laptop": (1366, 768), "phone": (390, 844)}


def shoot(browser, url: str, screen: str, args) -> str:
    width, height = SCREENS[screen]
    phone = width < 640
    context = browser.new_context(viewport={"width": width, "height": height}, has_touch=phone, is_mobile=phone)
    page = context.new_page()
    query = {"pair": args.pair, "prompt": args.prompt, "temperature": args.temperature, "seed": args.seed}
    page.goto(f"{url}/?{urlencode(query)}")
    page.wait_for_selector("#run")
    page.wait_for_selector("body[data-settings-fold=done]", state="attached")
    if not page.locator("#max-new").is_visible():
        page.click("#settings > button.label-wrap")
    box = page.locator("#max-new input[type=number]")
    box.fill(str(args.max_new_tokens))
    box.press("Enter")
    page.wait_for_function("(v) => Number(document.querySelector('#max-new input[type=range]').value) === v",
                           arg=args.max_new_tokens)
    if phone:
        page.click("#settings > button.label-wrap")
    if screen == "projector":
        page.click("#projector input")
    page.click("#run")
    page.wait_for_selector("#status .status-done, #status .status-error", state="detached", timeout=15_000)
    page.wait_for_selector("#status .status-done, #status .status-error", timeout=600_000)
    time.sleep(1.5)
    page.evaluate("window.scrollTo(0, 0)")
    if args.why and page.locator("#race-summary .why-toggle").is_visible():
        page.click("#race-summary .why-toggle")         # the headline and the why, opened in full
        time.sleep(0.3)
    if args.tip:
        token = page.locator("#spec-pane [data-kind=resampled]").first
        if token.count():
            token.focus()
            page.keyboard.press("Enter")
            time.sleep(0.3)
    path = f"{args.out}-{screen}.png"
    page.screenshot(path=path)
    context.close()
    return path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="docs/screenshots/race")
    parser.add_argument("--pair", default="smollm2")
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--screens", default="projector,laptop,phone")
    parser.add_argument("--tip", action="store_true", help="open the first corrected word's details")
    parser.add_argument("--why", action="store_true", help="open the status's \"why?\" (projector and phone)")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    from specviz.app.profile import load_profile
    from specviz.app.state import AppState
    from specviz.view.serve import serve

    app = AppState.from_profile(load_profile(tier="cpu"), device="cpu")
    demo, url = serve(app)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            for screen in args.screens.split(","):
                print("wrote", shoot(browser, url, screen, args), flush=True)
            browser.close()
    finally:
        demo.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
