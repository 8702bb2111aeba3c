"""The load test's `classroom` kind: a class of thirty behind one address, beside one hostile address.

Each student is a thread with its own session, every connection made from one loopback address
(STUDENTS_ADDRESS, the connection's own source address, no header), as a school's laptops reach a
Space through one router: it opens the page (the page's load events, each read to its end), races
(the `/race` API, which streams the race through Gradio as the page's own Run streams its panes) and
takes one step (`/step`), all within seconds of the others. Beside them a hostile client from another
loopback address (HOSTILE_LOOPBACK) keeps HOSTILE_THREADS `/generate` joins in hand, each from a new
session id, each read. Per student: the wait from its Run to its first token (the first update whose
pane holds a token), refusals (any join not admitted), and its race's tokens against the same race run
alone in process. The device's turns by address (app/slots.py) are counted from the
start and noted at each student's first token: the report says how many the class and the hostile
address had before the last student's. Bounded: each request has a timeout, the hostile client stops when the students are
done (or after `most` joins), and every request goes to the loopback server the load test started.
"""
from __future__ import annotations

import html
import json
import re
import threading
import time
import uuid

STUDENTS_ADDRESS = "127.0.0.2"
HOSTILE_LOOPBACK = "127.0.0.3"
HOSTILE_THREADS = 16
TOKEN = re.compile(r"data-kind=")
TAG = re.compile(r"<[^>]*>")


def _http(address: str, timeout_s: float):
    import httpx
    return httpx.Client(timeout=timeout_s, transport=httpx.HTTPTransport(local_address=address))


def _join(http, url: str, fn: int, data: list, session: str) -> str | None:
    """Join one event; None when admitted, else the refusal's words."""
    r = http.post(f"{url}/gradio_api/queue/join", json={"data": data, "fn_index": fn, "session_hash": session,
                                                        "event_data": None, "trigger_id": None})
    if r.status_code == 200:
        return None
    try:
        return f"{r.status_code}: {str(r.json().get('detail', ''))[:160]}"
    except ValueError:
        return f"{r.status_code}: {r.text[:160]}"


def _read(http, url: str, session: str, on_update=None) -> dict | None:
    """Read the session's stream to the event's end: its last output (None for an error)."""
    with http.stream("GET", f"{url}/gradio_api/queue/data", params={"session_hash": session}) as stream:
        for line in stream.iter_lines():
            if not line.startswith("data:"):
                continue
            msg = json.loads(line[5:])
            if msg.get("msg") == "process_generating" and on_update is not None:
                on_update(msg.get("output") or {})
            if msg.get("msg") == "process_completed":
                return msg.get("output") if msg.get("success") else None
            if msg.get("msg") in ("close_stream", "unexpected_error"):
                return None
    return None


def visible_text(pane_html: str) -> str:
    """A pane's tokens as the page shows them (tags and their attributes, timings included, left out)."""
    return html.unescape(TAG.sub("", pane_html or ""))


def student(url: str, demo, fns: dict, form: list, spec_pane: int, timeout_s: float, turns=dict) -> dict:
    """One student's page load, race and step; what it waited and what it got. `turns()`: the device's turns
    by client so far (app/slots.py), noted when the student's first token arrives."""
    session = uuid.uuid4().hex[:11]
    out: dict = {"refusals": [], "first_token_s": None, "race_s": None, "pane": None}
    with _http(STUDENTS_ADDRESS, timeout_s) as http:
        http.get(f"{url}/")
        for i in sorted(fns["loads"]):
            values = [getattr(c, "value", None) for c in demo.fns[i].inputs or []]
            refused = _join(http, url, i, values, session)
            if refused:
                out["refusals"].append(("load", refused))
            else:
                _read(http, url, session)
        start = time.monotonic()
        refused = _join(http, url, fns["race"], form, session)
        if refused:
            out["refusals"].append(("race", refused))
        else:
            def seen(output):
                # A streamed update carries each output as Gradio's diff ops (a replace or an append of text).
                data = output.get("data") or []
                pane = data[spec_pane] if len(data) > spec_pane else None
                if out["first_token_s"] is None and pane and TOKEN.search(json.dumps(pane)):
                    out["first_token_s"] = time.monotonic() - start
                    out["turns_then"] = turns()
            final = _read(http, url, session, seen)
            out["race_s"] = time.monotonic() - start
            data = (final or {}).get("data") or []
            out["pane"] = data[spec_pane] if len(data) > spec_pane and isinstance(data[spec_pane], str) else None
        refused = _join(http, url, fns["step"], [None] + form, session)
        if refused:
            out["refusals"].append(("step", refused))
        else:
            out["stepped"] = _read(http, url, session) is not None
    return out


