"""The teacher's walkthrough (`python scripts/walkthrough.py --teacher`): races clicked in Chromium, each
finished Race tab read whole and checked for one record.

A matrix of races covers both pairs, greedy and T = 0.8, a single race and Race 3x, a token tree, k = 3
and k = 6, each at least once (MATRIX; not every combination). For each race a teacher's page opens on a
class link (`?pair=..&prompt=..&k=..&temperature=..&max_new_tokens=..[&tree=..]`), Run or Race 3x is
clicked, and once the race ends: a 1366x768 screenshot of the first screen and one of the whole Race tab
(PNG), a 390 px phone screenshot for the first race of each pair, the tab's text (panes left out: model
text is not a figure) with its tooltips, the k note, and Explain's "Use this machine's figures" line.
The checks (`check`, pure functions of what was read, so tests can aim them both ways):
- every symbol (a, c, v, tau, the measured speedup) shows one value over the whole tab's text;
- the headline's verdict agrees with what the lanes measured (the strip's speedup, the meters' clocks
  for greedy lanes that wrote the same text, Race 3x's median and range) and is the one the box shows;
- the k note and Explain say what they assume (the held-out a, or "not measured"), never advise a k
  the formula expects below 1.0x, and name a single race whose a differs by more than 0.05.
It writes `<out>/walkthrough.json` and the PNGs under --out, prints one line per race and exits 1 on any
violation. `--busy N` runs N busy-looping processes beside it for the whole walk (the loaded case).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from urllib.parse import urlencode

# Each pair's kind of prompt: the bundled pair is a small Python model (its own first example), SmolLM2 chats.
PROMPTS = {"bundled": "def fibonacci(n):", "smollm2": "Give three short tips for learning a new language."}


@dataclass(frozen=True)
class Race:
    name: str
    pair: str
    temperature: float
    k: int
    repeat: bool = False          # Race 3x
    tree: str = ""                # a token tree's candidates per depth ("" a chain)


# Each of: both pairs, greedy and T = 0.8, single and Race 3x, a tree, k = 3 and k = 6, at least once.
MATRIX = [Race("bundled-greedy-k3", "bundled", 0.0, 3),
          Race("bundled-sampled-k6-race3x", "bundled", 0.8, 6, repeat=True),
          Race("bundled-greedy-tree", "bundled", 0.0, 3, tree="2,2,1"),
          Race("smollm2-greedy-k3-race3x", "smollm2", 0.0, 3, repeat=True),
          Race("smollm2-sampled-k6", "smollm2", 0.8, 6),
          Race("smollm2-sampled-tree", "smollm2", 0.8, 3, tree="2,2,1")]

SYMBOLS = ("a", "c", "v", "tau")
# "break-even a = 0.42" and "pays above a = 0.42" name a threshold of a, not the race's a; a value
# followed by "/" is a count ("a = 18 / 26 judged"). As tests/test_one_record.py reads the tab.
VALUE = r"(?<!break-even )(?<!above )\b{sym} = (\d+(?:\.\d+)?)(?!\d|\s*/)"
# The measured speedup wherever the tab states it in words (not the formula's, nor Race 3x's median).
MEASURED = [r"(?<!median )(\d+\.\d+)× the (?:plain )?(?:speed|rate)", r"speculation ran (\d+\.\d+)x",
            r"clocks measured (\d+\.\d+)x", r"(\d+\.\d+)x, but this race's own timings"]
SEEN_DIFFERS = 0.05          # app/k_advice.py: a race's a this far from the assumed one is named
LABELS = {"faster": "Faster", "about even": "About even", "slower": "Slower"}

# The Race tab's text without the panes (model text is not a figure), and its tooltips.
READ_TAB = """() => {
  const tab = document.querySelector('#race-tab');
  const skip = [...tab.querySelectorAll('#spec-pane, #base-pane')];
  const before = skip.map((e) => e.style.display);
  skip.forEach((e) => { e.style.display = 'none'; });
  const text = tab.innerText;
  skip.forEach((e, i) => { e.style.display = before[i]; });
  const tips = [...tab.querySelectorAll('[data-tip]')].filter((e) => !skip.some((s) => s.contains(e)))
    .map((e) => e.getAttribute('data-tip'));
  const attr = (s, a) => { const e = document.querySelector(s); return e ? e.getAttribute(a) : null; };
  const inner = (s) => { const e = document.querySelector(s); return e ? e.innerText : ''; };
  const figures = (s) => [...document.querySelectorAll(s + ' .meter-figures span')].map((e) => e.innerText)
    .join(' | ');
  return { text, tips, headline: inner('#race-headline'), why: inner('#race-why'), ran: inner('#race-ran'),
           verdict: attr('#race-summary', 'data-verdict'), box_verdict: attr('#ledger-box', 'data-verdict'),
           same_text: attr('#race-summary', 'data-same-text'), speedup: attr('#speedup', 'data-value'),
           figs: [...document.querySelectorAll('#ledger-box .fig')].map((e) => e.innerText),
           strip: Object.fromEntries([...document.querySelectorAll('#stats .cell')].map((e) =>
             [e.querySelector('.label').textContent.trim(), e.querySelector('.value').innerText])),
           spec_meter: figures('#spec-meter'), base_meter: figures('#base-meter'),
           repeat: document.querySelector('#race-repeat') ? { median: attr('#race-repeat', 'data-median'),
             low: attr('#race-repeat', 'data-low'), high: attr('#race-repeat', 'data-high'),
             verdict: attr('#race-repeat', 'data-verdict') } : null,
           error: inner('#status .status-error') };
}"""
# The phone's headline: the one shown (whole or short) must show its figure, not clamp it away.
PHONE_HEADLINE = """() => {
  const shown = [...document.querySelectorAll('#race-summary > .headline, #race-summary > .headline-short')]
    .find((e) => e.getClientRects().length);
  return shown ? { text: shown.innerText, cut: shown.scrollHeight > shown.clientHeight + 1 } : null;
}"""


def values(text: str, sym: str) -> list[float]:
    return [float(x) for x in re.findall(VALUE.format(sym=sym), text)]


def figs(seen: dict) -> dict:
    """The ledger box's figures by name ("a = 0.61" -> {"a": 0.61}); "—" and "not priced" left out."""
    out = {}
    for fig in seen.get("figs") or []:
        m = re.match(r"\s*([\w -]+?)\s*=\s*(\d+(?:\.\d+)?)", fig)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def meter(text: str) -> tuple[float, int] | None:
    """A lane meter's clock and token count ("12.34 s", "64 tokens")."""
    t, n = re.search(r"(\d+(?:\.\d+)?) s(?![a-z])", text or ""), re.search(r"(\d+) tokens", text or "")
    return (float(t.group(1)), int(n.group(1))) if t and n else None


