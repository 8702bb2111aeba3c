"""Gradio's queue, shared fairly: the decoding work admitted at once is bounded, no client holds
more than its share of it, and a full queue says when to come back.

`queue_demo` calls `demo.queue(...)` with the profile's limits and wraps the queue's `push` (the
`/queue/join` route). The decoding groups (DECODE_GROUPS: races, `/generate`, the lossless check,
the workshop and the Rules tab in "decode"; step mode in "step") run with no Gradio concurrency
limit (the app's own fair slots, app/slots.py, share the device), so a job leaves Gradio's queue
at once and that queue's length says nothing about the work in hand. The caps here count instead
every decoding event Gradio holds, waiting or running (`event_ids_to_events`, which Gradio empties
as each event ends):
- at most `queue_size` in all (a full queue answers with an estimate of when to retry, from
  Gradio's own average job time), not counting jobs whose results no stream has read UNREAD_AFTER_S
  after they joined: those take no decoding slot and are dropped soon (view/visitor.py), so a
  client that joins and never listens takes places from its own address's share only;
- at most `jobs_per_address` from one client address (view/client_address.py: the connection's
  peer, or on a Space the address the proxy saw): a client that sends a new session id with every
  request is still one client;
- at most `jobs_per_session` from one browser session (one tab: a second click waits its turn).
Each joining request's session gets a message queue that notes whether a stream reads it, and
every decoding job stops once its client is gone or never opened its stream (view/visitor.py).
Requests outside those groups (Stop, the page's instant feedback) are never refused here. An API
call that left out arguments gets the endpoint's defaults or one line naming the missing one; one
with the wrong number of values, or a text or checkbox value of the wrong kind, is refused in one
line (view/api_defaults.py), before Gradio's own generic refusal. The wrap reads Gradio 6 internals
(`Queue.push`, `event_ids_to_events`, `Event.request`); tests/test_fair_service.py serves the app
and checks it.
"""
from __future__ import annotations

import math

import gradio as gr

from ..app.profile import Limits
from .api_defaults import complete, refuse
from .client_address import client_key
from .visitor import install, listen_for, unread

DECODE_GROUP = "decode"
STEP_GROUP = "step"
DECODE_GROUPS = (DECODE_GROUP, STEP_GROUP)
# A job whose results no stream has read this long after it joined is not counted in the server's total
# (a browser or gradio_client reads within milliseconds; a second leaves room for a loaded server).
UNREAD_AFTER_S = 1.0


def queue_demo(demo: gr.Blocks, limits: Limits) -> gr.Blocks:
    demo.queue(max_size=limits.queue_size, default_concurrency_limit=limits.concurrency_per_device)
    _guard(demo._queue, limits)
    install()             # every decoding job ends once its visitor is gone or never came (view/visitor.py)
    return demo


def admitted(queue) -> list:
    """The decoding events Gradio holds now, waiting or running."""
    return [e for e in list(queue.event_ids_to_events.values()) if getattr(e, "concurrency_id", None) in DECODE_GROUPS]


def _guard(queue, limits: Limits) -> None:
    push = queue.push

    async def fair_push(body, request, username):
        # The page's functions, looked up without Gradio's route_utils.get_fn, which first builds the
        # session's state (a config of every block: ~10 ms and ~0.2 MB) for a session id never seen:
        # a join refused here costs neither, whatever session id it invents. (The page renders no
        # gr.render blocks, so a session's functions are the page's.)
        fn = queue.blocks.fns.get(body.fn_index) if isinstance(body.fn_index, int) else None
        wrong = complete(body, fn) or refuse(body, fn)     # view/api_defaults.py
        if wrong:
            return False, wrong, "error"
        if fn is not None and fn.concurrency_id in DECODE_GROUPS:
            full = admission(admitted(queue), body.session_hash, client_key(request), limits,
                             unread=lambda event: unread(queue, event, UNREAD_AFTER_S))
            if full:
                return False, full if "{eta}" not in full else full.format(eta=_eta(queue, fn)), "queue_full"
        listen_for(queue, body.session_hash)      # its stream's reads are noted (view/visitor.py)
        return await push(body, request, username)

    queue.push = fair_push


def admission(events: list, session: str | None, address: str, limits: Limits,
              unread=lambda event: False) -> str | None:
    """The refusal for one more decoding request beside `events` (the decoding work admitted), else None.
    `unread(event)`: has no stream read that event's results, UNREAD_AFTER_S after it joined
    (view/visitor.py)? Such a job takes no decoding slot and is dropped OPEN_WITHIN_S after joining, so it
    does not count against the server's total: a client that joins and never listens holds places of its
    own address only, never the rest of the world's."""
    in_hand = [e for e in events if not unread(e)]
    if len(in_hand) >= limits.queue_size:
        return f"The server is full ({len(in_hand)} runs waiting or running): retry in about {{eta}} s"
    if address and sum(1 for e in events if client_key(e.request) == address) >= limits.jobs_per_address:
        return (f"your address already has {limits.jobs_per_address} runs waiting or running (at most "
                f"{limits.jobs_per_address} per address): retry when one has finished")
    if session and sum(1 for e in events if e.session_hash == session) >= limits.jobs_per_session:
        return (f"this session already has {limits.jobs_per_session} runs waiting or running (at most "
                f"{limits.jobs_per_session} per visitor): retry when one has finished")
    return None


def _eta(queue, fn) -> int:
    """Seconds until a place is likely free: the decoding work admitted x Gradio's average time for this
    endpoint (10 s before it has one)."""
    timing = queue.process_time_per_fn.get(fn)
    per_job = getattr(timing, "avg_time", None) or 10.0
    return max(1, math.ceil(per_job * max(1, len(admitted(queue)))))
