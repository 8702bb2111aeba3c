"""How many CPU threads torch may use for decoding in the web app.

Measured on a 2-core laptop-class machine with the page open in Chromium on the same machine
(scripts/page_parity.py, bundled pair, k = 4, 128 tokens): with torch's default of one thread
per core, the browser and the server's own threads took a core away mid-pass, both lanes ran
3 to 5 times slower than in the CLI, unevenly, and the page's speedup missed the CLI's by 36-67%.
With one core left free, the lanes ran at the CLI's pace and the page's figure came within 15%.
So when the browser may be on this machine (a loopback host), one core is left to it; a server
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
