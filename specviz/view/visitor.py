"""Is the visitor this request serves still there? A check a long job reads between slices.

A Gradio client joins the queue (`/queue/join`) and then reads its results from a stream
(`/queue/data`). Two ways a job can be left with nobody to read it:
- the stream closed (the tab closed, the script killed): Gradio marks the event as no longer
  alive (`Queue.clean_events`, run when the stream notices the disconnect);
- the stream was never opened (a script that joins and walks away): nothing ever closes, so
  Gradio would run the job to its end for nobody.
`listen_for(queue, session)`, called where a request joins (view/fair_queue.py), gives the
session a message queue that notes when a stream reads it. `visitor_gone()`, called inside a
handler, finds the request's event through Gradio's LocalContext (the blocks and event id it
sets for every handler call) and returns a check that turns true once the event is no longer
alive, or once OPEN_WITHIN_S seconds have passed since it joined without any stream having read
its session's messages; until a stream has read them, the check waits (up to those seconds)
before it answers, so a job takes no slot for a client that has not come to listen. `install()` makes that check the default stop of every decoding job
(app/slots.py), so step mode, the workshop and the Rules tab end the same way as races. Outside
a Gradio request (tests, the CLI) the check is always False. These are Gradio internals (6.x): a
change there makes the check answer False, never fail a run.
"""
from __future__ import annotations

import asyncio
import time
from typing import Callable

OPEN_WITHIN_S = 5.0        # a client that has not opened its result stream by then is taken as gone


NOTICE_S = 1.0             # a result stream with nothing to send looks this often whether its client left


class Listened(asyncio.Queue):
    """A session's message queue (what Gradio keeps per session) that notes when a stream reads it.

    Gradio's stream waits up to 10 s for a message before it looks whether its client is still
    connected, so a job whose client left kept its place that long; a read here answers a heartbeat
    after NOTICE_S instead (a client skips heartbeats), so a departure is seen within about a second
    and the job's place is freed (Queue.clean_events marks it gone; view/fair_queue.py stops counting it)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read_at: float | None = None
        self.readers = 0

    async def get(self):
        self.readers += 1
        self.read_at = time.monotonic()
        try:
            return await asyncio.wait_for(super().get(), NOTICE_S)
        except (TimeoutError, asyncio.TimeoutError):
            return _heartbeat()
        finally:
            self.readers -= 1
            self.read_at = time.monotonic()

    def read_since(self, t: float) -> bool:
        """Has a stream read (or waited on) this queue since monotonic time `t`?"""
        return self.readers > 0 or (self.read_at is not None and self.read_at >= t)


def _heartbeat():
    from gradio.server_messages import HeartbeatMessage
    return HeartbeatMessage()


def listen_for(queue, session: str | None) -> None:
    """Before Gradio's push creates it: the session's message queue, as one that notes its readers."""
    try:
        if session and session not in queue.pending_messages_per_session:
            queue.pending_messages_per_session[session] = Listened()
    except Exception:           # noqa: BLE001 (another Gradio: Gradio makes its own, the check reads alive only)
        pass


def unread(queue, event, after_s: float = 0.0, now: float | None = None) -> bool:
    """Has no stream read the event's session since the event joined, `after_s` seconds or more ago
    (`now`: monotonic seconds, the caller's clock)? (False where Gradio's session queues are not ours:
    then nothing is known.)"""
    try:
        if (time.monotonic() if now is None else now) - event.enqueue_time < after_s:
            return False
        messages = queue.pending_messages_per_session.get(event.session_hash)
        return isinstance(messages, Listened) and not messages.read_since(event.enqueue_time)
    except Exception:           # noqa: BLE001 (another Gradio)
        return False


def visitor_gone(open_within_s: float | None = None) -> Callable[[], bool]:
    """A check that turns true once the client of the current Gradio request has gone, or never came
    to read its results."""
    try:
        from gradio.context import LocalContext
        blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
        queue = blocks._queue if blocks is not None else None
    except Exception:           # noqa: BLE001 (another Gradio: no check rather than a failure)
        return lambda: False
    if queue is None or event_id is None:
        return lambda: False
    grace = OPEN_WITHIN_S if open_within_s is None else open_within_s
    found: list = []
    heard: list = []

    def unheard(event) -> bool:
        """No stream has read the session's messages since the event joined (False once one has)."""
        if heard:
            return False
        if not unread(queue, event):
            heard.append(True)
            return False
        return True

    def gone() -> bool:
        try:
            if not found:
                found.extend(e for job in list(queue.active_jobs) if job for e in job if e._id == event_id)
            if not found:
                return False
            event = found[0]
            # The first check (made before the job's first slot: app/slots.py) waits for the stream to
            # open, so a job takes no slot before its client listens; a browser or gradio_client opens it
            # within milliseconds of joining.
            while event.alive and unheard(event) and time.monotonic() - event.enqueue_time <= grace:
                time.sleep(0.05)
            return not event.alive or unheard(event)
        except Exception:       # noqa: BLE001
            return False
    return gone


def current_client() -> str | None:
    """The client key (view/client_address.py) of the current Gradio request, for the slots' round
    robin; None outside a request."""
    try:
        from gradio.context import LocalContext
        from .client_address import client_key
        request = LocalContext.request.get(None)
        session = getattr(request, "session_hash", None)
        if request is None:
            return None
        return client_key(request) or (f"session:{session}" if session else None)
    except Exception:           # noqa: BLE001 (another Gradio: each job its own client)
        return None


def current_session() -> str | None:
    """The Gradio session (one browser tab) of the current request, for the round robin inside its
    client; None outside a request."""
    try:
        from gradio.context import LocalContext
        request = LocalContext.request.get(None)
        return getattr(request, "session_hash", None) if request is not None else None
    except Exception:           # noqa: BLE001
        return None


def install() -> None:
    """Every decoding job in a Gradio request stops once its visitor is gone, and takes its turns as its
    client's (app/slots.py's defaults)."""
    from ..app import slots
    slots.default_stop = visitor_gone
    slots.default_client = current_client
    slots.default_session = current_session
