"""Gradio's queue, shared fairly: every event a client sends is bounded by client, the decoding
work admitted at once is bounded, no client holds more than its share, and a full queue says when
to come back.

`queue_demo` calls `demo.queue(...)` with the profile's limits and wraps the queue's `push` (the
`/queue/join` route), which every event goes through: a run, step mode, a replay, Stop and the
page's instant feedback alike. The work groups (WORK_GROUPS: races, `/generate`, the lossless check,
the workshop and the Rules tab in "decode"; step mode in "step"; trace replays in "replay") hold the
device's fair slots (app/slots.py: turns round robin by client), so Gradio's own queue length says
nothing about the work in hand. The caps here count instead the events Gradio holds, waiting or
running (`event_ids_to_events`, which Gradio empties as each event ends), leaving out those whose
client has gone (Gradio marks them not alive; view/visitor.py sees a departure within about a second):
- at most `joins_per_second` joins of any event from one client (a burst of JOIN_BURST_S seconds'
  worth first): a script inventing a session per Stop is turned away before Gradio keeps anything;
  the page's own load events (its starting state, and what follows them) have a bucket of their own,
  LOAD_RATE_FACTOR times larger (LOAD_JOINS_FLOOR a second at least), and no other cap: a room of thirty opening the page at once is
  never refused; a session id never seen here (not a tab that opened the page: a script's or an API
  client's first call) joins at NEW_SESSION_SHARE of that rate, since Gradio's state for a new session
  costs more than the event;
- at most `jobs_per_address` events of any kind from one client, whatever session ids it sends (the
  client: its address, view/client_address.py, IPv6 by its /64, or where the server cannot tell one,
  its session). The default holds a class of 30-40 tabs behind one school address: more places buy no
  bigger share of the device, whose turns go round robin by address and inside it by tab
  (app/slots.py), so a request beyond its share waits in line and the page says its place;
- at most `queue_size` work events in all before the server counts shares: past it, a client holding
  fewer than its fair share (queue_size over the clients holding work) still joins, up to twice
  `queue_size` in all, so one hostile address that filled its own places never locks a room out. A
  full server answers with an estimate of when to retry, from Gradio's own average job time. Jobs
  whose results no stream has read UNREAD_AFTER_S after they joined do not count: those take no
  decoding slot and are dropped soon (view/visitor.py), so a client that joins and never listens takes
  places from its own share only;
- at most `jobs_per_session` work events from one browser session (one tab: a second click waits).
Every refusal is said in the app's words, as a 400 whose detail Gradio's page shows (a 503 would
show Gradio's own "This application is currently busy"). The clock the caps read (`clock`, for the
join rate and the age of unread jobs) is passed in, so tests move it by hand.
An event the page does not have (an unknown `fn_index`) is refused in one line. Each joining
request's session gets a message queue that notes whether a stream reads it, and Gradio's table of
those queues keeps every session with an event in hand (KeepActive: a newer session never pushes an
active one out); the state Gradio keeps per session (the last outputs: some MB after a race) is kept
for at most SESSIONS_PER_CLIENT sessions of one client (SessionQuota). An API call that left out arguments gets the endpoint's defaults or one line naming
the missing one; one with the wrong number of values, or a text or checkbox value of the wrong kind,
is refused in one line (view/api_defaults.py), before Gradio's own generic refusal. The wrap reads
Gradio 6 internals (`Queue.push`, `event_ids_to_events`, `pending_messages_per_session`,
`Event.request`); tests/test_fair_service.py and tests/test_hostile.py serve the app and check it.
"""
from __future__ import annotations

import math
import threading
import time
from typing import Callable

import gradio as gr

from ..app.profile import Limits
from .api_defaults import complete, refuse
from .bad_bodies import MAX_SESSION_CHARS
from .client_address import client_key
from .one_line import guard
from .visitor import Listened, install, listen_for, unread

