"""A newcomer's walkthrough of the page, in Chromium: both screens, both pairs, chat and code, greedy and T = 0.8;
and with --teacher, the teacher's: races clicked in turn, each finished Race tab checked for one record.

    python scripts/walkthrough.py [--out docs/screenshots/walkthrough] [--pairs bundled,smollm2] [--max-new-tokens 64]
                                  [--screens laptop,phone,projector,projector-wide]
    python scripts/walkthrough.py --teacher --out DIR [--pairs bundled,smollm2] [--races N or NAME,NAME]
                                  [--max-new-tokens 56] [--busy 2]

The teacher's walk is scripts/walkthrough_teacher.py (its docstring lists the races and the checks).

For each combination it opens the page as a share link would (`?pair=..&prompt=..&temperature=..&seed=1`)
on a 1366x768 laptop, a 390x844 phone (touch, no hover) or a projector (projector mode at 1280x720 and
1366x768), clicks Run, waits for both lanes, and checks what a first-time visitor meets:
- the speculative pane opens in Text view, with no "·" between words in either pane; it reads as text:
  no thrown-away draft takes room, kept drafts are not coloured, a correction's underline stops at its
  word (not its leading space) and it is at least 24 px tall to tap; the hint says "tap" on a touch
  screen and "click" elsewhere;
- the headline is true: a greedy race says "Same text", a sampled one says it compares per token;
- on the laptop, the headline and its why are on the first screen;
- on a projector, the headline is one line, the panes did not move when it came, at least 8 lines of
  each pane show, and the title is clear of the projector switch;
- on the phone, the speculative text is on the first screen;
- the round timeline under the panes has one verify pass per round and one plain pass per plain token;
- a token's details (a tap on the phone, Enter on the laptop) give a sentence and the p-and-q picture,
  in text no smaller than the panes';
- nothing on the page reports an error.
It saves the first screen of each race and of the open popover (`<out>-<screen>-<pair>-<kind>-<T>.jpg`
and `...-tip.jpg`, JPEG to keep the set small) to be looked at, prints one line per combination with
what it found, and exits non-zero if any check failed.
"""
import argparse
import os
import sys
import time
from urllib.parse import urlencode

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

PROMPTS = {"code": "def is_palindrome(s):\n    \"\"\"Return True if s reads the same backwards.\"\"\"\n",
           "chat": "Give three short tips for learning a new language."}
SCREENS = {"laptop": (1366, 768), "phone": (390, 844), "projector": (1280, 720), "projector-wide": (1366, 768)}
# Each pane's lines on the first screen, its top and the title against the switch (device pixels: the
# projector's zoom included).
GEOMETRY = """() => {
  const rect = (s) => { const e = document.querySelector(s); return e ? e.getBoundingClientRect() : null; };
  const zoom = parseFloat(getComputedStyle(document.body).zoom || 1);
  // lines of a pane on the first screen; a pane whose whole text shows counts as enough
  const lines = (s) => { const p = document.querySelector(s + ' .prose.token-pane'); if (!p) return 0;
    const b = p.getBoundingClientRect(), cs = getComputedStyle(p);
    if (p.scrollHeight <= p.clientHeight + 1 && b.bottom <= window.innerHeight) return 99;
    const seen = Math.min(b.bottom, window.innerHeight) - Math.max(b.top + parseFloat(cs.paddingTop) * zoom, 0);
    return seen / (parseFloat(cs.lineHeight) * zoom); };
  const shown = [...document.querySelectorAll('#race-summary > .headline, #race-summary > .headline-short')]
    .find((e) => e.getClientRects().length);
  const sw = rect('#projector'), head = shown ? shown.getBoundingClientRect() : null, box = rect('#title');
  const titleEnd = box.right - parseFloat(getComputedStyle(document.querySelector('#title')).paddingRight) * zoom;
  return { spec: lines('#spec-pane'), base: lines('#base-pane'), specTop: rect('#spec-pane').top,
           headLines: head ? Math.round(head.height / (parseFloat(getComputedStyle(shown).lineHeight) * zoom)) : 0,
           titleClear: !sw || titleEnd <= sw.left + 1 || rect('#title').bottom <= sw.top };
}"""


