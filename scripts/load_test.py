"""Full load test: 20 concurrent clients against the app on localhost, bundled pair.

    python scripts/load_test.py [--clients 20] [--max-new-tokens 64] [--temperature 0.8]

Prints each client's latency, the p50/p95, and whether every client got exactly the output
its seed gives when run alone. Exits non-zero if any request failed or differed.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=0.8)
    args = parser.parse_args()

    from specviz.hosting.load import check_against_solo, percentiles, run_clients
    from specviz.hosting.profile import load_profile
    from specviz.view.serve import serve
    from specviz.models.presets import BUNDLED_EXAMPLES
    from specviz.view.app_state import AppState

    app = AppState.from_profile(load_profile(tier="cpu"), device="cpu")
    demo, url = serve(app)
    try:
        results = run_clients(url, "bundled", list(BUNDLED_EXAMPLES), args.clients, args.max_new_tokens,
                              args.temperature)
    finally:
        demo.close()
    for r in results:
        print(f"client {r['client']:2d}  {r['latency_s']:6.2f} s  {len(r['token_ids'])} tokens")
    bad = check_against_solo(app.pair(app.preset("bundled")), results, args.max_new_tokens, args.temperature)
    p = percentiles(results)
    print(f"{len(results)}/{args.clients} completed; latency p50 {p['p50_s']:.2f} s, p95 {p['p95_s']:.2f} s, "
          f"max {p['max_s']:.2f} s; outputs equal to solo runs: {len(results) - len(bad)}/{len(results)}")
    return 0 if len(results) == args.clients and not bad else 1


if __name__ == "__main__":
    sys.exit(main())
