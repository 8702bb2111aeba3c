"""More hostile clients for scripts/load_test.py --hostile: replays, session churn, one address's many
jobs, early leavers, an upload flood and a trace-link flood.

Each kind runs in threads beside the normal clients, from one address (load_client.HOSTILE_ADDRESS, in
X-Forwarded-For, which the load test's server trusts), and is bounded three ways: it stops when `done`
is set (the normal clients have finished), after `most` requests, or after `within_s` seconds. Each
returns its threads and a tally (accepted, refused, first refusal, and what the kind counts besides).
Requests go to the loopback server the load test started, and nowhere else.
"""
from __future__ import annotations

import json
import threading
import time
import uuid

from ..engine.loop.drafters import DEFAULT_DRAFTER
from .load_client import HOSTILE_ADDRESS, _form

KINDS = ("replay", "churn", "many-jobs", "leavers", "upload", "trace-links")


def _http():
    import httpx
    return httpx.Client(timeout=30, headers={"X-Forwarded-For": HOSTILE_ADDRESS})


def _session() -> str:
    return uuid.uuid4().hex[:11]


def _join(http, url: str, fn: int, data: list, session: str, tally: dict) -> bool:
    r = http.post(f"{url}/gradio_api/queue/join", json={"data": data, "fn_index": fn, "session_hash": session,
                                                        "event_data": None, "trigger_id": None})
    if r.status_code == 200:
        tally["accepted"] += 1
        return True
    tally["refused"] += 1
    if not tally["message"]:
        try:
            tally["message"] = str(r.json().get("detail", ""))[:160]
        except ValueError:
            tally["message"] = r.text[:160]
    return False


def _read(http, url: str, session: str, leave_after_s: float | None = None) -> str:
    """Read the session's result stream: "completed", "error", or "left" (closed after leave_after_s)."""
    start = time.monotonic()
    with http.stream("GET", f"{url}/gradio_api/queue/data", params={"session_hash": session}) as stream:
        for line in stream.iter_lines():
            if leave_after_s is not None and time.monotonic() - start >= leave_after_s:
                return "left"
            if not line.startswith("data:"):
                continue
            msg = json.loads(line[5:]).get("msg")
            if msg == "process_completed":
                return "completed" if json.loads(line[5:]).get("success") else "error"
            if msg in ("close_stream", "unexpected_error"):
                return "error"
    return "error"


def _loop(threads: int, body, done: threading.Event, most: int, within_s: float, name: str,
          tally: dict) -> list[threading.Thread]:
    """`threads` threads each calling body(http) until done, `most` calls in all, or `within_s`."""
    end, count, lock = time.monotonic() + within_s, [0], threading.Lock()

    def run():
        with _http() as http:
            while not done.is_set() and time.monotonic() < end:
                with lock:
                    if count[0] >= most:
                        return
                    count[0] += 1
                try:
                    body(http)
                except Exception as err:       # noqa: BLE001 - a hostile client's failure is only counted
                    tally["failed"] = tally.get("failed", 0) + 1
                    tally["message"] = tally["message"] or type(err).__name__
    out = [threading.Thread(target=run, daemon=True, name=f"hostile-{name}-{i}") for i in range(threads)]
    for t in out:
        t.start()
    return out


def replay_values(trace_text: str) -> list:
    """What the page sends with a trace replay: the trace's text and the share link (none here)."""
    return [trace_text, None]


def start(kind: str, url: str, fns: dict[str, int], prompt: str, done: threading.Event, trace_text: str = "",
          within_s: float = 600) -> tuple[list[threading.Thread], dict]:
    """Start one hostile kind. `fns`: the served page's fn indices by name ("generate", "stop", "race",
    "replay"); `trace_text`: a real trace's text, for "replay"."""
    tally = {"accepted": 0, "refused": 0, "message": "", "completed": 0}

    def replay(http):                 # a real trace replayed, results read, again and again
        session = _session()
        if _join(http, url, fns["replay"], replay_values(trace_text), session, tally) and _read(http, url, session) == "completed":
            tally["completed"] += 1

    def churn(http):                  # Stop from a new session id each time, never read: ~40 a second
        _join(http, url, fns["stop"], [None], _session(), tally)
        time.sleep(0.025)

    generate = [prompt, "bundled", 4, 0.8, 0, 1.0, 64, 0, DEFAULT_DRAFTER, False]

    def many_jobs(http):              # 16 real /generate jobs at once from one address, each read
        session = _session()
        if _join(http, url, fns["generate"], generate, session, tally) and _read(http, url, session) == "completed":
            tally["completed"] += 1
        else:
            time.sleep(0.2)

    def leaver(http):                 # joins, listens for a second, leaves
        session = _session()
        if _join(http, url, fns["generate"], generate, session, tally):
            _read(http, url, session, leave_after_s=1.0)
        else:
            time.sleep(0.2)

    def upload(http):                 # 20 files a request (none should be written)
        files = [("files", (f"f{i}.txt", b"x" if i % 2 else b"")) for i in range(20)]
        r = http.post(f"{url}/gradio_api/upload", files=files)
        tally["accepted" if r.status_code == 200 else "refused"] += 1
        tally["message"] = tally["message"] or r.text[:160]
        tally["paths_in_answers"] = tally.get("paths_in_answers", 0) + ("/tmp" in r.text)

    race = _form(prompt, 1)

    def trace_links(http):            # one-token races, each read to its end (each writes a trace)
        session = _session()
        if _join(http, url, fns["race"], race, session, tally) and _read(http, url, session) == "completed":
            tally["completed"] += 1
        else:
            time.sleep(0.2)

    plan = {"replay": (6, replay, 400), "churn": (1, churn, 4000), "many-jobs": (16, many_jobs, 2000),
            "leavers": (8, leaver, 2000), "upload": (2, upload, 500), "trace-links": (2, trace_links, 210)}
    threads, body, most = plan[kind]
    return _loop(threads, body, done, most, within_s, kind, tally), tally