DECODE_GROUP = "decode"
STEP_GROUP = "step"
REPLAY_GROUP = "replay"
DECODE_GROUPS = (DECODE_GROUP, STEP_GROUP)
WORK_GROUPS = (DECODE_GROUP, STEP_GROUP, REPLAY_GROUP)     # events that hold the device's slots
JOIN_BURST_S = 3.0         # a client may spend this many seconds' worth of joins at once
LOAD_RATE_FACTOR = 10      # the page's load events: this many times the joins of the rest (never a room's limit),
LOAD_JOINS_FLOOR = 100     # and at least this many a second (a burst of 300: forty tabs' page loads at once, twice)
REFUSED = "error"          # Gradio answers 400 with our words; "queue_full" (503) shows Gradio's own "busy"
# A session id this server has never seen, joining anything but the page's load events, is a script's or an
# API client's first call (a tab's first events are its page load). Gradio builds a state for each new
# session, which costs far more than the event itself (a Stop), so new sessions from one client are held
# to this share of its joins: a script inventing a session per Stop slows the room's races by a little,
# not by half, while thirty notebooks behind one address still start within a few seconds.
NEW_SESSION_SHARE = 1 / 8
SESSIONS_SEEN = 20_000     # session ids remembered as seen; the least recently used forgotten first
# Sessions whose state Gradio keeps for one client: each holds its last outputs (a race's panes and
# plots, some MB), so a client inventing a session per request grew the server by gigabytes within the
# 2000 kept. 32 keeps a classroom of 30 behind one school address whole; a script holds 32 at most.
SESSIONS_PER_CLIENT = 32
CLIENTS_TRACKED = 10_000   # join counters kept; full ones (a client quiet for a while) are dropped first
# A job whose results no stream has read this long after it joined is not counted in the server's total
# (a browser or gradio_client reads within milliseconds; a second leaves room for a loaded server).
UNREAD_AFTER_S = 1.0


def queue_demo(demo: gr.Blocks, limits: Limits, clock: Callable[[], float] = time.monotonic) -> gr.Blocks:
    """Gradio's queue with the caps above; `clock` (monotonic seconds) is what the caps read."""
    # Gradio's own bound: above the most work events admitted (twice queue_size) and the rest in hand.
    demo.queue(max_size=2 * limits.queue_size + limits.jobs_per_address,
               default_concurrency_limit=limits.concurrency_per_device)
    guard(demo)           # an unexpected failure of any page function: one line, no traceback (view/one_line.py)
    _guard(demo._queue, limits, clock)
    install()             # every decoding job ends once its visitor is gone or never came (view/visitor.py)
    return demo


def admitted(queue) -> list:
    """The work events (decoding and replays) Gradio holds now, waiting or running."""
    return [e for e in held(queue) if getattr(e, "concurrency_id", None) in WORK_GROUPS]


def held(queue) -> list:
    """Every event Gradio holds now, waiting or running, whose client has not gone."""
    return [e for e in list(queue.event_ids_to_events.values()) if getattr(e, "alive", True)]


def in_hand(queue) -> set:
    """The sessions with an event Gradio holds now, waiting or running."""
    return {getattr(e, "session_hash", None) for e in list(queue.event_ids_to_events.values())}


def client_of(request, session: str | None) -> str:
    """The key of the per-client bounds: the client's address, or its session where no address is known."""
    return client_key(request) or (f"session:{session}" if session else "")


class JoinRate:
    """Joins per client per second: a bucket of JOIN_BURST_S seconds' worth, refilled at `per_s`."""

    def __init__(self, per_s: float, clock=time.monotonic):
        self.per_s, self.clock = float(per_s), clock
        self.burst = max(1.0, self.per_s * JOIN_BURST_S)
        self._buckets: dict[str, tuple[float, float]] = {}     # client -> (joins left, when counted)
        self._lock = threading.Lock()

    def take(self, client: str) -> bool:
        """May `client` join now? (counts the join when it may)"""
        now = self.clock()
        with self._lock:
            left, then = self._buckets.pop(client, (self.burst, now))
            left = min(self.burst, left + (now - then) * self.per_s)
            if len(self._buckets) >= CLIENTS_TRACKED:         # the quietest first: a full bucket forgets nothing
                for key in [k for k, (n, t) in self._buckets.items() if n + (now - t) * self.per_s >= self.burst]:
                    del self._buckets[key]
                while len(self._buckets) >= CLIENTS_TRACKED:
                    self._buckets.pop(next(iter(self._buckets)))
            if left < 1.0:
                self._buckets[client] = (left, now)
                return False
            self._buckets[client] = (left - 1.0, now)
            return True


class SeenSessions:
    """The session ids that have joined or opened the page here, the most recent last, at most `most`."""

    def __init__(self, most: int = SESSIONS_SEEN):
        self.most = most
        self._ids: dict[str, None] = {}
        self._lock = threading.Lock()

    def __contains__(self, session) -> bool:
        with self._lock:
            return session in self._ids

    def add(self, session) -> None:
        if not session:
            return
        with self._lock:
            self._ids.pop(session, None)
            self._ids[session] = None
            while len(self._ids) > self.most:
                self._ids.pop(next(iter(self._ids)))


