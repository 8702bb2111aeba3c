"""specviz web demo: `python app.py` serves it on http://127.0.0.1:7860 (Spaces runs this file).

`--host 0.0.0.0 --port N` serves a classroom over the local network; `--profile` picks the
hosting tier from spaces.yaml (default: detected). A mistake in spaces.yaml stops the app
with a message naming the key.
"""
from __future__ import annotations

import argparse
import os
import sys

# ZeroGPU: `spaces` must be imported before torch touches CUDA.
from specviz.hosting import zerogpu  # noqa: F401,E402  (imports `spaces` when it is installed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="specviz: speculative decoding, visualized")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                        help="0.0.0.0 to serve other machines on the local network")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    parser.add_argument("--profile", default=None, choices=["cpu", "gpu", "zerogpu"],
                        help="hosting tier from spaces.yaml (default: detected; or SPECVIZ_PROFILE)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    args = parser.parse_args(argv)

    from specviz.errors import SpecvizError
    from specviz.hosting.profile import load_profile
    from specviz.view.app_state import AppState
    from specviz.view.ui import build_demo, launch_options

    try:
        profile = load_profile(tier=args.profile)
    except SpecvizError as err:
        print(f"specviz cannot start: {err}", file=sys.stderr)
        return 2
    app = AppState.from_profile(profile, device=args.device)
    if zerogpu.ON_ZEROGPU:
        first = next(iter(profile.presets.values()))
        app.pair(first)          # ZeroGPU: load at start, outside the GPU worker
    demo = build_demo(app)
    demo.queue(max_size=profile.limits.queue_size, default_concurrency_limit=profile.limits.concurrency_per_device)
    print(f"specviz: profile {profile.tier}, {len(profile.presets)} model pairs, "
          f"serving on http://{args.host}:{args.port}", flush=True)
    demo.launch(server_name=args.host, server_port=args.port, **launch_options())
    return 0


if __name__ == "__main__":
    sys.exit(main())
