"""A race's live feed (view/live_channel.py): what the page's own Run streams instead of Gradio updates.

The channel is read once, in order, ends with the race, expires, and answers an unknown token with 404
in one line; the feed's offsets count as the browser does (UTF-16), so the page drops a late update
rather than showing text twice; the race handler in live mode sends its panes only down the feed,
and its last Gradio update still holds the whole panes."""
from __future__ import annotations

import json

import pytest

from specviz.view import live_channel
from specviz.view.handlers import run_race
from specviz.view.live_channel import Channels, Feed
from tests.helpers import app_with, form, tiny_presets


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_a_channel_is_read_once_in_order_and_expires():
    clock = Clock()
    channels = Channels(clock)
    token = channels.open()
    assert len(token) >= 24 and token != channels.open()        # unguessable, one per race
    channels.push(token, {"n": 1})
    channel = channels.claim(token)
    assert channel is not None and channels.claim(token) is None      # one reader
    channels.push(token, {"n": 2})
    updates, closed = channels.since(channel, 0)
    assert [json.loads(u)["n"] for u in updates] == [1, 2] and not closed
    channels.close(token)
    channels.push(token, {"n": 3})                                 # after the race: nothing more
    updates, closed = channels.since(channel, 2)
    assert updates == [] and closed
    clock.t += live_channel.KEEP_S + 1
    assert channels.claim(token) is None and len(channels) == 1    # the other, unread, is still young
    clock.t += live_channel.UNREAD_S
    channels.open()
    assert len(channels) == 1                                      # the unread one went


def test_channels_are_bounded():
    channels = Channels(Clock())
    first = channels.open()
    for _ in range(live_channel.MAX_CHANNELS):
        channels.open()
    assert len(channels) == live_channel.MAX_CHANNELS and channels.claim(first) is None


def test_the_feed_sends_tails_at_the_browsers_offsets():
    channels = Channels(Clock())
    feed = Feed(channels)
    channel = channels.claim(feed.token)
    feed.send({"spec-pane": "<b>😀</b>"}, {"spec-meter": "m1"})
    feed.send({"spec-pane": "<b>😀</b><i>x</i>"}, {"spec-meter": "m2"})
    feed.send({"spec-pane": "<b>😀</b><i>x</i>"}, {})              # nothing new: no append
    feed.send({"spec-pane": "new race"}, {})                       # not an extension: replaced whole
    got = [json.loads(u) for u in channels.since(channel, 0)[0]]
    assert got[0] == {"append": {"spec-pane": [0, "<b>😀</b>"]}, "replace": {"spec-meter": "m1"}}
    # the emoji is two UTF-16 units: the next tail follows 3 + 2 + 4 = 9 of them, as JavaScript counts
    assert got[1]["append"] == {"spec-pane": [len("<b>") + 2 + len("</b>"), "<i>x</i>"]}
    assert got[2] == {"append": {}, "replace": {}}
    assert got[3] == {"append": {}, "replace": {"spec-pane": "new race"}}


def test_the_route_streams_the_race_then_ends_and_refuses_a_second_reader(monkeypatch):
    from starlette.applications import Starlette
    from starlette.testclient import TestClient
    channels = Channels()
    monkeypatch.setattr(live_channel, "CHANNELS", channels)
    client = TestClient(Starlette(routes=live_channel.routes()))
    token = channels.open()
    channels.push(token, {"append": {"spec-pane": [0, "a"]}, "replace": {}})
    channels.close(token)
    reply = client.get(f"/{live_channel.link(token)}")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
    assert reply.text.startswith('data: {"append":{"spec-pane":[0,"a"]}') and "event: end" in reply.text
    again = client.get(f"/{live_channel.link(token)}")
    assert again.status_code == 404 and again.text.count("\n") == 1 and "Traceback" not in again.text
    unknown = client.get("/specviz/live/not-a-token")
    assert unknown.status_code == 404


