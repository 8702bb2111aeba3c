"""HTTP to a vLLM server: one streamed n = 1 completion, and the counters of its Prometheus /metrics page.

Plain urllib (no extra dependency). A completion is asked with `logprobs` (the target's log-probability of
each token), `return_token_ids` and `stream_options.include_usage`: vLLM puts the per-request speculative
metrics (`metrics.speculative_decoding`) on that final usage chunk. Every failure becomes one RemoteError
line: the server is down, answers slowly, is not an OpenAI-style server, or sends no speculative metrics.
"""
from __future__ import annotations

import json
import math
import re
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Iterator

from ..errors import RemoteError

SPEC_COUNTERS = ("vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total",
                 "vllm:spec_decode_num_accepted_tokens_total")
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"


@dataclass
class Completion:
    """What one streamed completion brought: its tokens, the chunks they came in, and the server's metrics."""
    pieces: list[str] = field(default_factory=list)
    token_ids: list[int | None] = field(default_factory=list)
    logprobs: list[float | None] = field(default_factory=list)
    chunk_sizes: list[int] = field(default_factory=list)      # tokens per streamed chunk (one verify step, usually)
    finish_reason: str | None = None
    prompt_ids: list[int] | None = None                        # the prompt as the server tokenized it
    spec: dict | None = None                                   # metrics.speculative_decoding, as the server sent it
    model: str | None = None


def base_url(url: str) -> str:
    """'http://host:8000/v1' or 'http://host:8000' -> 'http://host:8000' (the /v1 routes are added here)."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise RemoteError(f"a server address starts with http:// or https://, not {url[:60]!r}")
    return url[:-3] if url.endswith("/v1") else url


def _open(request: urllib.request.Request, url: str, timeout: float):
    try:
        return urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as err:
        detail = err.read(400).decode("utf-8", "replace").replace("\n", " ")
        raise RemoteError(f"{url} answered HTTP {err.code}: {detail[:200]}") from None
    except (socket.timeout, TimeoutError):
        raise RemoteError(f"{url} did not answer within {timeout:g} s (a server still starting, or too busy)") from None
    except (urllib.error.URLError, ConnectionError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise RemoteError(f"cannot reach {url}: {reason} (is the server running?)") from None


def models(url: str, timeout: float = 10.0) -> list[str]:
    """The model names the server serves (GET /v1/models)."""
    target = f"{base_url(url)}/v1/models"
    with _open(urllib.request.Request(target), target, timeout) as answer:
        try:
            return [m["id"] for m in json.load(answer)["data"]]
        except (ValueError, KeyError, TypeError):
            raise RemoteError(f"{target} is not an OpenAI-style server's model list (is it vLLM?)") from None


def stream_completion(url: str, prompt: str | list[int], model: str, temperature: float = 0.0, max_tokens: int = 128,
                      seed: int | None = None, timeout: float = 60.0) -> Iterator[tuple[list, Completion]]:
    """POST /v1/completions with stream=True; yields (new tokens as (piece, id, logprob), the Completion so far)
    per chunk, then returns once the server sends [DONE]. The final Completion carries the server's metrics.
    `prompt` is text, or token ids (vLLM takes both; ids send exactly the tokens another engine is given)."""
    target = f"{base_url(url)}/v1/completions"
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": temperature, "n": 1,
            "stream": True, "logprobs": 1, "return_token_ids": True, "stream_options": {"include_usage": True}}
    if seed is not None:
        body["seed"] = seed
    request = urllib.request.Request(target, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    done = Completion()
    with _open(request, target, timeout) as answer:
        for line in answer:
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                return
            try:
                chunk = json.loads(data)
            except ValueError:
                raise RemoteError(f"{target} sent a chunk that is not JSON (is it an OpenAI-style server?)") from None
            if "error" in chunk and not chunk.get("choices"):
                raise RemoteError(f"{target}: {str(chunk['error'].get('message', chunk['error']))[:200]}")
            done.model = chunk.get("model", done.model)
            for choice in chunk.get("choices") or ():
                done.prompt_ids = choice.get("prompt_token_ids") or done.prompt_ids
            spec = (chunk.get("metrics") or {}).get("speculative_decoding")
            if spec is not None:
                done.spec = spec
            new = _tokens_of(chunk)
            if new:
                for piece, token_id, logprob in new:
                    done.pieces.append(piece)
                    done.token_ids.append(token_id)
                    done.logprobs.append(logprob)
                done.chunk_sizes.append(len(new))
            for choice in chunk.get("choices") or ():
                done.finish_reason = choice.get("finish_reason") or done.finish_reason
            yield new, done
    raise RemoteError(f"{target} closed the stream before [DONE]")


def _tokens_of(chunk: dict) -> list[tuple[str, int | None, float | None]]:
    """(piece, token id, logprob) for each token of one completion chunk."""
    out = []
    for choice in chunk.get("choices") or ():
        lp = choice.get("logprobs") or {}
        pieces = lp.get("tokens") or ([choice["text"]] if choice.get("text") else [])
        ids = choice.get("token_ids") or [None] * len(pieces)
        logprobs = lp.get("token_logprobs") or [None] * len(pieces)
        for piece, token_id, logprob in zip(pieces, ids, logprobs):
            finite = logprob if logprob is None or math.isfinite(logprob) else -math.inf
            out.append((piece, token_id, finite))
    return out


def spec_counters(url: str, timeout: float = 10.0) -> dict:
    """The server's speculative counters from /metrics: the three totals, and accepted tokens by position."""
    target = f"{base_url(url)}/metrics"
    with _open(urllib.request.Request(target), target, timeout) as answer:
        text = answer.read().decode("utf-8", "replace")
    return parse_counters(text)


SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)')
POSITION = re.compile(r'position="(\d+)"')


def parse_counters(text: str) -> dict:
    """Prometheus text -> {counter: total, ..., "per_position": {position: total}}, summed over label sets."""
    out: dict = {name: 0.0 for name in SPEC_COUNTERS}
    out["per_position"] = {}
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match is None:                                  # comments, blank lines
            continue
        try:
            value = float(match["value"])
        except ValueError:
            continue
        if match["name"] in SPEC_COUNTERS:
            out[match["name"]] += value
        elif match["name"] == PER_POSITION and (position := POSITION.search(match["labels"] or "")):
            key = int(position[1])
            out["per_position"][key] = out["per_position"].get(key, 0.0) + value
    return out


def counter_delta(before: dict, after: dict) -> dict:
    """What the requests between two readings added (the server's own figures for this view's requests)."""
    delta = {name: after.get(name, 0.0) - before.get(name, 0.0) for name in SPEC_COUNTERS}
    positions = set(before.get("per_position", {})) | set(after.get("per_position", {}))
    delta["per_position"] = {p: after.get("per_position", {}).get(p, 0.0) - before.get("per_position", {}).get(p, 0.0)
                             for p in sorted(positions)}
    return delta
