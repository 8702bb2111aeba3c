"""The lesson's first minute: how soon the first visitor's first token appears, cold and after the warm-up.

    python scripts/first_token.py [--pairs bundled,smollm2] [--max-new-tokens 64] [--json out.json]

A benchmark, not a test: run it on a quiet machine. For each pair, two fresh server processes (so
nothing is cached from the run before), each served as `python app.py` serves it (the CPU profile, the
decoding threads it picks for a loopback host, the cost model on):
- cold: the server starts without warming the pair, and the first visitor's race loads it and pays
  the first race's one-off costs;
- warm: the server starts warming the pair in the background, as app.py does (app/pairs.py `preload`);
  the first visitor comes once the warm-up has ended (its duration is printed too).
In each, the first visitor's race and then a second one, through the `/race` API as the page's Run
streams it, timed from the join to the first update whose speculative pane holds a token, and to the
race's end. Greedy, the pair's first example prompt. Prints one markdown table (the issue's bound:
after the warm-up, the first visitor's first token within 3 s).
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def one_server(key: str, mode: str, max_new_tokens: int) -> dict:
    """(in a fresh process) Serve the app, warm or cold, and time the first two visitors' races."""
    from specviz.app.heap import limit_arenas
    limit_arenas()
    import torch

    from specviz.app.cpu_threads import decode_threads
    from specviz.app.profile import load_profile
    from specviz.app.state import AppState
    from specviz.bench.classroom import TOKEN, _http, _join, _read
    from specviz.bench.load_client import _form
    from specviz.view.handlers import RACE_FIELDS
    from specviz.view.serve import serve

    torch.set_num_threads(decode_threads("127.0.0.1"))
    app = AppState.from_profile(load_profile(tier="cpu"), device="cpu")
    app.advisor.enabled = True
    preset = app.pairs.preset(key)
    out: dict = {"pair": key, "mode": mode, "threads": torch.get_num_threads()}
    if mode == "warm":
        start = time.monotonic()
        app.pairs.preload(preset)
        while app.pairs.warming.left(key) is not None or not app.pairs.loaded(key):
            if time.monotonic() - start > 900:
                raise SystemExit(f"{key}: the warm-up did not end within 15 minutes")
            time.sleep(0.05)
        out["warm_up_s"] = round(time.monotonic() - start, 2)
    demo, url = serve(app)
    try:
        fn = next(i for i, f in demo.fns.items() if f.api_name == "race")
        shown = [getattr(c, "value", None) for c in demo.fns[fn].inputs]
        form = [v if v is not None else shown[j] for j, v in
                enumerate(_form(preset.examples[0], max_new_tokens, preset=key, temperature=0.0))]
        spec_pane = RACE_FIELDS.index("spec_pane")
        for visitor in ("first", "second"):
            with _http("127.0.0.1", 900) as http:
                session = f"{visitor}-{mode}"
                first: list[float] = []
                start = time.monotonic()
                refused = _join(http, url, fn, form, session)
                if refused:
                    raise SystemExit(f"{key}: the race was refused: {refused}")

                def seen(output):
                    data = output.get("data") or []
                    pane = data[spec_pane] if len(data) > spec_pane else None
                    if not first and pane and TOKEN.search(json.dumps(pane)):
                        first.append(time.monotonic() - start)
                final = _read(http, url, session, seen)
                out[f"{visitor}_token_s"] = round(first[0], 2) if first else None
                out[f"{visitor}_race_s"] = round(time.monotonic() - start, 2) if final is not None else None
    finally:
        demo.close()
    return out


def table(rows: list[dict]) -> str:
    def s(value):
        return "" if value is None else f"{value:.2f} s"
    lines = ["| pair | start | warm-up | first visitor: first token | its race | second visitor: first token | "
             "its race |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['pair']} | {r['mode']} | {s(r.get('warm_up_s'))} | **{s(r.get('first_token_s'))}** | "
                     f"{s(r.get('first_race_s'))} | {s(r.get('second_token_s'))} | {s(r.get('second_race_s'))} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", default="bundled,smollm2")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--json", default=None, help="write the rows here too")
    parser.add_argument("--one", nargs=2, metavar=("PAIR", "MODE"), help=argparse.SUPPRESS)  # a child process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_server(args.one[0], args.one[1], args.max_new_tokens)), flush=True)
        return 0
    rows = []
    for key in [k.strip() for k in args.pairs.split(",") if k.strip()]:
        for mode in ("cold", "warm"):
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", key, mode,
                                   "--max-new-tokens", str(args.max_new_tokens)],
                                  capture_output=True, text=True, cwd=ROOT, timeout=1800)
            last = (done.stdout.strip().splitlines() or [""])[-1]
            if done.returncode != 0 or not last.startswith("{"):
                print(f"{key} {mode}: failed ({done.returncode}): {(done.stderr or done.stdout).strip()[-400:]}")
                continue
            rows.append(json.loads(last))
            print(json.dumps(rows[-1]), flush=True)
    print(table(rows))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"max_new_tokens": args.max_new_tokens, "rows": rows}, f, indent=1)
    warm = [r for r in rows if r["mode"] == "warm"]
    return 0 if warm and all(r.get("first_token_s") is not None and r["first_token_s"] <= 3.0 for r in warm) else 1


if __name__ == "__main__":
    sys.exit(main())
