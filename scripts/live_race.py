"""How smoothly a race streams into a real browser: Chromium (Playwright) watches the panes while a race runs.

    python scripts/live_race.py [--pairs smollm2,bundled] [--screens laptop,phone] [--throttles 1,4]
                                [--max-new-tokens 128] [--prompt TEXT] [--json out.json]

A benchmark, not a test: run it on a quiet machine. For each pair, screen (laptop 1366x768, phone
390x844 with touch) and CPU throttle (Chromium's Emulation.setCPUThrottlingRate: 4 is the usual phone
emulation) it opens the page, races the chat prompt greedily once to load and warm the pair (not
measured; the page loads its chart script as that race's charts are drawn), then races it again and records, from Run's click until both lanes are done:
- first token: when each pane showed its first token, and how long after the server had it (the
  server's side is stamped where the app reads the race's events);
- longest gap: the longest time between two visible updates of the panes while tokens were still
  being produced (a MutationObserver on both panes);
- long tasks: the share of the race the main thread spent in tasks over 50 ms (the Long Tasks API);
- KB received: bytes the page received meanwhile (CDP Network.dataReceived, decoded);
- node swaps: pane nodes removed while the race streamed (0: updates were appended).
It prints one markdown table (benchmarks/history/live-race.md keeps the rows; benchmarks/README.md the latest figures).
"""
import argparse
import json
import os
import sys
import time
from urllib.parse import urlencode

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SCREENS = {"laptop": (1366, 768), "phone": (390, 844)}
PROMPT = "Give three short tips for learning a new language."
# Injected before the page's own scripts: pane mutations and long tasks, stamped on performance.now().
RECORDER = """
window.__live = { updates: { spec: [], base: [] }, first: {}, removed: 0, longtasks: [] };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__live.longtasks.push([e.startTime, e.duration]);
}).observe({ type: 'longtask', buffered: true });
const watchPanes = () => {
  for (const lane of ['spec', 'base']) {
    const pane = document.querySelector('#' + lane + '-pane');
    if (!pane || pane.dataset.recorded) continue;
    pane.dataset.recorded = '1';
    new MutationObserver((records) => {
      const now = performance.now(), live = window.__live;
      if (!live.armed) return;
      let tokens = false;
      for (const r of records) {
        if (live.started) live.removed += [...r.removedNodes].filter((n) => n.nodeType === 1 && n.matches && n.matches('[data-kind]')).length;
        for (const n of r.addedNodes) if (n.nodeType === 1 && (n.matches('[data-kind]') || n.querySelector('[data-kind]'))) tokens = true;
      }
      if (!tokens) return;
      live.updates[lane].push(now);
      live.started = true;
      if (!(lane in live.first)) live.first[lane] = Date.now();
    }).observe(pane, { childList: true, subtree: true });
  }
};
setInterval(watchPanes, 200);
"""


def stamp_server(first: dict):
    """Wrap the app's event stream so each lane's first token is stamped (wall clock) as the server reads it."""
    from specviz.view import handlers
    real = handlers.event_stream

    def stamped(app, run, cancel):
        first.clear()
        for event in real(app, run, cancel):
            if hasattr(event, "token_id") and event.kind != "rejected" and event.lane not in first:
                first[event.lane] = time.time() * 1000
            yield event
    handlers.event_stream = stamped


def race_once(page, wait_s: float = 600) -> None:
    page.click("#run")
    page.wait_for_selector("#status .status-done, #status .status-error", state="detached", timeout=15_000)
    page.wait_for_selector("#status .status-done, #status .status-error", timeout=wait_s * 1000)


