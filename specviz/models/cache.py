"""Loaded model pairs, shared read-only between users, at most `max_pairs` kept in memory.

Loading is serialized by a lock (two users asking for the same pair load it once); the
least recently used pair is dropped when a new one would exceed the bound. The engine never
writes to a model, so one loaded pair can serve every session at once.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

from ..engine.pair import ModelPair


class PairCache:
    def __init__(self, max_pairs: int = 2):
        self.max_pairs = max_pairs
        self._pairs: OrderedDict[str, ModelPair] = OrderedDict()
        self._lock = threading.Lock()

    def cached(self, key: str) -> bool:
        return key in self._pairs

    def get(self, key: str, load: Callable[[], ModelPair]) -> ModelPair:
        with self._lock:
            if key in self._pairs:
                self._pairs.move_to_end(key)
                return self._pairs[key]
            while len(self._pairs) >= self.max_pairs:
                self._pairs.popitem(last=False)
            pair = load()
            self._pairs[key] = pair
            return pair
