"""A race's live feed: the page reads the race's new tokens from a stream of the app's own, not Gradio's.

Gradio's page does fixed work for every message of a streaming event, whatever the message holds: it
refreshes the loading state of every component that was ever an event's input or output and re-runs
their status trackers, some 30-50 ms of a 4x-throttled (phone-like) main thread a message. A race that
sent its panes ~6 times a second that way kept a phone's main thread busy for most of the race. So the
page's own Run (view/tabs/race.py) streams through a channel: the race's handler (view/handlers.py
`_stream`) pushes each update's new pane and timeline HTML, the meters and the strip into a channel
named by an unguessable token; the race's status line carries the token (`data-live`); the page
(assets/page.js) reads GET specviz/live/<token> as server-sent events and appends what comes (each
box's `liveFeed`, view/live_html.py). Gradio's event still carries the race itself: the first update
(the token), the end (the whole panes, so the page holds the full text even if the feed was cut),
Stop, the fair queue and the visitor's departure. The `/race` API streams through Gradio as before.

A channel is read by one connection at most; an unread one is dropped UNREAD_S after it opened, a
closed one KEEP_S after it closed, any one MAX_AGE_S after it opened. At most MAX_CHANNELS exist,
and at most PER_CLIENT for one client (its address: a classroom's races all come from one): when a
new race finds no room, finished and unclaimed channels go first, oldest first; a channel someone is
watching is never cut mid-race. Where only watched channels are left, the new race gets no channel
(`Feed.open` answers None) and streams through Gradio's updates as the `/race` API does; a race
whose channel is gone all the same (expired) sees `Feed.cut` and sends the rest through Gradio. A
reader is woken when an update arrives (an asyncio event set from the race's thread), not by polling;
it looks whether its client left every NOTICE_S. An unknown token answers 404 in one line. What a
channel holds is what the race's Gradio updates would have held (HTML the view escaped), in order.
"""
from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from collections import OrderedDict

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

PATH = "/specviz/live/{token}"
UNREAD_S = 30.0          # a page reads its channel within a second; this leaves room for a loaded server
KEEP_S = 10.0            # after the race: long enough for the reader to drain the last updates
MAX_AGE_S = 30 * 60.0    # no race streams longer
MAX_CHANNELS = 256       # far more races than the app runs at once
PER_CLIENT = 64          # a classroom of 30-40 behind one address, each with a race in hand, fits
NOTICE_S = 1.0           # a reader with nothing new looks this often whether its client left
GONE = "No such live feed: the race has ended (its result is on the page).\n"


class Channel:
    """One race's updates, in order; `closed` once the race has sent its last."""

    def __init__(self, now: float, owner: str = ""):
        self.updates: list[str] = []
        self.closed_at: float | None = None
        self.opened_at = now
        self.claimed = False
        self.owner = owner
        self.readers: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []   # woken by each update

    def watched(self) -> bool:
        """Is someone reading a race that has not ended? (never cut)"""
        return self.claimed and self.closed_at is None


class Channels:
    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._by_token: OrderedDict[str, Channel] = OrderedDict()

    def open(self, owner: str = "") -> str | None:
        """A new channel's token; None where no room is left without cutting a watched channel."""
        with self._lock:
            self._prune()
            if owner and not self._make_room([t for t, c in self._by_token.items() if c.owner == owner], PER_CLIENT):
                return None
            if not self._make_room(list(self._by_token), MAX_CHANNELS):
                return None
            token = secrets.token_urlsafe(18)
            self._by_token[token] = Channel(self._clock(), owner)
            return token

    def _make_room(self, tokens: list[str], most: int) -> bool:
        """(under the lock) drop channels among `tokens` (oldest first) until fewer than `most` are left:
        finished ones first, then unclaimed ones; never a watched one. False if no room could be made."""
        finished = [t for t in tokens if self._by_token[t].closed_at is not None]
        unclaimed = [t for t in tokens if not self._by_token[t].claimed and self._by_token[t].closed_at is None]
        left = len(tokens)
        for token in finished + unclaimed:
            if left < most:
                break
            del self._by_token[token]
            left -= 1
        return left < most

    def push(self, token: str, update: dict) -> bool:
        """Add an update; False where the channel is gone or closed (the race then streams through Gradio)."""
        text = json.dumps(update, separators=(",", ":"))
        with self._lock:
            channel = self._by_token.get(token)
            if channel is None or channel.closed_at is not None:
                return False
            channel.updates.append(text)
            readers = list(channel.readers)
        _wake(readers)
        return True

    def close(self, token: str) -> None:
        with self._lock:
            channel = self._by_token.get(token)
            if channel is None or channel.closed_at is not None:
                return
            channel.closed_at = self._clock()
            readers = list(channel.readers)
        _wake(readers)

    def claim(self, token: str) -> Channel | None:
        """The channel for its one reader; None for an unknown, expired or already claimed token."""
        with self._lock:
            self._prune()
            channel = self._by_token.get(token)
            if channel is None or channel.claimed:
                return None
            channel.claimed = True
            return channel

    def since(self, channel: Channel, start: int) -> tuple[list[str], bool]:
        """The updates from `start` on, and whether the channel has closed (or expired)."""
        with self._lock:
            expired = self._clock() - channel.opened_at > MAX_AGE_S
            return channel.updates[start:], channel.closed_at is not None or expired

    async def wait(self, channel: Channel, start: int, timeout: float) -> tuple[list[str], bool]:
        """`since`, but waiting up to `timeout` seconds for an update (or the end) when there is none yet:
        the race's push wakes the reader at once."""
        woken = asyncio.Event()
        me = (asyncio.get_running_loop(), woken)
        with self._lock:
            channel.readers.append(me)
        try:
            updates, closed = self.since(channel, start)
            if updates or closed:
                return updates, closed
            try:
                await asyncio.wait_for(woken.wait(), timeout)
            except (TimeoutError, asyncio.TimeoutError):
                pass
            return self.since(channel, start)
        finally:
            with self._lock:
                if me in channel.readers:
                    channel.readers.remove(me)

    def _prune(self) -> None:
        now = self._clock()
        for token, c in list(self._by_token.items()):
            if (now - c.opened_at > MAX_AGE_S or (c.closed_at is not None and now - c.closed_at > KEEP_S)
                    or (not c.claimed and now - c.opened_at > UNREAD_S)):
                del self._by_token[token]

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_token)