def hostile(url: str, fn: int, data: list, done: threading.Event, most: int, timeout_s: float) -> tuple[list, dict]:
    """HOSTILE_THREADS loops of a `/generate` join from a new session each, read, until `done`."""
    tally = {"accepted": 0, "refused": 0, "message": ""}
    lock, count = threading.Lock(), [0]

    def run():
        with _http(HOSTILE_LOOPBACK, timeout_s) as http:
            while not done.is_set():
                with lock:
                    if count[0] >= most:
                        return
                    count[0] += 1
                session = uuid.uuid4().hex[:11]
                try:
                    refused = _join(http, url, fn, data, session)
                    with lock:
                        tally["refused" if refused else "accepted"] += 1
                        tally["message"] = tally["message"] or (refused or "")
                    if refused:
                        time.sleep(0.2)
                    else:
                        _read(http, url, session)
                except Exception as err:    # noqa: BLE001 - a hostile client's failure is only counted
                    with lock:
                        tally["failed"] = tally.get("failed", 0) + 1
    threads = [threading.Thread(target=run, daemon=True) for _ in range(HOSTILE_THREADS)]
    for t in threads:
        t.start()
    return threads, tally


def run(url: str, demo, app, students: int, max_new_tokens: int, temperature: float, prompts: list[str],
        timeout_s: float = 900) -> dict:
    """The whole classroom: `students` threads beside the hostile client; then each race run alone, in
    process, for its tokens and its time. Returns the figures the load test prints."""
    from concurrent.futures import ThreadPoolExecutor

    from ..app.request import FORM_FIELDS
    from ..view.fair_queue import load_events
    from ..view.handlers import RACE_FIELDS, run_race
    from .load_client import _form
    fns = {f.api_name: i for i, f in demo.fns.items() if isinstance(f.api_name, str)}
    fns["loads"] = load_events(demo)
    spec_pane = RACE_FIELDS.index("spec_pane")
    shown = [getattr(c, "value", None) for c in demo.fns[fns["race"]].inputs]     # as the page sends its form
    forms = [[value if value is not None else shown[j]
              for j, value in enumerate(_form(prompts[i % len(prompts)], max_new_tokens, temperature=temperature,
                                              seed=i))] for i in range(students)]
    done = threading.Event()
    app.decoders.slots.turns = {}    # the device's turns by address from here on (who was served before whom)
    threads, tally = hostile(url, fns["generate"], [prompts[0], "bundled", 4, temperature, 0, 1.0, 256, 0, "model",
                                                     False], done, most=2000, timeout_s=timeout_s)
    time.sleep(1.0)                  # the hostile address holds its places before the class arrives
    try:
        with ThreadPoolExecutor(max_workers=students) as pool:
            results = list(pool.map(lambda i: student(url, demo, fns, forms[i], spec_pane, timeout_s,
                                                           app.decoders.slots.turns_by_client), range(students)))
    finally:
        done.set()
        for t in threads:
            t.join(timeout_s)
    solo_s, crossed = 0.0, []
    for i, (form, r) in enumerate(zip(forms, results)):
        start = time.monotonic()
        alone = list(run_race(app, **dict(zip(FORM_FIELDS, form))))[-1]
        solo_s += time.monotonic() - start
        if r["pane"] is not None and visible_text(r["pane"]) != visible_text(alone.spec_pane):
            crossed.append(i)
    return {"results": results, "hostile": tally, "solo_s": solo_s, "crossed": crossed}


def report(figures: dict, students: int) -> tuple[list[str], bool]:
    """The lines the load test prints, and whether the class was served whole."""
    results = figures["results"]
    lines = []
    for i, r in enumerate(results):
        first = f"{r['first_token_s']:6.2f} s" if r["first_token_s"] is not None else "  none  "
        refusals = "; ".join(f"{what} {why}" for what, why in r["refusals"]) or "none"
        lines.append(f"student {i:2d}  first token after {first}  refusals: {refusals}")
    served = [r for r in results if r["pane"] is not None and r["first_token_s"] is not None]
    refused = sum(len(r["refusals"]) for r in results)
    last = max((r["first_token_s"] for r in served), default=float("nan"))
    bound = 1.2 * figures["solo_s"]
    h = figures["hostile"]
    lines.append(f"classroom: {len(served)}/{students} served, {refused} refusals; last first token {last:.1f} s "
                 f"(the {students} races alone, in turn, took {figures['solo_s']:.1f} s; +20%: {bound:.1f} s); "
                 f"outputs crossed (not equal to the race alone): {len(figures['crossed'])}; hostile address: "
                 f"{h['accepted']} joins accepted, {h['refused']} refused ({h['message']!r})")
    latest = max(served, key=lambda r: r["first_token_s"], default=None)
    if latest is not None and latest.get("turns_then") is not None:
        # The turns are the device's round robin by address (app/slots.py): the hostile address is owed one
        # for each of the class's, and the bound above counts none of its turns.
        then = latest["turns_then"]
        lines.append(f"before the last student's first token the device gave {then.get(STUDENTS_ADDRESS, 0)} turns to "
                     f"the class's address and {then.get(HOSTILE_LOOPBACK, 0)} to the hostile address")
    ok = len(served) == students and refused == 0 and not figures["crossed"] and last <= bound
    return lines, ok