def one_value(seen: dict) -> list[str]:
    """Every symbol shows one value over the tab's text and tooltips (two precisions of one figure agree)."""
    found = []
    text = "\n".join([seen["text"], *seen.get("tips", [])])
    for sym in SYMBOLS:
        got = sorted(set(values(text, sym)))
        # A figure printed at two precisions (0.046 and 0.05) is one value; rounding moves it 0.005 at most.
        if got and max(got) - min(got) > 0.0051:
            found.append(f"{sym} shows {len(got)} values: {', '.join(f'{x:g}' for x in got)}")
    strip = {label.lower(): value for label, value in (seen.get("strip") or {}).items()}   # labels as written
    found += _said(text, strip.get("tokens per pass"), [r"each target pass gave (?:only )?(\d+\.\d+) tokens",
                                                       r"\btau = (\d+\.\d+)(?!\d|\s*/)"], 1, "tokens per pass")
    found += _said(text, strip.get("acceptance rate"), [VALUE.format(sym="a")], 1, "a")
    found += _said(text, strip.get("acceptance rate"), [r"accepted (?:only )?(\d+)% of the drafts it judged"], 100,
                   "a (as a share)")
    found += _said(text, strip.get("acceptance rate"), [r"guessed right (\d+) times? in 10"], 10, "a (in tenths)")
    if seen.get("speedup"):
        s = float(seen["speedup"])
        said = sorted({float(x) for pattern in MEASURED for x in re.findall(pattern, seen["text"])})
        off = [x for x in said if abs(x - s) > 0.0051]
        if off:
            found.append(f"the measured speedup is {s:.2f}x in the strip but {', '.join(f'{x:.2f}x' for x in off)} "
                         f"in words")
    return found


