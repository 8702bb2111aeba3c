"""Plain target decoding, the baseline every speedup is measured against.

One target forward per token with a KV cache, and the very same `warp`/`choose` as the
speculative path, so the two differ only in speculation. Emits a `TargetToken` per token
and `Done`; like the speculative lane it runs on its own clock and yields after each step.
"""
from __future__ import annotations

import threading
from typing import Iterator

import torch

from .cached_model import CachedModel, cached_model, positions_needed
from .config import SpecConfig
from .events import Done, Event, TargetToken
from .output import Output, encode_prompt
from .pair import ModelPair
from .sampling import choose, make_generator, warp
from .summary import Totals
from .timing import LaneClock, run_lane


def decode_baseline(pair: ModelPair, prompt: str | list[int], config: SpecConfig | None = None,
                    cancel: threading.Event | None = None, lane: str = "base") -> Iterator[Event]:
    """Target-only decoding of prompt; yields a `TargetToken` per token, then `Done`."""
    config = config or SpecConfig()
    out = Output(pair, encode_prompt(pair, prompt), config)
    return _run(pair, out, config, cancel, lane)


def _run(pair: ModelPair, out: Output, cfg: SpecConfig, cancel, lane: str) -> Iterator[Event]:
    gen = make_generator(pair.device, cfg.seed)
    target = cached_model(pair.target, pair.vocab_size, cfg.fast, positions_needed(out, cfg))
    clock, totals = LaneClock(pair.device), Totals()

    def step(clock: LaneClock) -> list[Event]:
        totals.add_round(drafted=0, accepted=0, emitted=1)
        return [_step(out, target, cfg, gen, lane, clock)]

    try:
        yield from run_lane(out, cancel, step, clock)
    finally:                       # also when the consumer closes the lane early
        target.release()
    totals.target_forwards = target.forwards
    yield Done(text=out.text, token_ids=out.generated, stop_reason=out.stop_reason or "max_tokens",
               stats=totals.summary(clock.total), lane=lane, t=clock.total)


@torch.inference_mode()
def _step(out: Output, target: CachedModel, cfg: SpecConfig, gen, lane: str, clock: LaneClock) -> TargetToken:
    fresh = torch.tensor(out.ids[target.length:], dtype=torch.long, device=target.device)
    logits = target.feed(fresh, keep=1)           # (1, V)
    probs = warp(logits, cfg)
    token = choose(logits, probs, cfg, gen)       # (1,)
    token_id, p = torch.stack([token[0].double(), probs[0, token[0]].double()]).tolist()  # one host read
    token_id = int(token_id)
    piece = out.append(token_id)
    return TargetToken(out.n_generated - 1, token_id, piece, p, lane, clock.read())
