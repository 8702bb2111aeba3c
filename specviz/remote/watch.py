"""One request to a server, watched: its streamed tokens, their fates, the figures, and the /metrics delta.

`watch` streams a completion and yields a `Watch` after every chunk (tokens so far, no fates until the
server's per-step counts arrive with the last chunk), then a final one with the fates (rounds.py), the
request's acceptance figures as the server computed them, and what the server's /metrics counters added
while it ran (the server's own per-position acceptance for this view's requests; other clients' requests
in the same window are counted too, which `Watch.notes` says when the totals disagree). `race_baseline` asks
the same of a plain endpoint (the target without speculation) and words the comparison once, for the CLI and the
Server tab alike.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator

from ..errors import RemoteError
from . import client
from .rounds import Fates, assign_fates


@dataclass
class Watch:
    """A request as far as it has streamed; `fates` and the figures are set once it has ended."""
    url: str
    model: str
    completion: client.Completion
    seconds: float = 0.0
    fates: Fates | None = None
    counters: dict | None = None          # /metrics delta over this request (None: the server has no /metrics)
    finished: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def spec(self) -> dict:
        return self.completion.spec or {}

    @property
    def mean_acceptance_length(self) -> float | None:
        return self.spec.get("mean_acceptance_length")

    @property
    def draft_acceptance_rate(self) -> float | None:
        return self.spec.get("draft_acceptance_rate")

    def acceptance_by_position(self) -> list[float]:
        """Of the steps that drafted at least i + 1 tokens, the share whose draft i was accepted (this request)."""
        steps = list(zip(self.spec.get("per_step_accepted") or [], self.spec.get("per_step_drafted") or []))
        depth = max((d for _, d in steps), default=0)
        return [sum(a > i for a, d in steps if d > i) / max(1, sum(d > i for _, d in steps)) for i in range(depth)]

    @property
    def tokens_per_s(self) -> float | None:
        return len(self.completion.pieces) / self.seconds if self.seconds > 0 else None

    def to_json(self) -> dict:
        """The CLI's --json record: rounds with their drafted, accepted and tokens, and the two figures."""
        rounds = [r.to_dict() for r in self.fates.rounds] if self.fates else []
        return {"rounds": [{"drafted": r["drafted"], "accepted": r["accepted"], "tokens": r["tokens"]} for r in rounds],
                "mean_acceptance_length": self.mean_acceptance_length,
                "draft_acceptance_rate": self.draft_acceptance_rate}


def pick_model(url: str, model: str | None) -> str:
    served = client.models(url)
    if model is None:
        if not served:
            raise RemoteError(f"{url} serves no model")
        return served[0]
    if model not in served:
        raise RemoteError(f"{url} does not serve {model!r}; it serves {', '.join(served)[:200]}")
    return model


def watch(url: str, prompt: str | list[int], model: str | None = None, temperature: float = 0.0, max_tokens: int = 128,
          seed: int | None = None, speculative: bool = True, timeout: float = 60.0) -> Iterator[Watch]:
    """Stream one completion from `url`; see the module docstring. speculative=False: a plain server (the
    baseline), from which no per-step counts are expected."""
    name = pick_model(url, model)
    try:
        before = client.spec_counters(url) if speculative else None
    except RemoteError:
        before = None
    start = time.perf_counter()
    seen = Watch(url, name, client.Completion())
    for _, completion in client.stream_completion(url, prompt, name, temperature, max_tokens, seed, timeout):
        seen.completion, seen.seconds = completion, time.perf_counter() - start
        yield seen
    seen.seconds = time.perf_counter() - start
    c = seen.completion
    if speculative:
        if c.spec is None:
            raise RemoteError(f"{url} sent no speculative metrics: start vLLM with --speculative-config and "
                              f"--per-request-spec-decode-metrics detailed (and keep n = 1 through any router)")
        seen.fates = assign_fates(c.pieces, c.token_ids, c.logprobs, c.spec.get("per_step_accepted"),
                                  c.spec.get("per_step_drafted"))
        if before is not None:
            seen.counters = client.counter_delta(before, client.spec_counters(url))
            if seen.counters["vllm:spec_decode_num_drafts_total"] != c.spec.get("num_spec_steps"):
                seen.notes.append("the server's /metrics counted other requests in the same window too")
    seen.finished = True
    yield seen


@dataclass(frozen=True)
class BaselineRace:
    """The same request through the plain endpoint (the target without speculation), asked after the
    speculative one: each timed on its own, by this client's clock around the server's answer."""
    plain: Watch
    same_text: bool                # the two outputs are token for token the same text
    ratio: float | None            # plain seconds / speculative seconds: > 1 means speculation was faster

    def comparison(self) -> str:
        """One clause the CLI and the Server tab both print after naming the plain endpoint."""
        same = "the same text" if self.same_text else "a different text"
        ratio = "-" if self.ratio is None else f"{self.ratio:.2f}x"
        return (f"{len(self.plain.completion.pieces)} tokens in {self.plain.seconds:.2f} s ({same}); "
                f"speculation ran {ratio} (one request each, one after the other)")


def compare(seen: Watch, plain: Watch) -> BaselineRace:
    """The speculative request `seen` set against the plain endpoint's `plain`, both finished."""
    same = plain.completion.pieces == seen.completion.pieces
    return BaselineRace(plain, same, plain.seconds / seen.seconds if seen.seconds > 0 else None)


def race_baseline(url: str, seen: Watch, prompt: str | list[int], model: str | None = None, temperature: float = 0.0,
                  max_tokens: int = 128, seed: int | None = None, timeout: float = 60.0) -> BaselineRace:
    """Ask the plain endpoint at `url` the request `seen` answered (streamed to its end, no speculative metrics
    expected) and compare the two. A server that fails raises RemoteError, as `watch` does."""
    plain = None
    for plain in watch(url, prompt, model, temperature, max_tokens, seed, speculative=False, timeout=timeout):
        pass
    return compare(seen, plain)