@pytest.mark.parametrize("live", [False, True])
def test_a_live_race_sends_its_panes_down_the_feed_and_ends_whole(tiny_dirs, monkeypatch, live):
    channels = Channels()
    monkeypatch.setattr(live_channel, "CHANNELS", channels)
    app = app_with(tiny_presets(tiny_dirs))
    updates = list(run_race(app, **form(temperature=0.0, max_new_tokens=40), live=live))
    streamed = [u for u in updates[1:-1] if isinstance(u.spec_pane, str) and u.spec_pane]
    final = updates[-1]
    assert "data-kind" in final.spec_pane and "data-kind" in final.base_pane     # the whole panes at the end
    marks = [u.status for u in updates if isinstance(u.status, str) and "data-live" in u.status]
    if not live:
        assert not marks and len(channels) == 0
        return
    assert not streamed                        # no pane through Gradio while the race streams
    token = marks[0].split('data-live="specviz/live/')[1].split('"')[0]
    channel = channels.claim(token)
    sent, closed = channels.since(channel, 0)
    assert closed and sent
    spec = "".join(json.loads(u)["append"].get("spec-pane", [0, ""])[1] for u in sent)
    assert final.spec_pane.startswith(spec) and "data-kind" in spec   # the feed's text, in order


def test_a_watched_channel_survives_300_new_ones():
    channels = Channels(Clock())
    watched = channels.open("school")
    channel = channels.claim(watched)
    for i in range(300):                        # new races, unread or finished, from many clients
        token = channels.open(f"10.0.0.{i % 7}")
        if i % 2:
            channels.close(token)
    assert len(channels) <= live_channel.MAX_CHANNELS
    assert channels.push(watched, {"n": 1})     # still there, still taking the race's updates
    assert [json.loads(u)["n"] for u in channels.since(channel, 0)[0]] == [1]


def test_when_every_channel_is_watched_a_new_race_gets_none_and_no_one_is_cut(monkeypatch):
    monkeypatch.setattr(live_channel, "MAX_CHANNELS", 4)
    channels = Channels(Clock())
    tokens = [channels.open(f"c{i}") for i in range(4)]
    for token in tokens:
        channels.claim(token)
    assert channels.open("late") is None and Feed.open("late", channels) is None    # streams through Gradio
    assert all(channels.push(t, {"n": 0}) for t in tokens)
    channels.close(tokens[0])                   # a race ends: its place can go to the next race
    assert channels.open("late") is not None and not channels.push(tokens[0], {"n": 1})


def test_channels_are_bounded_per_client():
    channels = Channels(Clock())
    mine = [channels.open("6.6.6.6") for _ in range(live_channel.PER_CLIENT + 20)]
    assert sum(channels.claim(t) is not None for t in mine) == live_channel.PER_CLIENT   # its oldest went
    assert channels.open("6.6.6.6") is None          # every one of its own is watched: none cut for it
    assert channels.open("203.0.113.1") is not None  # another client is not touched


def test_a_feed_whose_channel_went_says_so():
    clock = Clock()
    channels = Channels(clock)
    feed = Feed.open("x", channels)
    channels.claim(feed.token)
    feed.send({"spec-pane": "a"}, {})
    assert not feed.cut
    clock.t += live_channel.MAX_AGE_S + 1
    channels.open("y")                               # the expired one is pruned
    feed.send({"spec-pane": "ab"}, {})
    assert feed.cut                                  # the race sends the rest through Gradio


def test_a_reader_is_woken_by_the_update_not_by_polling():
    """The reader waits with a timeout far longer than the test; the push from the race's thread wakes it."""
    import asyncio
    import threading
    channels = Channels()
    token = channels.open("x")
    channel = channels.claim(token)

    async def read():
        waiting = asyncio.ensure_future(channels.wait(channel, 0, timeout=600))
        while not channel.readers:
            await asyncio.sleep(0)
        threading.Thread(target=channels.push, args=(token, {"n": 7})).start()
        return await asyncio.wait_for(waiting, 60)
    updates, closed = asyncio.run(read())
    assert [json.loads(u)["n"] for u in updates] == [7] and not closed and not channel.readers