class SessionQuota:
    """Each client's sessions, newest last: past SESSIONS_PER_CLIENT, the client's least recently used
    session with no event in hand loses the state Gradio keeps for it (a later event of that session
    starts from the page's defaults)."""

    def __init__(self, per_client: int | None = None):
        self.per_client = per_client
        self._by_client: dict[str, dict[str, None]] = {}
        self._lock = threading.Lock()

    def note(self, client: str, session: str | None, queue) -> list[str]:
        """`client` used `session` now; returns the sessions whose state was dropped."""
        if not client or not session:
            return []
        dropped = []
        with self._lock:
            sessions = self._by_client.pop(client, {})
            sessions.pop(session, None)
            sessions[session] = None
            self._by_client[client] = sessions            # the most recent client last
            busy = in_hand(queue)
            most = self.per_client or SESSIONS_PER_CLIENT
            for old in list(sessions):
                if len(sessions) <= most:
                    break
                if old != session and old not in busy:
                    del sessions[old]
                    dropped.append(old)
            while len(self._by_client) > CLIENTS_TRACKED:
                self._by_client.pop(next(iter(self._by_client)))
        holder = getattr(queue.blocks, "state_holder", None)
        for old in dropped:
            try:
                with holder.lock:
                    holder.session_data.pop(old, None)
                    holder.time_last_used.pop(old, None)
            except Exception:       # noqa: BLE001 (another Gradio: its own bound, 2000 sessions, holds)
                pass
        return dropped


class KeepActive(dict):
    """Gradio's per-session message queues, bounded without ever dropping an active session.

    Gradio keeps them in an LRU of 2000 whose reads do not count as use, so 2000 newer sessions (a
    script sending a new session id with every Stop) pushed out sessions whose results were still
    streaming, and those visitors lost their results. Here a read refreshes a session, and a new one,
    past `max_size`, removes the least recently used session that has no event in hand and no stream
    reading it (a session whose client never reads is idle once its events end); when every session kept
    is active, none is removed (the per-client caps bound them)."""

    def __init__(self, queue, max_size: int, old=None):
        super().__init__(old or {})
        self.queue, self.max_size = queue, max_size

    def _touch(self, key) -> None:
        if dict.__contains__(self, key):
            value = dict.pop(self, key)
            dict.__setitem__(self, key, value)

    def __getitem__(self, key):
        value = dict.__getitem__(self, key)
        self._touch(key)
        return value

    def get(self, key, default=None):
        return self[key] if dict.__contains__(self, key) else default

    def __setitem__(self, key, value) -> None:
        if dict.__contains__(self, key):
            dict.pop(self, key)
        elif len(self) >= self.max_size:
            busy = in_hand(self.queue)
            for old in list(self):
                messages = dict.get(self, old)
                reading = isinstance(messages, Listened) and messages.readers > 0
                if old not in busy and not reading:
                    dict.pop(self, old)
                    break
        dict.__setitem__(self, key, value)


def load_events(blocks) -> set:
    """The page's load events the server runs: those the page sends as it opens, and every event chained
    after one (an event that runs in the page only, with no function, never reaches the server)."""
    fns = getattr(blocks, "fns", {})
    found = {i for i, fn in fns.items() if any(event == "load" for _, event in (getattr(fn, "targets", None) or []))}
    while True:
        more = {i for i, fn in fns.items() if getattr(fn, "trigger_after", None) in found} - found
        if not more:
            return {i for i in found if getattr(fns[i], "fn", None) is not None}
        found |= more


