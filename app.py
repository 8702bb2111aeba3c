"""specviz web demo: `python app.py` serves it on http://127.0.0.1:7860 (Spaces runs this file).

`--host 0.0.0.0 --port N` serves a classroom over the local network.
"""
from __future__ import annotations

import argparse
import os


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="specviz: speculative decoding, visualized")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    args = parser.parse_args(argv)

    from specviz.view.app_state import AppState
    from specviz.view.ui import build_demo, launch_options

    demo = build_demo(AppState(device=args.device))
    demo.queue(max_size=32, default_concurrency_limit=1)
    demo.launch(server_name=args.host, server_port=args.port, **launch_options())


if __name__ == "__main__":
    main()
