"""Hand the heap's free memory back to the system after decoding jobs (glibc only).

glibc's malloc keeps memory that torch frees (tensors of every size, in many worker threads, each
with an arena of its own) for reuse instead of returning it, so a served app's resident memory
climbs with the requests it has served while the objects alive stay the same; `malloc_trim(0)`
returns it. `trim()` calls it when a decoding job ends (app/slots.py), at most once every
MIN_GAP_S seconds, so resident memory follows the work in hand instead of its high-water mark.
Elsewhere (macOS, musl) it does nothing.

glibc also gives each thread that meets a busy heap an arena of its own (up to 8 per core), and a
freed block can be reused only within its arena: a server whose worker threads take turns at the
requests spreads its peaks over many arenas and keeps growing, trimmed or not. `limit_arenas()`, called
by app.py before any thread starts, caps them at ARENAS (what MALLOC_ARENA_MAX=2 does): resident memory
then stays flat over hundreds of mixed requests (benchmarks/README.md, Soak).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import threading
import time

MIN_GAP_S = 10.0
ARENAS = 2
M_ARENA_MAX = -8          # mallopt's parameter number (glibc malloc.h)
_lock = threading.Lock()
_last = [0.0]


@functools.lru_cache(maxsize=None)
def _libc_function(name: str):
    """The C library's function `name`, or None where it has none (macOS, musl) or cannot be loaded."""
    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name, None)
    except OSError:
        return None


def _malloc_trim():
    return _libc_function("malloc_trim")


def trim(now=time.monotonic) -> bool:
    """malloc_trim(0) unless it ran less than MIN_GAP_S ago (or this C library has none); True if it ran."""
    with _lock:
        t = now()
        if t - _last[0] < MIN_GAP_S:
            return False
        _last[0] = t
    fn = _malloc_trim()
    if fn is None:
        return False
    fn(0)
    return True


def limit_arenas(n: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas at `n` for the arenas made from now on (call before threads start);
    True if set. Does nothing where the C library has no mallopt (macOS, musl) or the environment
    already says (MALLOC_ARENA_MAX)."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    mallopt = _libc_function("mallopt")
    return bool(mallopt is not None and mallopt(M_ARENA_MAX, int(n)) == 1)
