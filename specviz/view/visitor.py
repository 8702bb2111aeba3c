"""Is the visitor this request serves still there? A check a long job reads between slices.

Gradio marks a request's queue event as no longer alive when its client's stream closes (the
tab closed, the script killed): `Queue.clean_events`, run when the stream notices the
disconnect (at its next message, or within its 10 s poll). `visitor_gone()`, called inside a
handler, finds that event through Gradio's LocalContext (the blocks and event id it sets for
every handler call) and returns a check of its `alive` flag. Outside a Gradio request (tests,
the CLI) the check is always False. These are Gradio internals (6.x): a change there makes the
check answer False, never fail a run.
"""
from __future__ import annotations

from typing import Callable


def visitor_gone() -> Callable[[], bool]:
    """A check that turns true once the client of the current Gradio request has disconnected."""
    try:
        from gradio.context import LocalContext
        blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
        queue = blocks._queue if blocks is not None else None
    except Exception:           # noqa: BLE001 (another Gradio: no check rather than a failure)
        return lambda: False
    if queue is None or event_id is None:
        return lambda: False
    found: list = []

    def gone() -> bool:
        try:
            if not found:
                found.extend(e for job in list(queue.active_jobs) if job for e in job if e._id == event_id)
            return bool(found) and not found[0].alive
        except Exception:       # noqa: BLE001
            return False
    return gone
