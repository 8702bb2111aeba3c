"""Screenshot of the app racing on its default pair (assets/screenshot.png), as in the README: SmolLM2
when it is fetched, else the bundled pair.

    python scripts/screenshot.py [--out assets/screenshot.png] [--dark] [--width 1440] [--height 1500]
                                 [--first-screen] [--tip] [--max-new-tokens 96] [--preset bundled]

--first-screen keeps only what the viewport shows (what a class sees without scrolling); --tip opens
one token's details popover, as a tap would.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="assets/screenshot.png")
    parser.add_argument("--dark", action="store_true")
    parser.add_argument("--width", type=int, default=1440, help="viewport width in CSS pixels (e.g. 1400, 1024, 390)")
    parser.add_argument("--height", type=int, default=1500, help="viewport height in CSS pixels")
    parser.add_argument("--first-screen", action="store_true", help="the viewport only, not the full page")
    parser.add_argument("--tip", action="store_true", help="open a token's details popover")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--preset", default="", help="the pair to race (a preset key, e.g. bundled); default: the page's")
    parser.add_argument("--prompt", default="class Stack:\n    \"\"\"A last-in, first-out stack.\"\"\"\n\n    def __init__(self):")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    from specviz.app.profile import load_profile
    from specviz.view.serve import serve
    from specviz.app.state import AppState

    import torch

    from specviz.app.cpu_threads import decode_threads
    torch.set_num_threads(decode_threads("127.0.0.1"))      # as app.py does with the browser on this machine
    app = AppState.from_profile(load_profile(tier="cpu"), device="cpu")
    demo, url = serve(app)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            phone = args.width < 640                                   # as assets/page.js's narrow layout
            page = browser.new_page(viewport={"width": args.width, "height": args.height}, device_scale_factor=1,
                                    has_touch=phone, is_mobile=phone)
            page.goto(url + ("/?__theme=dark" if args.dark else ""))
            page.wait_for_selector("#run")
            page.wait_for_selector("body[data-settings-fold=done]", state="attached")   # assets/page.js
            folded = not page.locator("#max-new").is_visible()      # a phone folds the settings away
            if folded:
                page.click("#settings > button.label-wrap")
            if args.preset:          # pick the pair in the menu by its label
                page.click("#preset input")
                page.click(f"ul[role=listbox] li:has-text({app.pairs.menu_label(app.pairs.presets[args.preset])[:30]!r})")
                time.sleep(1)
            page.fill("#prompt textarea", args.prompt)
            box = page.locator("#max-new input[type=number]")
            box.fill(str(args.max_new_tokens))
            box.press("Enter")
            if folded:
                page.click("#settings > button.label-wrap")
            page.click("#run")
            page.wait_for_selector("#status .status-done, #status .status-error", state="detached", timeout=15_000)
            page.wait_for_selector("#status .status-done", timeout=120_000)
            time.sleep(2)       # the last round's reveal animation
            if args.tip:     # the last rejected draft (else the last token): its popover, as a tap opens it
                tokens = page.locator("#spec-pane [data-kind=rejected]")
                token = tokens.last if tokens.count() else page.locator("#spec-pane [data-kind]").last
                token.focus()
                page.keyboard.press("Enter")
                time.sleep(0.3)
            # Plotly reads (hover: none) once, at load, and on a touch screen keeps its toolbar shown, which
            # assets/style.css hides there; a full-page capture re-emulates the screen, the CSS stops
            # applying and the toolbars appeared over every plot's title, which no visitor sees at rest.
            page.add_style_tag(content=".js-plotly-plot .modebar-container { display: none !important; }")
            page.screenshot(path=args.out, full_page=not args.first_screen)
            browser.close()
    finally:
        demo.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
