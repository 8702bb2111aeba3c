"""Gradio's queue, shared fairly: no session holds more than a few places, and a full queue
says when to come back.

`queue_demo` calls `demo.queue(...)` with the profile's limits and wraps the queue's `push` (the
`/queue/join` route): a session that already has `jobs_per_session` decoding requests waiting
or running is refused (HTTP 503 with a one-line reason) instead of filling the queue, and a full
queue answers with an estimate of when to retry, from Gradio's own average job time. Requests
outside the decoding group (Stop, the page's instant feedback) are never refused here. An API
call that left out arguments gets the endpoint's defaults, or one line naming the missing one
(view/api_defaults.py), before Gradio's own generic refusal. The wrap
reads Gradio 6 internals (`Queue.push`, `pending_event_ids_session`, `event_ids_to_events`);
tests/test_fair_service.py serves the app and checks it.
"""
from __future__ import annotations

import math

import gradio as gr
from gradio import route_utils

from ..app.profile import Limits
from .api_defaults import complete

DECODE_GROUP = "decode"


def queue_demo(demo: gr.Blocks, limits: Limits) -> gr.Blocks:
    demo.queue(max_size=limits.queue_size, default_concurrency_limit=limits.concurrency_per_device)
    _guard(demo._queue, limits.jobs_per_session)
    return demo


def _guard(queue, per_session: int) -> None:
    push = queue.push

    async def fair_push(body, request, username):
        try:
            fn = route_utils.get_fn(queue.blocks, None, body) if body.fn_index is not None else None
        except Exception:                # noqa: BLE001 (Gradio's own push answers a bad index)
            fn = None
        missing = complete(body, fn)          # an API call's left-out arguments (view/api_defaults.py)
        if missing:
            return False, missing, "error"
        if fn is not None and fn.concurrency_id == DECODE_GROUP:
            session = body.session_hash
            mine = [queue.event_ids_to_events.get(i) for i in queue.pending_event_ids_session.get(session, ())]
            if session and sum(1 for e in mine if e is not None and e.concurrency_id == DECODE_GROUP) >= per_session:
                return (False, f"this session already has {per_session} runs waiting or running (at most "
                               f"{per_session} per visitor): retry when one has finished", "queue_full")
            if queue.max_size is not None and len(queue) >= queue.max_size:
                return (False, f"Queue is full ({len(queue)} runs waiting): retry in about {_eta(queue, fn)} s",
                        "queue_full")
        return await push(body, request, username)

    queue.push = fair_push


def _eta(queue, fn) -> int:
    """Seconds until a place is likely free: the jobs waiting x Gradio's average time for this
    endpoint (10 s before it has one); the decoding runs one job at a time."""
    timing = queue.process_time_per_fn.get(fn)
    per_job = getattr(timing, "avg_time", None) or 10.0
    return max(1, math.ceil(per_job * max(1, len(queue))))
