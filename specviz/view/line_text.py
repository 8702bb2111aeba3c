"""What the page says while a request waits for the device: its place in line and the likely wait.

The app's decoding slots (app/slots.py) serve waiting jobs round robin, by address and inside an
address by tab, and a job waiting for its first slot learns its place (`InLine`) each time it
changes. `line_status` turns one into the line the page shows ("3rd in line, about 20 s: 3 runs
ahead of yours", the runs on the device counted among them), so a visitor in a busy room sees where
it stands, never a silent wait.
"""
from __future__ import annotations

import math

from ..app.slots import InLine


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ... 11th, 12th, 13th, ... 21st, ..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def about(seconds: float) -> str:
    """A likely wait in words a visitor reads at a glance: "about 20 s", "about 2 min"."""
    if seconds < 60:
        return f"about {max(1, math.ceil(seconds / 5) * 5 if seconds > 10 else math.ceil(seconds))} s"
    return f"about {max(1, round(seconds / 60))} min"


def line_status(where: InLine, what: str = "run") -> str:
    """The waiting line's status text for one job (`what`: the kind of request, for the words)."""
    ahead = where.place           # the runs on the device now and the ones before this one in line
    runs = f"{ahead} {what}{'s' if ahead != 1 else ''} ahead of yours"
    return f"{ordinal(where.place)} in line, {about(where.wait_s)}: {runs} (turns go round by address, then by tab)"