def check(page, screen: str, temperature: float) -> list[str]:
    """What a newcomer would find wrong on this finished race (empty: nothing)."""
    found = []
    if page.locator("#status .status-error").count():
        found.append("error: " + page.inner_text("#status")[:120])
        return found
    if page.get_attribute("#spec-pane", "data-view") != "text":
        found.append("speculative pane not in Text view")
    # whitespace marks (a "·" drawn by CSS) only where whitespace is the token itself: never on the kept
    # text of the speculative pane's Text view, never in the plain pane
    marks = page.eval_on_selector_all(
        "#base-pane .ws, #spec-pane .tok-accepted .ws, #spec-pane .tok-resampled .ws, #spec-pane .tok-bonus .ws",
        "els => els.filter(e => !['none', 'normal'].includes(getComputedStyle(e, '::after').content)).length")
    if marks:
        found.append(f"{marks} whitespace marks in running text")
    headline = page.inner_text("#race-headline")
    if temperature == 0 and "Same text" not in headline and "per token" not in headline:
        found.append(f"greedy headline not 'Same text': {headline[:80]!r}")
    # a sampled race is compared per token, or like for like where one lane stopped early (headline.py)
    if temperature > 0 and not any(w in headline for w in ("per token", "like for like", "Same text")):
        found.append(f"sampled headline does not say how it compares: {headline[:80]!r}")
    if screen == "laptop":
        page.evaluate("window.scrollTo(0, 0)")
        for part in ("#race-headline", "#race-why"):
            box = page.locator(part).bounding_box()
            if box is None or box["y"] + box["height"] > SCREENS["laptop"][1]:
                found.append(f"{part} below the first screen ({box})")
    return found + reads_as_text(page, screen) + layout(page, screen) + timeline(page)


def reads_as_text(page, screen: str) -> list[str]:
    """The Text view's calm: what a newcomer met as a page of spell-check marks."""
    found = []
    shown = page.eval_on_selector_all("#spec-pane [data-kind=rejected]",
                                      "els => els.filter(e => e.getClientRects().length).length")
    if shown:
        found.append(f"{shown} thrown-away drafts take room in the Text view")
    tinted = page.eval_on_selector_all("#spec-pane [data-kind=accepted]", "els => els.filter(e => !['rgba(0, 0, 0, 0)', "
                                       "'transparent'].includes(getComputedStyle(e).backgroundColor)).length")
    if tinted:
        found.append(f"{tinted} kept drafts coloured in the Text view")
    spaces = page.eval_on_selector_all("#spec-pane [data-kind=resampled] > .ws:not(.nl)",
                                       "els => els.filter(e => getComputedStyle(e).display !== 'inline-block').length")
    if spaces:
        found.append(f"{spaces} corrections underlined from their leading space")
    small = page.eval_on_selector_all("#spec-pane [data-kind=resampled]",
                                      "els => els.filter(e => e.getBoundingClientRect().height < 24 * "
                                      "parseFloat(getComputedStyle(document.body).zoom || 1) - 0.5).length")
    if small:
        found.append(f"{small} corrections under 24 px to tap")
    hint = page.locator(".view-switch:not(.view-spacer) .view-hint")
    word = "tap" if screen == "phone" else "click"
    if hint.is_visible() and not hint.inner_text().endswith(f"{word} it"):
        found.append(f"the Text view's hint does not say {word}: {hint.inner_text()!r}")
    return found


def layout(page, screen: str) -> list[str]:
    """Text first: a projector's panes under a one-line headline, a phone's speculative text on screen."""
    found = []
    page.evaluate("window.scrollTo(0, 0)")
    g = page.evaluate(GEOMETRY)
    if screen.startswith("projector"):
        if min(g["spec"], g["base"]) < 8:
            found.append(f"projector: {g['spec']:.1f} and {g['base']:.1f} lines of the panes on the first screen")
        if g["headLines"] != 1:
            found.append(f"projector: the headline takes {g['headLines']} lines")
        if abs(g["specTop"] - page.evaluate("window.__specTopRacing || 0")) > 2:
            found.append(f"projector: the panes moved {g['specTop'] - page.evaluate('window.__specTopRacing'):.0f} px "
                         "when the race ended")
        if not g["titleClear"]:
            found.append("projector: the title runs under the projector switch")
    if screen == "phone" and g["spec"] < 2:
        found.append(f"phone: {g['spec']:.1f} lines of the speculative text on the first screen")
    return found


def timeline(page) -> list[str]:
    """The round on one clock: one verify pass per round, one plain pass per plain token."""
    meter = page.inner_text("#spec-meter")
    rounds = int(meter.split(" rounds")[0].split()[-1]) if " rounds" in meter else None
    verify = page.locator("#timeline .tl-verify").count()
    passes = page.locator("#timeline .tl-pass").count()
    plain = page.locator("#base-pane [data-kind]").count()
    found = []
    if rounds is not None and verify != rounds:
        found.append(f"timeline: {verify} verify passes for {rounds} rounds")
    if passes != plain:
        found.append(f"timeline: {passes} plain passes for {plain} plain tokens")
    return found


