"""Loaded model pairs, shared read-only between users, at most `max_pairs` kept in memory.

Loading one pair never blocks another: the lock guards only the dictionaries, never a load.
Two users asking for the same pair that is not loaded yet load it once (the second waits for
the first's result, or its error); users of pairs already loaded are answered at once. The least
recently used pair is dropped when a new one arrives and the bound is reached. The engine
never writes to a model, so one loaded pair can serve every session at once.

A failed load is remembered for `remember_failures_s` seconds (the app uses 60): a hub pair that
takes 45 s to fail offline then fails at once for the next visitors instead of being tried again
by each of them. An error marked `transient` (errors.LoadError: memory short for a moment, an
unexpected failure inside the load) is not remembered: the next visitor tries again.

A dropped pair's CUDA graphs and static caches are let go with it (graph_model.forget_pair).
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable

from ..runtime.graph_model import forget_pair
from ..runtime.pair import ModelPair


class _Loading:
    """A load in progress: the users waiting for it read its pair or its error when `done` is set."""

    def __init__(self):
        self.done = threading.Event()
        self.pair: ModelPair | None = None
        self.error: BaseException | None = None


class PairCache:
    def __init__(self, max_pairs: int = 2, remember_failures_s: float = 0.0,
                 clock: Callable[[], float] = time.monotonic):
        self.max_pairs = max_pairs
        self.remember_failures_s = remember_failures_s
        self._clock = clock
        self._pairs: OrderedDict[str, ModelPair] = OrderedDict()
        self._loading: dict[str, _Loading] = {}
        self._failed: dict[str, tuple[float, BaseException]] = {}    # key -> (when, error)
        self._lock = threading.Lock()

    def cached(self, key: str) -> bool:
        return key in self._pairs

    def loading(self, key: str) -> bool:
        """Is the pair being loaded right now?"""
        with self._lock:
            return key in self._loading

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._pairs)

    def get(self, key: str, load: Callable[[], ModelPair]) -> ModelPair:
        with self._lock:
            if key in self._pairs:
                self._pairs.move_to_end(key)
                return self._pairs[key]
            failed = self._failed.get(key)
            if failed is not None and self._clock() - failed[0] < self.remember_failures_s:
                raise failed[1]
            self._failed.pop(key, None)
            pending = self._loading.get(key)
            owner = pending is None
            if owner:
                pending = self._loading[key] = _Loading()
        if not owner:                     # someone else is loading this very pair: wait for it
            pending.done.wait()
            if pending.error is not None:
                raise pending.error
            return pending.pair
        try:
            pair = load()                 # outside the lock: other pairs stay available meanwhile
        except BaseException as err:
            with self._lock:
                del self._loading[key]
                if (self.remember_failures_s > 0 and isinstance(err, Exception)
                        and not getattr(err, "transient", False)):
                    self._failed[key] = (self._clock(), err)
            pending.error = err
            pending.done.set()
            raise
        dropped = []
        with self._lock:
            while len(self._pairs) >= self.max_pairs:
                dropped.append(self._pairs.popitem(last=False)[1])
            self._pairs[key] = pair
            del self._loading[key]
        for old in dropped:
            forget_pair(old)
        pending.pair = pair
        pending.done.set()
        return pair
