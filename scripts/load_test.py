"""Full load test: 20 concurrent clients against the app on localhost, bundled pair.

    python scripts/load_test.py [--clients 20] [--max-new-tokens 64] [--temperature 0.8] [--switch-to smollm2]

`--switch-to KEY`: the first client asks for that pair instead, which is not loaded yet: the
others must keep being served while it loads.

`--hostile KIND`: after the normal run, the same clients run again beside one hostile client, and
the two runs' p50/p95 are printed side by side (the normal clients' p95 should stay within 1.5x):
`flood`: 70 /generate joins from one session, never read; `lossless`: a 2000-sample lossless
check; and, from an address of their own, each join with a new session id and never read, sent
every 0.1 s while the normal clients run: `never-listens` (/race, a long prompt, 256 new tokens),
`new-sessions` (/generate, 256 new tokens), `step` (/step with an empty state: a fresh decode each);
and (specviz/bench/hostile_kinds.py) `replay`: 6 loops replaying a real 256-token trace, results read;
`churn`: /stop from a new session id each time, ~40 a second; `many-jobs`: 16 /generate jobs at once
from one address, each read; `leavers`: 8 loops of a /generate join whose client listens a second
and leaves; `upload`: 500 upload requests of 20 empty or 1-byte files; `trace-links`: 210 one-token
races, while another visitor's trace link (saved before) must still answer at the end.
`classroom` (specviz/bench/classroom.py): instead of the normal clients, `--clients` students (30
for the issue's room) from one loopback address (127.0.0.2) open the page, race (/race) and step
within seconds of each other, beside a hostile client from 127.0.0.3 keeping 16 /generate jobs in
hand; prints each student's wait to first token and refusals, the races' tokens against each race
run alone, the time the races take alone in turn (+20%: the bound on the last first token), and the
server's memory. Exits non-zero unless every student was served with no refusal, no crossed output,
and the last first token within the bound.
Each normal client stands for its own address (X-Forwarded-For, which this script's server is told
to trust: specviz/bench/load_client.py). Bounded: the hostile client stops when the normal clients
are done (400 joins at most), the lossless check is cancelled, and the server closed.

After the hostile run, prints how long the server took to go idle (under 0.1 of a core) once every
client had left, and the server's resident memory before the hostile run and once idle after it.
Prints each client's latency, the p50/p95 and their ratio, results lost (a normal client that got
an error instead of its output) and crossed (an output not equal to its seed's run alone). Exits
non-zero if any result was lost or crossed.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["SPECVIZ_TRUST_FORWARDED"] = "1"      # each client's X-Forwarded-For is its address (see above)
HOSTILE = ["flood", "lossless", "never-listens", "new-sessions", "step",
           "replay", "churn", "many-jobs", "leavers", "upload", "trace-links", "classroom"]


def resident_mb() -> float:
    """This process's resident memory (the server runs in it), in MB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--switch-to", default=None, help="a preset key the first client switches to")
    parser.add_argument("--hostile", choices=HOSTILE, default=None,
                        help="run again beside one hostile client and compare the latencies")
    args = parser.parse_args()

    import inspect
    import threading
    import time

    from specviz.bench import hostile_kinds
    from specviz.bench.load_client import (check_against_solo, flood, hostile, long_lossless, percentiles,
                                           run_clients, seconds_to_idle)
    from specviz.view import trace_files
    from specviz.app.profile import load_profile
    from specviz.view.serve import serve
    from specviz.models.presets import get_preset
    from specviz.app.state import AppState

    app = AppState.from_profile(load_profile(tier="cpu"), device="cpu")
    app.pairs.pair(app.pairs.preset("bundled"))
    demo, url = serve(app)
    keys = ["bundled"] * args.clients
    if args.switch_to:
        app.pairs.preset(args.switch_to)
        keys[0] = args.switch_to
    prompts = list(get_preset("bundled").examples)
    hostile_results, hostile_note, memory = None, "", None
    fns = {f.api_name: i for i, f in demo.fns.items() if isinstance(f.api_name, str)}
    fns["replay"] = next(i for i, f in demo.fns.items() if f.fn is not None
                         and getattr(inspect.unwrap(f.fn), "func", None) is not None
                         and inspect.unwrap(f.fn).func.__name__ == "replay_in_turn")
    if args.hostile == "classroom":
        from specviz.bench import classroom
        try:
            before = resident_mb()
            figures = classroom.run(url, demo, app, args.clients, args.max_new_tokens, args.temperature, prompts)
            after = resident_mb()
        finally:
            demo.close()
        lines, ok = classroom.report(figures, args.clients)
        print("\n".join(lines))
        print(f"resident memory {before:.0f} MB before the class, {after:.0f} MB after "
              f"({(after / before - 1) * 100:+.1f}%)")
        return 0 if ok else 1
    try:
        results = run_clients(url, keys, prompts, args.clients, args.max_new_tokens, args.temperature,
                              addresses=True)
        if args.hostile:
            job, done, thread, tally, threads, victim = None, threading.Event(), None, None, [], None
            memory = [resident_mb(), None]
            if args.hostile in hostile_kinds.KINDS:
                trace_text = ""
                if args.hostile == "replay":      # a real trace, as the page would download it
                    from specviz.view.handlers import run_race
                    from specviz.bench.load_client import _form
                    from specviz.app.request import FORM_FIELDS
                    last = list(run_race(app, **dict(zip(FORM_FIELDS, _form(prompts[0], 256)))))[-1]
                    token = last.download.split("specviz/trace/")[1][:32]
                    trace_text = trace_files.find(token).read_text(encoding="utf-8")
                    hostile_note += f"replaying a real trace of {len(trace_text.encode()) / 1e3:.0f} KB;"
                if args.hostile == "trace-links":  # another visitor's link, saved before the flood
                    victim = trace_files.save({"victim": True}, owner="203.0.113.250")
                threads, tally = hostile_kinds.start(args.hostile, url, fns, prompts[0], done, trace_text)
                time.sleep(2)
            elif args.hostile in ("never-listens", "new-sessions", "step"):
                thread, tally = hostile(url, args.hostile, prompts[0], done)
                time.sleep(2)
            elif args.hostile == "flood":
                out = flood(url)
                hostile_note = (f"flooder: {out['accepted']} joins accepted, {out['refused']} refused "
                                f"({out['message']!r})")
            else:
                job = long_lossless(url, prompts[0])
                time.sleep(3)
            try:
                start = time.monotonic()
                hostile_results = run_clients(url, keys, prompts, args.clients, args.max_new_tokens, args.temperature,
                                              addresses=True)
                hostile_note += f" normal clients done in {time.monotonic() - start:.1f} s"
                if job is not None:
                    hostile_note = f"2000-sample lossless check still running: {not job.done()};" + hostile_note
            finally:
                done.set()
                if job is not None:
                    job.cancel()
                # Every normal client is done and the hostile one has stopped: time until the server idles.
                idle = seconds_to_idle()
                hostile_note += (f"; server idle {idle:.1f} s after the last client left" if idle is not None
                                 else "; server still busy 30 s after the last client left")
                for t in threads + ([thread] if thread is not None else []):
                    t.join(15)
                if tally is not None:
                    extra = {k: v for k, v in tally.items() if k not in ("accepted", "refused", "message")}
                    hostile_note = (f"{tally['accepted']} joins accepted, {tally['refused']} refused "
                                    f"({tally['message']!r}){'; ' + str(extra) if extra else ''};" + hostile_note)
                if victim is not None:
                    import httpx
                    alive = httpx.get(f"{url}/specviz/trace/{victim}", timeout=10).status_code == 200
                    hostile_note += f"; another visitor's trace link still answers: {alive}"
                memory[1] = resident_mb()
    finally:
        demo.close()
    for r in results:
        if "error" not in r:
            print(f"client {r['client']:2d}  {r['preset']:10} {r['latency_s']:6.2f} s  {len(r['token_ids'])} tokens")
    for r in results:
        if "error" in r:
            print(f"client {r['client']:2d}  lost its result: {r['error']}")
    results = [r for r in results if "error" not in r]
    bad = []
    for key in sorted(set(keys)):
        group = [r for r in results if r["preset"] == key]
        bad += check_against_solo(app.pairs.pair(app.pairs.preset(key)), group, args.max_new_tokens, args.temperature)
    p = percentiles([r for r in results if r["preset"] == "bundled"])
    print(f"{len(results)}/{args.clients} completed; bundled-pair clients' latency p50 {p['p50_s']:.2f} s, p95 {p['p95_s']:.2f} s, "
          f"max {p['max_s']:.2f} s; outputs equal to solo runs: {len(results) - len(bad)}/{len(results)}")
    ok = len(results) == args.clients and not bad
    if hostile_results is not None:
        lost = [r for r in hostile_results if "error" in r]
        for r in lost:
            print(f"beside the hostile client, client {r['client']:2d} lost its result: {r['error']}")
        hostile_results = [r for r in hostile_results if "error" not in r]
        bad_h = check_against_solo(app.pairs.pair(app.pairs.preset("bundled")), hostile_results, args.max_new_tokens,
                                   args.temperature)
        h = percentiles([r for r in hostile_results if r["preset"] == "bundled"]) if hostile_results else \
            {"p50_s": float("nan"), "p95_s": float("nan")}
        grew = (memory[1] / memory[0] - 1) * 100 if memory and memory[1] else float("nan")
        print(f"with a hostile client ({args.hostile}; {hostile_note.strip()}): {len(hostile_results)}/{args.clients} "
              f"completed; p50 {h['p50_s']:.2f} s, p95 {h['p95_s']:.2f} s (without: p50 {p['p50_s']:.2f} s, p95 "
              f"{p['p95_s']:.2f} s; p95 ratio {h['p95_s'] / p['p95_s']:.2f}); results lost: {len(lost)}; outputs "
              f"crossed (not equal to solo runs): {len(bad_h)}/{len(hostile_results)}; resident memory "
              f"{memory[0]:.0f} MB before, {memory[1]:.0f} MB after ({grew:+.1f}%)")
        ok = ok and not lost and not bad_h
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
