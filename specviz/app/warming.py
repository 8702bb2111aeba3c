"""The first minute: the default pair warming up in the background, and how long it is likely to take.

At start the app loads the default pair in the background (app/pairs.py `preload`: the weights, the
tokenizer, the lean step, a short warm-up race that pays the first race's one-off costs). `Warming`
notes when that began and how long the last warm-up of that pair took on this machine (kept in
`$SPECVIZ_HOME/warm-up.json`, FIRST_GUESS_S before any), so the page can say "warming up (about N s)"
until the pair is ready, and a page opened meanwhile can start its first race by itself once it is.
"""
from __future__ import annotations

import json
import threading
import time

from ..models.home import specviz_home

FIRST_GUESS_S = 30.0          # a warm-up never timed on this machine (the bundled pair takes seconds)


def _times_file():
    return specviz_home() / "warm-up.json"


def _read_times() -> dict:
    try:
        times = json.loads(_times_file().read_text(encoding="utf-8"))
        return times if isinstance(times, dict) else {}
    except (OSError, ValueError):
        return {}


class Warming:
    """Which pairs are warming up now: key -> (its label, when it began, the seconds it is likely to take)."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self._lock = threading.Lock()
        self._now: dict[str, tuple[str, float, float]] = {}

    def began(self, key: str, label: str) -> None:
        last = _read_times().get(key)
        guess = float(last) if isinstance(last, (int, float)) and last > 0 else FIRST_GUESS_S
        with self._lock:
            self._now[key] = (label, self.clock(), guess)

    def ended(self, key: str, ok: bool = True) -> None:
        with self._lock:
            entry = self._now.pop(key, None)
        if entry is None or not ok:
            return
        took = self.clock() - entry[1]
        times = _read_times()
        times[key] = round(took, 1)
        try:
            _times_file().parent.mkdir(parents=True, exist_ok=True)
            _times_file().write_text(json.dumps(times), encoding="utf-8")
        except OSError:
            pass          # a read-only home: the next start guesses again

    def left(self, key: str) -> tuple[str, float] | None:
        """(label, seconds likely left) while `key` warms up; None once it is ready (or never warmed)."""
        with self._lock:
            entry = self._now.get(key)
        if entry is None:
            return None
        label, since, guess = entry
        return label, max(1.0, guess - (self.clock() - since))


def warming_text(label: str, left_s: float) -> str:
    """The page's words while a pair warms up."""
    about = f"about {max(1, round(left_s))} s" if left_s < 90 else f"about {max(1, round(left_s / 60))} min"
    return (f"Warming up ({about}): loading {label} and its first race's one-off costs. "
            "Your first race starts by itself when it is ready.")