def _guard(queue, limits: Limits, clock: Callable[[], float] = time.monotonic) -> None:
    push = queue.push
    rate = JoinRate(limits.joins_per_second, clock)
    load_rate = JoinRate(max(LOAD_JOINS_FLOOR, limits.joins_per_second * LOAD_RATE_FACTOR), clock)
    new_sessions = JoinRate(max(1.0, limits.joins_per_second * NEW_SESSION_SHARE), clock)
    seen = SeenSessions()
    loads = load_events(queue.blocks)
    quota = SessionQuota()
    old = queue.pending_messages_per_session
    queue.pending_messages_per_session = KeepActive(queue, getattr(old, "max_size", 2000), old)

    async def fair_push(body, request, username):
        # The page's functions, looked up without Gradio's route_utils.get_fn, which first builds the
        # session's state (a config of every block: ~10 ms and ~0.2 MB) for a session id never seen:
        # a join refused here costs neither, whatever session id it invents. (The page renders no
        # gr.render blocks, so a session's functions are the page's.)
        fn = queue.blocks.fns.get(body.fn_index) if type(body.fn_index) is int else None
        if fn is None:
            return False, "This page has no such event: reload the page", "error"
        if len(str(body.session_hash or "")) > MAX_SESSION_CHARS:
            return False, "This request's session id is too long to be a tab's: reload the page", "error"
        client = client_of(request, body.session_hash)
        opening = body.fn_index in loads
        if client and not opening and body.session_hash not in seen and not new_sessions.take(client):
            return False, (f"Too many new sessions from your address (at most {new_sessions.per_s:g} a second): "
                           "reload the page, or keep one session for your calls, and retry"), REFUSED
        if client and not (load_rate if opening else rate).take(client):
            return False, (f"Too many requests from your address (at most {limits.joins_per_second} a second): "
                           "wait a moment and retry"), REFUSED
        wrong = complete(body, fn) or refuse(body, fn)     # view/api_defaults.py
        if wrong:
            return False, wrong, "error"
        if not opening:         # the page's load events take no place: a page opening is never refused
            now = clock()
            full = admission([e for e in held(queue) if getattr(e, "fn", None) not in load_fns(queue, loads)],
                             body.session_hash, client, limits, work=fn.concurrency_id in WORK_GROUPS,
                             unread=lambda event: unread(queue, event, UNREAD_AFTER_S, now))
            if full:
                return False, full if "{eta}" not in full else full.format(eta=_eta(queue, fn)), REFUSED
        seen.add(body.session_hash)
        quota.note(client, body.session_hash, queue)     # a client's sessions kept at most SESSIONS_PER_CLIENT
        listen_for(queue, body.session_hash)      # its stream's reads are noted (view/visitor.py)
        return await push(body, request, username)

    queue.push = fair_push


def load_fns(queue, loads: set) -> list:
    """The page's load events' functions (Gradio's events name their function, not its index)."""
    fns = getattr(queue.blocks, "fns", {})
    return [fns[i] for i in loads if i in fns]


def admission(events: list, session: str | None, client: str, limits: Limits, work: bool = True,
              unread=lambda event: False) -> str | None:
    """The refusal for one more event beside `events` (every event held whose client is still there),
    else None. `work`: the new event is decoding or a replay (it takes the device's slots).
    `unread(event)`: has no stream read that event's results, UNREAD_AFTER_S after it joined
    (view/visitor.py)? Such a job takes no decoding slot and is dropped OPEN_WITHIN_S after joining, so it
    does not count against the server's total: a client that joins and never listens holds places of its
    own share only, never the rest of the world's."""
    if client and sum(1 for e in events if client_of(e.request, e.session_hash) == client) >= limits.jobs_per_address:
        return (f"Your address already has {limits.jobs_per_address} requests waiting or running, the most one "
                "address may hold (every tab behind it counts): retry when one has finished")
    if not work:
        return None
    working = [e for e in events if getattr(e, "concurrency_id", None) in WORK_GROUPS]
    in_hand = [e for e in working if not unread(e)]
    if len(in_hand) >= limits.queue_size:
        holders = {client_of(e.request, e.session_hash) for e in in_hand} | {client}
        share = max(1, limits.queue_size // len(holders))       # each client holding work, an equal part
        mine = sum(1 for e in in_hand if client_of(e.request, e.session_hash) == client)
        if mine >= share or len(in_hand) >= 2 * limits.queue_size:
            return (f"The server is full ({len(in_hand)} runs waiting or running, {mine} of them from your "
                    "address): retry in about {eta} s")
    if session and sum(1 for e in working if e.session_hash == session) >= limits.jobs_per_session:
        return (f"This tab already has {limits.jobs_per_session} runs waiting or running (at most "
                f"{limits.jobs_per_session} per visitor): retry when one has finished")
    return None


def _eta(queue, fn) -> int:
    """Seconds until a place is likely free: Gradio's average time for this endpoint (10 s before it has
    one) x the work admitted, at most ten minutes."""
    timing = queue.process_time_per_fn.get(fn)
    per_job = getattr(timing, "avg_time", None) or 10.0
    return max(1, min(600, math.ceil(per_job * max(1, len(admitted(queue))))))
