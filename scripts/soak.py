"""Soak: a few hundred mixed requests against the served app, its resident memory read as they go.

    python scripts/soak.py [--requests 300] [--clients 4] [--every 30]

The app is served in this process on localhost with the pairs named (`--pairs`, each taken in turn);
`--clients` threads, each standing for its own address, send races, /generate calls (sampled and
greedy), step-mode starts, lossless checks (50 samples) and Rules-tab runs in turn, each with its own
seed and one of the pair's example prompts. After every `--every` requests the script waits until
the server is idle, then reads the process's resident memory (VmRSS). glibc's arenas are capped as
app.py caps them (app/heap.py) unless `--as-before`. Prints the table and the
growth from the reading after the first `--every` requests to the last; exits non-zero if that
growth exceeds 10% or a request failed. The reading follows the app's heap trimming (app/heap.py),
which runs at most every MIN_GAP_S seconds when a job ends: each reading waits that long first.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["SPECVIZ_TRUST_FORWARDED"] = "1"      # each client's X-Forwarded-For is its address

KINDS = ("race", "generate", "step", "generate-greedy", "lossless", "rules")


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status (Linux only)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--every", type=int, default=30)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--pairs", default="bundled", help="preset keys taken in turn, e.g. bundled,smollm2")
    parser.add_argument("--as-before", action="store_true", help="leave glibc's arenas uncapped (app/heap.py)")
    args = parser.parse_args()

    from specviz.app.heap import limit_arenas
    if not args.as_before:
        limit_arenas()        # as app.py does, before the server's threads start
    import gc
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from gradio_client import Client

    from specviz.app import heap
    from specviz.app.profile import load_profile
    from specviz.app.settings import MIN_SAMPLES
    from specviz.app.state import AppState
    from specviz.bench.load_client import _form, client_address, seconds_to_idle
    from specviz.engine.loop.drafters import DEFAULT_DRAFTER
    from specviz.models.presets import get_preset
    from specviz.view.serve import serve

    app = AppState.from_profile(load_profile(tier="cpu"), device="cpu")
    pairs = args.pairs.split(",")
    for key in pairs:
        app.pairs.pair(app.pairs.preset(key))
    demo, url = serve(app)
    prompts = {key: list(get_preset(key).examples) for key in pairs}
    # One client (one session, one address) per worker thread: a client never has two requests at once.
    local, made = threading.local(), iter(range(args.clients))
    counter, lock, failures = iter(range(args.requests)), threading.Lock(), []
    done = [0]

    def own_client() -> Client:
        if not hasattr(local, "client"):
            with lock:
                i = next(made)
            local.client = Client(url, verbose=False, download_files=False,
                                  headers={"X-Forwarded-For": client_address(i)})
        return local.client

    def one(n: int) -> None:
        client, kind = own_client(), KINDS[n % len(KINDS)]
        key = pairs[n // len(KINDS) % len(pairs)]
        prompt = prompts[key][n % len(prompts[key])]
        form = _form(prompt, args.max_new_tokens, seed=n, preset=key)
        try:
            if kind == "race":
                client.predict(*form, api_name="/race")
            elif kind.startswith("generate"):
                temperature = 0.0 if kind.endswith("greedy") else 0.8
                out = client.predict(prompt, key, 4, temperature, 0, 1.0, args.max_new_tokens, n,
                                     DEFAULT_DRAFTER, False, api_name="/generate")
                assert out["token_ids"], out
            elif kind == "step":
                client.predict(*form, api_name="/step")      # the State input is not in the API
            elif kind == "lossless":
                client.predict(MIN_SAMPLES, *_form(prompt, 16, temperature=1.0, seed=n, preset=key), api_name="/lossless")
            else:
                client.predict(1.0, *_form(prompt, 16, seed=n, preset=key), api_name="/rules")
        except Exception as err:        # noqa: BLE001 (counted and printed; the soak goes on)
            failures.append(f"request {n} ({kind}): {type(err).__name__}: {str(err)[:160]}")
        with lock:
            done[0] += 1

    readings = [(0, rss_mb())]
    start = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=args.clients)
    try:
        while True:
            batch = [n for _, n in zip(range(args.every), counter)]
            if not batch:
                break
            list(pool.map(one, batch))
            seconds_to_idle()
            time.sleep(heap.MIN_GAP_S + 0.5)      # the next job's end may trim the heap; wait out its gap
            heap.trim()
            gc.collect()
            readings.append((done[0], rss_mb()))
            print(f"after {done[0]:4d} requests ({time.monotonic() - start:6.0f} s): resident {readings[-1][1]:7.0f} MB, "
                  f"{len(gc.get_objects())} Python objects", flush=True)
    finally:
        pool.shutdown()
        demo.close()
    for line in failures[:10]:
        print(line)
    first, last = readings[1][1], readings[-1][1]
    growth = last / first - 1
    print(f"{done[0]} requests ({', '.join(KINDS)} in turn), {len(failures)} failed; resident memory "
          f"{readings[0][1]:.0f} MB at start, {first:.0f} MB after {readings[1][0]}, {last:.0f} MB after "
          f"{readings[-1][0]}: {growth:+.1%} from the first reading")
    return 0 if not failures and growth <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
