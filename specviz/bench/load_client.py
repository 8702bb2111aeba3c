"""A bounded load test: N concurrent gradio_client users, each a seeded generation.

Every client calls the app's /generate endpoint on localhost with its own seed; afterwards
each output is compared with the same seed run alone, in process. Latency is measured per
request (queue wait included). Bounded: N requests, a timeout on each, then it stops.

All clients of a load test come from 127.0.0.1. The app caps the work one client address may have
in hand (view/fair_queue.py), so each normal client says which address it stands for in
`X-Forwarded-For` (CLIENT_NET), as clients behind a Space's proxy do, and the served app is told to
trust that header (SPECVIZ_TRUST_FORWARDED=1, set by scripts/load_test.py). The hostile clients
(`hostile`) stand for one other address (HOSTILE_ADDRESS) and run in a thread beside the normal
clients, bounded in count and time.
"""
from __future__ import annotations

import statistics
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields

from ..engine import SpecConfig, speculate
from ..engine.loop.drafters import DEFAULT_DRAFTER

CLIENT_NET = "203.0.113."           # normal client i stands for 203.0.113.(i + 1) (documentation addresses)
HOSTILE_ADDRESS = "198.51.100.66"


def client_address(i: int) -> str:
    return f"{CLIENT_NET}{i % 254 + 1}"


def run_clients(url: str, preset: str | list[str], prompts: list[str], clients: int, max_new_tokens: int,
                temperature: float, timeout_s: float = 300, addresses: bool = False) -> list[dict]:
    """`preset`: one menu key for every client, or one per client (cycled): clients may switch pairs.
    `addresses`: each client says it stands for its own address (client_address; a server that trusts
    X-Forwarded-For counts each apart)."""
    from gradio_client import Client
    presets = [preset] if isinstance(preset, str) else list(preset)

    def one(i: int) -> dict:
        headers = {"X-Forwarded-For": client_address(i)} if addresses else None
        start = time.perf_counter()
        key = presets[i % len(presets)]
        try:
            client = Client(url, verbose=False, download_files=False, headers=headers)
            job = client.submit(prompts[i % len(prompts)], key, 4, temperature, 0, 1.0, max_new_tokens, i,
                                DEFAULT_DRAFTER, api_name="/generate")
            out = job.result(timeout=timeout_s)
        except Exception as err:       # noqa: BLE001 - a lost result is what the test counts
            return {"client": i, "seed": i, "preset": key, "prompt": prompts[i % len(prompts)],
                    "latency_s": time.perf_counter() - start, "error": " ".join(str(err).split())[:160]}
        return {"client": i, "seed": i, "preset": key, "prompt": prompts[i % len(prompts)],
                "latency_s": time.perf_counter() - start, "finished_at": time.monotonic(),
                "token_ids": out["token_ids"], "text": out["text"]}

    with ThreadPoolExecutor(max_workers=clients) as pool:
        return list(pool.map(one, range(clients)))


def check_against_solo(pair, results: list[dict], max_new_tokens: int, temperature: float) -> list[int]:
    """Clients whose output differs from the same seed run alone (should be none; lost results are
    counted apart)."""
    bad = []
    for r in results:
        if "error" in r:
            continue
        cfg = SpecConfig(k=4, temperature=temperature, max_new_tokens=max_new_tokens, seed=r["seed"])
        solo = list(speculate(pair, pair.tokenizer(r["prompt"])["input_ids"], cfg))[-1]
        if solo.token_ids != r["token_ids"]:
            bad.append(r["client"])
    return bad


def percentiles(results: list[dict]) -> dict:
    lat = sorted(r["latency_s"] for r in results)
    return {"p50_s": statistics.median(lat), "p95_s": lat[min(len(lat) - 1, round(0.95 * (len(lat) - 1)))],
            "max_s": lat[-1]}


