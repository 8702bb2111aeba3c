"""ZeroGPU support: `gpu(duration)` marks a function that runs on the accelerator.

On a ZeroGPU Space (the `spaces` package installed and SPACES_ZERO_GPU set) it is
`spaces.GPU(duration=...)`: each call runs in a forked GPU worker, which pickles what goes in
and what comes out; the main process has no GPU at all (spaces makes CUDA initialization
raise there). Elsewhere the function runs as it is, unless `EMULATE` is set (tests): then
every argument and every result goes through pickle and `in_worker()` is true during the
call, as in a real worker, so a test can assert that nothing decodes outside one.

This module knows nothing of the app: what runs inside is in app/gpu_calls.py. app.py imports
`spaces` before anything imports torch, as ZeroGPU requires.
"""
from __future__ import annotations

import functools
import inspect
import pickle
import threading
from typing import Callable

from ..hosting_env import zerogpu_space

try:
    import spaces  # noqa: F401  (app.py imported it first, before torch)
except Exception:          # not installed, or (spaces 0.51) a CPU build of torch it cannot patch
    spaces = None

ON_ZEROGPU = spaces is not None and zerogpu_space()
EMULATE = False          # tests: pickle across a pretend process boundary
_worker = threading.local()


def in_worker() -> bool:
    """True inside a `gpu` function's call (always, on a real ZeroGPU worker)."""
    return ON_ZEROGPU or getattr(_worker, "depth", 0) > 0


def gpu(duration: Callable[..., int]):
    """Decorator: run on the accelerator, reserving `duration(*args)` seconds on ZeroGPU."""
    def wrap(fn):
        if ON_ZEROGPU:
            return spaces.GPU(duration=duration)(fn)
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def stream(*args):
                if not EMULATE:
                    yield from fn(*args)
                    return
                gen = fn(*_across(args))
                try:
                    while True:
                        with _inside():
                            item = next(gen, _END)
                        if item is _END:
                            return
                        yield _across(item)
                finally:
                    with _inside():
                        gen.close()
            return stream

        @functools.wraps(fn)
        def call(*args):
            if not EMULATE:
                return fn(*args)
            with _inside():
                return _across(fn(*_across(args)))
        return call
    return wrap


_END = object()


def _across(value):
    """What a process boundary does to a value: it must pickle, and the other side gets a copy."""
    return pickle.loads(pickle.dumps(value))


class _inside:
    def __enter__(self):
        _worker.depth = getattr(_worker, "depth", 0) + 1

    def __exit__(self, *exc):
        _worker.depth -= 1
