"""A bounded load test: N concurrent gradio_client users, each a seeded generation.

Every client calls the app's /generate endpoint on localhost with its own seed; afterwards
each output is compared with the same seed run alone, in process. Latency is measured per
request (queue wait included). Bounded: N requests, a timeout on each, then it stops.
"""
from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from ..engine import SpecConfig, speculate
from ..engine.loop.drafters import DEFAULT_DRAFTER


def run_clients(url: str, preset: str | list[str], prompts: list[str], clients: int, max_new_tokens: int,
                temperature: float, timeout_s: float = 300) -> list[dict]:
    """`preset`: one menu key for every client, or one per client (cycled): clients may switch pairs."""
    from gradio_client import Client
    presets = [preset] if isinstance(preset, str) else list(preset)

    def one(i: int) -> dict:
        client = Client(url, verbose=False, download_files=False)
        start = time.perf_counter()
        key = presets[i % len(presets)]
        job = client.submit(prompts[i % len(prompts)], key, 4, temperature, 0, 1.0, max_new_tokens, i, DEFAULT_DRAFTER,
                            api_name="/generate")
        out = job.result(timeout=timeout_s)
        return {"client": i, "seed": i, "preset": key, "prompt": prompts[i % len(prompts)],
                "latency_s": time.perf_counter() - start, "finished_at": time.monotonic(),
                "token_ids": out["token_ids"], "text": out["text"]}

    with ThreadPoolExecutor(max_workers=clients) as pool:
        return list(pool.map(one, range(clients)))


def check_against_solo(pair, results: list[dict], max_new_tokens: int, temperature: float) -> list[int]:
    """Clients whose output differs from the same seed run alone (should be none)."""
    bad = []
    for r in results:
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
    return client.submit(samples, prompt, "bundled", "", "", DEFAULT_DRAFTER, 4, False, 1.0, 0, 1.0, 64, 0, "", False,
                         api_name="/lossless")