def _wake(readers: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]) -> None:
    """Set each waiting reader's event from the race's thread, in the reader's own loop."""
    for loop, woken in readers:
        try:
            loop.call_soon_threadsafe(woken.set)
        except RuntimeError:       # its loop has closed: the reader is gone
            pass


CHANNELS = Channels()


def link(token: str) -> str:
    """The feed's address, relative to the page (so it holds under a proxy's root path too)."""
    return f"specviz/live/{token}"


async def feed(request: Request) -> Response:
    channel = CHANNELS.claim(request.path_params.get("token", ""))
    if channel is None:
        return PlainTextResponse(GONE, status_code=404)

    async def events():
        sent = 0
        while True:
            updates, closed = await CHANNELS.wait(channel, sent, NOTICE_S)
            for text in updates:
                yield f"data: {text}\n\n"
            sent += len(updates)
            if closed and not updates:
                yield "event: end\ndata: {}\n\n"
                return
            if not updates and await request.is_disconnected():
                return

    return StreamingResponse(events(), media_type="text/event-stream", headers={
        "Cache-Control": "no-store", "X-Accel-Buffering": "no", "X-Content-Type-Options": "nosniff"})


def routes() -> list[Route]:
    return [Route(PATH, feed, methods=["GET"])]


class Feed:
    """What one race has sent down its channel: each box's length so far (in the browser's own units,
    UTF-16 code units, so the page can tell an update that follows what it shows from a late one)."""

    def __init__(self, channels: Channels | None = None, token: str | None = None):
        self.channels = channels if channels is not None else CHANNELS
        self.token = token if token is not None else self.channels.open()
        self._sent: dict[str, str] = {}
        self._at: dict[str, int] = {}
        self.cut = False           # the channel went (expired): the race sends the rest through Gradio

    @classmethod
    def open(cls, owner: str = "", channels: Channels | None = None) -> "Feed | None":
        """A feed for one race of `owner` (its client), or None where no room is left without cutting a
        race someone watches: the race then streams through Gradio's updates."""
        channels = channels if channels is not None else CHANNELS
        token = channels.open(owner)
        return cls(channels, token) if token is not None else None

    def send(self, boxes: dict[str, str], whole: dict[str, str]) -> None:
        """Push one update: `boxes` (element id -> its growing HTML so far) as the new tail of each,
        with the length it follows; `whole` (element id -> HTML) to replace as it is."""
        update: dict = {"append": {}, "replace": whole}
        for key, html in boxes.items():
            before = self._sent.get(key, "")
            if html == before:
                continue
            if not html.startswith(before):        # not an extension: the page takes it whole
                update["replace"] = {**update["replace"], key: html}
                self._sent[key], self._at[key] = html, _units(html)
                continue
            tail = html[len(before):]
            update["append"][key] = [self._at.get(key, 0), tail]
            self._sent[key], self._at[key] = html, self._at.get(key, 0) + _units(tail)
        if not self.channels.push(self.token, update):
            self.cut = True

    def close(self) -> None:
        self.channels.close(self.token)


def _units(text: str) -> int:
    """The length of `text` as JavaScript counts it (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2