def flood(url: str, joins: int = 70, session: str = "hostile-flooder") -> dict:
    """A hostile client: `joins` /generate joins from one session, never reading a result.
    Returns how many the server accepted and refused (with the first refusal's message)."""
    import httpx
    from gradio_client import Client
    info = Client(url, verbose=False, download_files=False)
    fn = info._infer_fn_index("/generate", None)
    args = ["def f(x):\n", "bundled", 4, 0.8, 0, 1.0, 64, 0, DEFAULT_DRAFTER, False]
    out = {"accepted": 0, "refused": 0, "message": ""}
    with httpx.Client(timeout=10) as http:
        for _ in range(joins):
            r = http.post(f"{url}/gradio_api/queue/join", json={"data": args, "fn_index": fn, "session_hash": session,
                                                                "event_data": None, "trigger_id": None})
            if r.status_code == 200:
                out["accepted"] += 1
            else:
                out["refused"] += 1
                out["message"] = out["message"] or r.json().get("detail", "")
    return out


def long_lossless(url: str, prompt: str, samples: int = 2000):
    """A hostile client: a 2000-sample lossless check on the bundled pair. Returns its gradio_client Job
    (cancel it when done)."""
    from gradio_client import Client
    client = Client(url, verbose=False, download_files=False)
    return client.submit(samples, *_form(prompt, 64, temperature=1.0), api_name="/lossless")


def _form(prompt: str, max_new_tokens: int, **changes) -> list:
    """The page's form values (app/request.py's FORM_FIELDS order), the bundled pair."""
    from ..app.request import FORM_FIELDS, RunRequest
    values = {f.name: f.default for f in fields(RunRequest)}
    values.update({"prompt": prompt, "preset": "bundled", "temperature": 0.8, **changes})
    for name in ("max_new", "max_new_tokens"):
        if name in values:
            values[name] = max_new_tokens
    return [values[name] for name in FORM_FIELDS]


def hostile(url: str, kind: str, prompt: str, done: threading.Event, every_s: float = 0.1,
            most: int = 400, within_s: float = 600) -> tuple[threading.Thread, dict]:
    """A hostile client in a thread, until `done` is set (or `most` joins, or `within_s` seconds): it joins
    from HOSTILE_ADDRESS, every join with a new session id, and never opens a result stream.
    kind "never-listens": /race, the prompt repeated to about 1,000 tokens, 256 new tokens;
    "new-sessions": /generate, 256 new tokens; "step": /step with an empty state (each a fresh
    decode of up to 64 tokens). Returns the thread and its tally (accepted, refused, first refusal)."""
    import httpx
    from gradio_client import Client
    info = Client(url, verbose=False, download_files=False)
    api = {"never-listens": "/race", "new-sessions": "/generate", "step": "/step"}[kind]
    fn = info._infer_fn_index(api, None)
    if kind == "never-listens":
        data = _form((prompt + "\n") * 100, 256)
    elif kind == "new-sessions":
        data = [prompt, "bundled", 4, 0.8, 0, 1.0, 256, 0, DEFAULT_DRAFTER, False]
    else:
        data = [None] + _form(prompt, 64)
    tally = {"accepted": 0, "refused": 0, "message": ""}

    def send():
        end = time.monotonic() + within_s
        with httpx.Client(timeout=10, headers={"X-Forwarded-For": HOSTILE_ADDRESS}) as http:
            for _ in range(most):
                if done.is_set() or time.monotonic() > end:
                    return
                r = http.post(f"{url}/gradio_api/queue/join", json={
                    "data": data, "fn_index": fn, "session_hash": uuid.uuid4().hex[:11], "event_data": None,
                    "trigger_id": None})
                if r.status_code == 200:
                    tally["accepted"] += 1
                else:
                    tally["refused"] += 1
                    tally["message"] = tally["message"] or str(r.json().get("detail", ""))[:160]
                time.sleep(every_s)
    thread = threading.Thread(target=send, daemon=True, name=f"hostile-{kind}")
    thread.start()
    return thread, tally


def seconds_to_idle(busy_below: float = 0.1, window_s: float = 0.5, within_s: float = 30.0) -> float | None:
    """Seconds until this process (the server runs in it) uses less than `busy_below` of one core over a
    `window_s` window, or None if it never does within `within_s`. Called when a client leaves: work
    left running for nobody shows as the time this takes."""
    start = time.monotonic()
    while time.monotonic() - start < within_s:
        cpu0, t0 = time.process_time(), time.monotonic()
        time.sleep(window_s)
        if (time.process_time() - cpu0) / (time.monotonic() - t0) < busy_below:
            return time.monotonic() - start
    return None