def _said(text: str, shown: str | None, patterns: list[str], scale: float, name: str) -> list[str]:
    """Each figure the words give for `name` against the strip's `shown` value, times `scale` (a share as
    tenths or a percentage), each as rounded as it was printed (half its last place off at most)."""
    try:
        value = float(shown) * scale
    except (TypeError, ValueError):
        return []
    off = set()
    for pattern in patterns:
        for x in re.findall(pattern, text):
            place = 10 ** -len(x.split(".")[1]) if "." in x else 1.0
            # the strip's own rounding (2 places) and the word's both move the figure
            if abs(float(x) - value) > place / 2 + 0.005 * scale + 1e-9:
                off.add(x)
    return [f"{name} is {shown} on the strip but {', '.join(sorted(off))} in words"] if off else []


def verdict_agrees(seen: dict) -> list[str]:
    """The headline's verdict against what the lanes measured, and against the box's."""
    verdict, found = seen.get("verdict"), []
    label = LABELS.get(verdict)
    if label is None:
        return [f"no verdict on the tab (data-verdict {verdict!r})"]
    if label not in seen["headline"][:40]:
        found.append(f"the headline does not open with its verdict {label!r}: {seen['headline'][:60]!r}")
    rep = seen.get("repeat")
    if rep:      # Race 3x: the median's verdict with the range as its interval (engine/analysis/repeat.py)
        median, low, high = (float(rep[x]) for x in ("median", "low", "high"))
        if rep["verdict"] != verdict:
            found.append(f"Race 3x: the headline says {verdict}, the repeat line {rep['verdict']}")
        if "median" not in seen["headline"] or f"{median:.2f}" not in seen["headline"]:
            found.append(f"Race 3x: the headline is not the median {median:.2f}x")
        band = (min(low, 0.97 * median), max(high, 1.03 * median))
        return found + _against(verdict, band, f"Race 3x's median {median:.2f}x (range {low:.2f}-{high:.2f}x)")
    if seen.get("box_verdict") not in (None, verdict):
        found.append(f"the headline says {verdict}, the ledger box {seen['box_verdict']}")
    if not seen.get("speedup"):
        return found + ["no measured speedup on the strip"]
    s = float(seen["speedup"])
    shown = re.search(r"anything from (\d+\.\d+)x to (\d+\.\d+)x", seen["why"])
    band = (float(shown.group(1)), float(shown.group(2))) if shown else (0.97 * s, 1.03 * s)
    found += _against(verdict, band, f"the measured {s:.2f}x")
    spec, base = meter(seen.get("spec_meter")), meter(seen.get("base_meter"))
    if seen.get("same_text") == "1" and spec and base and spec[0] and base[0]:
        lanes = (spec[1] / spec[0]) / (base[1] / base[0])     # same text: the lanes' clocks alone
        if abs(lanes / s - 1) > 0.03:
            found.append(f"the meters' clocks give {lanes:.2f}x, the strip {s:.2f}x")
        found += _against(verdict, (min(band[0], lanes), max(band[1], lanes)) if verdict == "about even" else
                          (lanes, lanes), f"the lanes' clocks ({spec[0]:.2f} s against {base[0]:.2f} s)")
    return found


def _against(verdict: str, band: tuple[float, float], what: str) -> list[str]:
    low, high = band
    if verdict == "faster" and low <= 1.0:
        return [f"'faster' beside {what}, whose interval reaches {low:.2f}x"]
    if verdict == "slower" and high >= 1.0:
        return [f"'slower' beside {what}, whose interval reaches {high:.2f}x"]
    if verdict == "about even" and not low <= 1.0 <= high:
        return [f"'about even' beside {what}, whose interval {low:.2f}-{high:.2f}x does not hold 1.0x"]
    return []


