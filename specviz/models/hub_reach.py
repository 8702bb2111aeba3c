"""Whether the Hugging Face Hub can be reached from here, asked once a minute at most.

Offline, `from_pretrained` on a hub id lets huggingface_hub retry its requests with a growing wait:
about 50 seconds and twenty lines of "Retrying in Ns" before the error, even for a model already in
the local cache. So before loading a hub id, specviz asks once (a TCP connection to the Hub's host,
3 s at most) and, with no answer, loads with `local_files_only=True`: a cached model loads at once,
a missing one fails at once with the one-line message of loading.py.
"""
from __future__ import annotations

import os
import socket
import time
from urllib.parse import urlparse

TIMEOUT_S = 3.0
REMEMBER_S = 60.0
_last: tuple[float, bool] | None = None      # (when asked, reachable)
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def hub_reachable() -> bool:
    """False when HF_HUB_OFFLINE is set, or the Hub's host does not accept a connection within TIMEOUT_S.
    True without asking behind a proxy (HTTPS_PROXY and the like), where only huggingface_hub can tell."""
    global _last
    if _truthy(os.environ.get("HF_HUB_OFFLINE")) or _truthy(os.environ.get("TRANSFORMERS_OFFLINE")):
        return False
    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return True      # behind a proxy a direct connection proves nothing: leave it to huggingface_hub
    now = time.monotonic()
    if _last is not None and now - _last[0] < REMEMBER_S:
        return _last[1]
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "huggingface.co", port), timeout=TIMEOUT_S):
            reachable = True
    except OSError:                      # no DNS, no route, refused, timed out
        reachable = False
    _last = (now, reachable)
    return reachable


def offline_kwargs() -> dict:
    """Extra keyword arguments for from_pretrained / snapshot_download of a hub id: none when the Hub
    answers, `local_files_only=True` when it does not (the local cache only, no retries)."""
    return {} if hub_reachable() else {"local_files_only": True}