def open_tip(page, screen: str) -> list[str]:
    tokens = page.locator("#spec-pane [data-kind=resampled]")      # opens the drafts thrown away there too
    token = tokens.first if tokens.count() else page.locator("#spec-pane [data-kind=accepted]").first
    if not token.count():
        return ["no token to open"]
    if screen == "phone":
        token.tap()
    else:
        token.focus()
        page.keyboard.press("Enter")
    pop = page.locator("#tip-pop")
    try:
        pop.wait_for(state="visible", timeout=5_000)
    except Exception:           # noqa: BLE001 (named in the report)
        return ["token details did not open"]
    found = []
    if pop.locator(".pic-row").count() < 2:
        found.append("token details without the p-and-q picture")
    if len(pop.inner_text().split()) < 8:
        found.append("token details without a sentence")
    sizes = page.evaluate("() => [parseFloat(getComputedStyle(document.querySelector('#tip-pop .tip-text')).fontSize),"
                          " parseFloat(getComputedStyle(document.querySelector('#spec-pane .prose.token-pane')).fontSize)]")
    if sizes[0] < 0.85 * sizes[1]:
        found.append(f"token details in {sizes[0]:g} px text beside {sizes[1]:g} px panes")
    box = pop.bounding_box()
    width = SCREENS[screen][0]
    if box and (box["x"] < 0 or box["x"] + box["width"] > width + 1):
        found.append(f"token details off the screen ({box})")
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None, help="a file prefix (default docs/screenshots/walkthrough); with "
                        "--teacher, the folder for the JSON and the PNGs")
    parser.add_argument("--pairs", default="bundled,smollm2")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="default 64; with --teacher 56")
    parser.add_argument("--screens", default=",".join(SCREENS))
    parser.add_argument("--teacher", action="store_true", help="the teacher's races, each Race tab checked whole")
    parser.add_argument("--races", default="", help="with --teacher: the first N of its races, or their names")
    parser.add_argument("--busy", type=int, default=0, help="with --teacher: N busy processes beside the walk")
    args = parser.parse_args()
    if args.teacher:
        if not args.out:
            parser.error("--teacher needs --out DIR: the folder for walkthrough.json and the screenshots")
        args.max_new_tokens = args.max_new_tokens or 56
        from walkthrough_teacher import main as teacher_main
        return teacher_main(args)
    args.out = args.out or "docs/screenshots/walkthrough"
    args.max_new_tokens = args.max_new_tokens or 64

    from playwright.sync_api import sync_playwright

    from specviz.app.profile import load_profile
    from specviz.app.state import AppState
    from specviz.view.serve import serve

    app = AppState.from_profile(load_profile(tier="cpu"), device="cpu")
    demo, url = serve(app)
    failures = 0
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            for screen in args.screens.split(","):
                width, height = SCREENS[screen]
                phone = width < 640
                for pair in args.pairs.split(","):
                    for kind, prompt in PROMPTS.items():
                        for temperature in (0.0, 0.8):
                            context = browser.new_context(viewport={"width": width, "height": height},
                                                          has_touch=phone, is_mobile=phone)
                            page = context.new_page()
                            query = urlencode({"pair": pair, "prompt": prompt, "temperature": temperature,
                                               "seed": 1})
                            page.goto(f"{url}/?{query}")
                            page.wait_for_selector("#run")
                            page.wait_for_selector("body[data-settings-fold=done]", state="attached")
                            page.wait_for_function("(p) => document.querySelector('#prompt textarea').value === p",
                                                   arg=prompt)
                            if not page.locator("#max-new").is_visible():      # a phone folds the settings
                                page.click("#settings > button.label-wrap")
                            box = page.locator("#max-new input[type=number]")
                            box.fill(str(args.max_new_tokens))
                            box.press("Enter")
                            page.wait_for_function(
                                "(v) => Number(document.querySelector('#max-new input[type=range]').value) === v",
                                arg=args.max_new_tokens)
                            if phone:
                                page.click("#settings > button.label-wrap")      # folded again, as a visitor would
                            if screen.startswith("projector"):
                                page.click("#projector input")
                            start = time.monotonic()
                            page.click("#run")
                            page.wait_for_selector("#status .status-done, #status .status-error",
                                                   state="detached", timeout=15_000)
                            # where the panes stood while racing (a projector's must not move at the end)
                            page.wait_for_selector("#spec-pane [data-kind]", state="attached", timeout=300_000)
                            page.evaluate("window.scrollTo(0, 0); window.__specTopRacing = "
                                          "document.querySelector('#spec-pane').getBoundingClientRect().top")
                            page.wait_for_selector("#status .status-done, #status .status-error", timeout=300_000)
                            time.sleep(1.5)          # the last round's reveal
                            name = f"{args.out}-{screen}-{pair}-{kind}-{temperature:g}"
                            page.evaluate("window.scrollTo(0, 0)")
                            page.screenshot(path=f"{name}.jpg", type="jpeg", quality=60)
                            found = check(page, screen, temperature)
                            if not any(f.startswith("error") for f in found):
                                found += open_tip(page, screen)
                                page.screenshot(path=f"{name}-tip.jpg", type="jpeg", quality=60)
                            failures += bool(found)
                            print(f"{screen:6} {pair:8} {kind:4} T={temperature:g}: "
                                  f"{time.monotonic() - start:5.1f} s; headline "
                                  f"{page.inner_text('#race-headline')[:70]!r}; "
                                  f"{'; '.join(found) if found else 'nothing found'}", flush=True)
                            context.close()
            browser.close()
    finally:
        demo.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