def assumptions(seen: dict, race_a: float | None, single_chain: bool) -> list[str]:
    """The k note and Explain's line say what they assume, advise no losing k, and name a differing race."""
    found = []
    for name, line, assumed in (("k note", seen.get("k_note", ""), r"acceptance a = (\d+\.\d+)"),
                                ("Explain", seen.get("explain", ""), r"a = (\d+\.\d+) assumed")):
        if not line.strip():
            found.append(f"the {name} is empty: it says nothing of what it assumes")
            continue
        if "assum" not in line and "not measured" not in line:
            found.append(f"the {name} does not say what it assumes: {line[:100]!r}")
        for x in re.findall(r"(?:formula )?expects (\d+\.\d+)x", line):
            if float(x) < 1.0:
                found.append(f"the {name} advises a k it expects to lose ({x}x)")
        a = re.search(assumed, line)
        if single_chain and a and race_a is not None and abs(race_a - float(a.group(1))) > SEEN_DIFFERS \
                and "latest race accepted" not in line:
            found.append(f"the {name} assumes a = {a.group(1)} and does not say this race accepted {race_a:.2f}")
    return found


def check(seen: dict, race: Race) -> list[str]:
    """Every violation a teacher would meet on this finished race (empty: none)."""
    if seen.get("error"):
        return ["error: " + seen["error"][:160]]
    found = one_value(seen) + verdict_agrees(seen)
    ran = seen.get("ran", "")
    want = f"token tree {race.tree}" if race.tree else f"k = {race.k}"
    if want not in ran or ("greedy" in ran) != (race.temperature == 0):
        found.append(f"the race ran other settings than asked ({want}, T = {race.temperature:g}): {ran[:120]!r}")
    phone = seen.get("phone")
    if phone is not None and (phone.get("cut") or "×" not in phone.get("text", "")):
        found.append(f"phone: the headline's figure is cut or missing: {phone.get('text', '')[:80]!r}")
    return found + assumptions(seen, figs(seen).get("a"), not race.repeat and not race.tree)


def link(url: str, race: Race, max_new: int) -> str:
    query = {"pair": race.pair, "prompt": PROMPTS[race.pair], "k": race.k, "temperature": race.temperature,
             "seed": 1, "max_new_tokens": max_new}
    return f"{url}/?{urlencode({**query, **({'tree': race.tree} if race.tree else {})})}"


def wait_text(page, selector: str, until, timeout_s: float = 15.0) -> str:
    """The element's text once `until(text)` holds (or whatever it holds after timeout_s)."""
    end = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < end:
        loc = page.locator(selector)
        text = loc.first.inner_text() if loc.count() else ""
        if until(text):
            break
        page.wait_for_timeout(300)
    return text


def settled_text(text: str) -> bool:
    """An element's text once Gradio has replaced its progress placeholder ("processing | 0.1/0.1s",
    "queue: 1/1 | 0.0/0.1s", "0.1s"): a sentence, not a timer."""
    t = text.strip()
    return bool(re.search(r"[A-Za-z]{3,}", t)) and not re.match(r"(processing|queue:)", t)


def note_settled(a: float | None):
    """When the k note has caught up with the race (refreshed after it): not empty, and where it assumes an
    a far from this race's `a`, naming the latest race (None: any text will do)."""
    def until(text: str) -> bool:
        m = re.search(r"acceptance a = (\d+\.\d+)", text)
        return settled_text(text) and (a is None or m is None or "latest race accepted" in text
                                       or abs(float(m.group(1)) - a) <= SEEN_DIFFERS)
    return until


