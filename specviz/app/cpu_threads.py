"""How many CPU threads torch may use for decoding in the web app.

With torch's default of one thread per core, a browser open on the same machine takes a core
away mid-pass: torch's intra-op threads then wait on each other, both lanes slow down unevenly and
the page's speedup misses the CLI's (`scripts/page_parity.py` measures the gap). With one core left
free, the lanes run at the CLI's pace. So when the browser may be on this machine (a loopback host), one core is left to it; a server
for other machines (`--host 0.0.0.0`, a Space) uses every core. `--threads N` overrides both.
"""
from __future__ import annotations

import os

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def decode_threads(host: str, requested: int | None = None, cores: int | None = None) -> int:
    cores = cores or os.cpu_count() or 1
    if requested:
        return max(1, min(requested, cores))
    return max(1, cores - 1) if host in LOOPBACK else cores
