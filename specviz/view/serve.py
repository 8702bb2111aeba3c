"""Serve the app in this process on a free local port (tests and the load-test script)."""
from __future__ import annotations

import socket
import time
from typing import Callable

from ..app.state import AppState
from .fair_queue import queue_demo
from .ui import build_demo, launch_options


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(app: AppState, clock: Callable[[], float] = time.monotonic):
    """Launch without blocking; returns (demo, url). Call demo.close() when done. `clock` is what the
    fair queue's caps read (view/fair_queue.py; tests move it by hand)."""
    demo = build_demo(app)
    queue_demo(demo, app.limits, clock)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                **launch_options(app.limits))
    return demo, f"http://127.0.0.1:{port}"