def walk_one(browser, url: str, race: Race, out: str, max_new: int, phone_shot: bool) -> dict:
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    try:
        page.goto(link(url, race, max_new))
        page.wait_for_selector("#run")
        page.wait_for_selector("body[data-settings-fold=done]", state="attached")
        page.wait_for_function("(p) => document.querySelector('#prompt textarea').value === p",
                               arg=PROMPTS[race.pair])
        start = time.monotonic()
        page.click("#run3" if race.repeat else "#run")
        page.wait_for_selector("#status .status-done, #status .status-error", state="detached", timeout=15_000)
        page.wait_for_selector("#status .status-done, #status .status-error", timeout=400_000)
        seconds = time.monotonic() - start
        page.wait_for_timeout(1500)             # the last round's reveal, the k note's refresh after the race
        seen = page.evaluate(READ_TAB)
        base = os.path.join(out, race.name)
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=f"{base}.png")
        page.locator("#race-tab").screenshot(path=f"{base}-tab.png")
        shots = [f"{base}.png", f"{base}-tab.png"]
        if phone_shot:
            page.set_viewport_size({"width": 390, "height": 844})
            page.wait_for_timeout(800)
            page.evaluate("document.querySelector('#race-tab').scrollIntoView()")   # the race, not the form
            seen["phone"] = page.evaluate(PHONE_HEADLINE)
            page.screenshot(path=f"{base}-phone.png")
            shots.append(f"{base}-phone.png")
            page.set_viewport_size({"width": 1366, "height": 768})
        a = figs(seen).get("a") if not race.repeat and not race.tree else None
        seen["k_note"] = wait_text(page, "#k-note", note_settled(a), 10.0)
        page.get_by_role("tab", name="Explain").click()
        page.click("#whatif-here")
        seen["explain"] = wait_text(page, "#whatif-here-note", settled_text, 15.0)
        page.click("#race-tab-button")
        return {"race": asdict(race), "seconds": round(seconds, 1), "seen": seen, "figures": figs(seen),
                "screenshots": shots, "violations": check(seen, race)}
    finally:
        context.close()


def line(result: dict) -> str:
    race, seen, f = result["race"], result["seen"], result["figures"]
    speed = seen.get("speedup")
    rep = seen.get("repeat")
    shown = (f"median {float(rep['median']):.2f}x" if rep else f"{float(speed):.2f}x" if speed else "-")
    figures = " ".join(f"{k}={f[k]:g}" for k in ("a", "c", "v") if k in f)
    v = result["violations"]
    return (f"{race['name']:28} {result['seconds']:6.1f} s  {str(seen.get('verdict')):10} {shown:>14}  {figures:28} "
            + ("ok" if not v else f"{len(v)} violation(s): " + "; ".join(v)))


def busy_loops(n: int) -> list:
    """N processes that keep a core busy each (the loaded case), ended by the caller."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main(args) -> int:
    from playwright.sync_api import sync_playwright

    import torch

    from specviz.app.cpu_threads import decode_threads
    from specviz.app.profile import load_profile
    from specviz.app.state import AppState
    from specviz.view.serve import serve

    races = [r for r in MATRIX if r.pair in args.pairs.split(",")]
    if args.races:
        races = [r for r in races if r.name in args.races.split(",")] if not args.races.isdigit() else \
            races[:int(args.races)]
    os.makedirs(args.out, exist_ok=True)
    loads = busy_loops(args.busy)
    threads = decode_threads("127.0.0.1", None)
    torch.set_num_threads(threads)          # as app.py gives a local browser's races
    app = AppState.from_profile(load_profile(tier="cpu"), device="cpu")
    app.advisor.enabled = True              # as app.py: each pair timed at load, the k note and Explain from it
    app.pairs.preload(app.pairs.default_preset())
    demo, url = serve(app)
    results, started = [], time.monotonic()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            phoned = set()
            for race in races:
                try:
                    result = walk_one(browser, url, race, args.out, args.max_new_tokens, race.pair not in phoned)
                except Exception as err:           # noqa: BLE001 (a race the walk could not finish is a finding)
                    result = {"race": asdict(race), "seconds": 0.0, "seen": {}, "figures": {}, "screenshots": [],
                              "violations": [f"the walk failed: {type(err).__name__}: {str(err)[:200]}"]}
                phoned.add(race.pair)
                results.append(result)
                print(line(result), flush=True)
            browser.close()
    finally:
        demo.close()
        for proc in loads:
            proc.terminate()
            proc.wait()
    bad = sum(bool(r["violations"]) for r in results)
    total = time.monotonic() - started
    print(f"{len(results)} races in {total:.0f} s beside {args.busy} busy processes, {threads} threads: "
          f"{bad} with violations")
    with open(os.path.join(args.out, "walkthrough.json"), "w") as f:
        json.dump({"command": " ".join([sys.executable, *sys.argv]), "busy": args.busy, "threads": threads,
                   "cores": os.cpu_count(), "max_new_tokens": args.max_new_tokens, "seconds": round(total),
                   "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "races": results}, f, indent=1)
    return 1 if bad else 0