def measure(browser, url: str, pair: str, screen: str, throttle: float, max_new: int, prompt: str,
            server_first: dict) -> dict:
    width, height = SCREENS[screen]
    phone = width < 640
    context = browser.new_context(viewport={"width": width, "height": height}, has_touch=phone, is_mobile=phone)
    context.add_init_script(RECORDER)
    page = context.new_page()
    page.goto(f"{url}/?{urlencode({'pair': pair, 'prompt': prompt, 'temperature': 0, 'seed': 1})}")
    page.wait_for_selector("#run")
    page.wait_for_selector("body[data-settings-fold=done]", state="attached")
    if not page.locator("#max-new").is_visible():
        page.click("#settings > button.label-wrap")
    box = page.locator("#max-new input[type=number]")
    box.fill(str(max_new))
    box.press("Enter")
    page.wait_for_function("(v) => Number(document.querySelector('#max-new input[type=range]').value) === v",
                           arg=max_new)
    if phone:
        page.click("#settings > button.label-wrap")
    race_once(page)                   # loads and warms the pair; not measured
    # ... and draws the page's first charts, whose script (Plotly, ~4.6 MB) the page loads then: the
    # measured race starts once they are drawn, as a reader's next race would, not while it compiles.
    page.wait_for_selector("#plot-race .js-plotly-plot .main-svg", state="attached", timeout=120_000)
    page.wait_for_timeout(1000)
    cdp = context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
    received = [0]
    cdp.send("Network.enable")
    cdp.on("Network.dataReceived", lambda e: received.__setitem__(0, received[0] + e.get("dataLength", 0)))
    if os.environ.get("LIVE_RACE_URLS"):         # which responses the bytes came from
        cdp.on("Network.responseReceived", lambda e: print("   ", e["response"]["url"][-90:], flush=True))
    page.evaluate("() => { const l = window.__live; l.updates = {spec: [], base: []}; l.first = {}; l.removed = 0;"
                  " l.started = false; l.longtasks = []; l.armed = true; l.t0 = performance.now(); l.wall0 = Date.now(); }")
    received[0] = 0
    race_once(page)
    data = page.evaluate("() => { const l = window.__live; l.armed = false; l.t1 = performance.now(); return l; }")
    context.close()
    return summarize(data, dict(server_first), received[0], pair, screen, throttle)


def summarize(data: dict, server_first: dict, received: int, pair: str, screen: str, throttle: float) -> dict:
    t0, t1 = data["t0"], data["t1"]
    span = max(t1 - t0, 1e-9)
    updates = sorted(data["updates"]["spec"] + data["updates"]["base"])
    gaps = [b - a for a, b in zip(updates, updates[1:])]
    busy = sum(min(s + d, t1) - max(s, t0) for s, d in data["longtasks"] if s + d > t0 and s < t1)
    first = {lane: (data["first"][lane] - data["wall0"]) / 1000 for lane in data["first"]}
    lag = {lane: (data["first"][lane] - server_first[lane]) / 1000
           for lane in data["first"] if lane in server_first}
    return {"pair": pair, "screen": screen, "throttle": throttle, "race_s": span / 1000,
            "first_spec_s": first.get("spec"), "first_base_s": first.get("base"),
            "lag_spec_s": lag.get("spec"), "lag_base_s": lag.get("base"),
            "longest_gap_s": max(gaps) / 1000 if gaps else None, "updates": len(updates),
            "longtask_share": busy / span, "kb_received": received / 1024, "nodes_removed": data["removed"]}


def table(rows: list[dict]) -> str:
    fmt = lambda x, f="{:.2f}": "—" if x is None else f.format(x)      # noqa: E731
    out = ["| pair | screen | CPU | race s | 1st token spec / plain s (behind server) | longest gap s | "
           "long tasks | KB received | nodes swapped |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['pair']} | {r['screen']} | {r['throttle']:g}x | {fmt(r['race_s'])} | "
                   f"{fmt(r['first_spec_s'])} / {fmt(r['first_base_s'])} ({fmt(r['lag_spec_s'])} / "
                   f"{fmt(r['lag_base_s'])}) | {fmt(r['longest_gap_s'])} | {fmt(r['longtask_share'], '{:.0%}')} | "
                   f"{fmt(r['kb_received'], '{:.0f}')} | {r['nodes_removed']} |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", default="smollm2,bundled")
    parser.add_argument("--screens", default="laptop,phone")
    parser.add_argument("--throttles", default="1,4")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--json", default="", help="also write the rows as JSON here")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    import torch

    from specviz.app.cpu_threads import decode_threads
    from specviz.app.profile import load_profile
    from specviz.app.state import AppState
    from specviz.view.serve import serve

    torch.set_num_threads(decode_threads("127.0.0.1"))      # as app.py does with the browser on this machine
    server_first: dict = {}
    stamp_server(server_first)
    app = AppState.from_profile(load_profile(tier="cpu"), device="cpu")
    demo, url = serve(app)
    rows = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            for pair in args.pairs.split(","):
                for screen in args.screens.split(","):
                    for throttle in (float(x) for x in args.throttles.split(",")):
                        rows.append(measure(browser, url, pair, screen, throttle, args.max_new_tokens,
                                            args.prompt, server_first))
                        print(table(rows[-1:]).splitlines()[-1], flush=True)
            browser.close()
    finally:
        demo.close()
    print(table(rows))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
