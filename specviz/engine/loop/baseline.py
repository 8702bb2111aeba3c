"""Plain target decoding, the baseline every speedup is measured against.

One target forward per token with a KV cache, and the very same `warp`/`choose` as the
speculative path, so the two differ only in speculation. Emits a `TargetToken` per token
and `Done`; like the speculative lane it runs on its own clock and yields after each step.
"""
from __future__ import annotations

import threading
from typing import Iterator

import torch

from ...runtime.cached_model import ModelWithCache, cached_model, positions_needed, step_shapes, uncached
from .config import SpecConfig
from .events import Event, TargetToken
from .lane import run_lane
from ..metrics.measures import LaneTally
from .output import Output, encode_prompt
from ...runtime.pair import ModelPair
from .sampling import choose, make_generator, warp
from ...runtime.timing import LaneClock, PhaseMarks


def decode_baseline(pair: ModelPair, prompt: str | list[int], config: SpecConfig | None = None,
                    cancel: threading.Event | None = None, lane: str = "base") -> Iterator[Event]:
    """Target-only decoding of prompt; yields a `TargetToken` per token, then `Done`."""
    cfg = config or SpecConfig()
    out = Output(pair, encode_prompt(pair, prompt), cfg)    # bad input fails here, before any work
    return _run(pair, out, cfg, cancel, lane)


def _run(pair: ModelPair, out: Output, cfg: SpecConfig, cancel, lane: str) -> Iterator[Event]:
    gen = make_generator(pair.device, cfg.seed)
    target = cached_model(pair.target, pair.vocab_size, cfg.fast, positions_needed(out, cfg),
                          graphs=cfg.cuda_graphs, shapes=step_shapes(cfg, "plain"))
    tally = LaneTally()

    def step(clock: LaneClock) -> list[Event]:
        event = _step(out, target, cfg, gen, lane, clock)
        tally.add(event)
        return [event]

    yield from run_lane(out, cancel, lane, LaneClock(pair.device), tally, step, target)


@torch.inference_mode()
def _step(out: Output, target: ModelWithCache, cfg: SpecConfig, gen, lane: str, clock: LaneClock) -> TargetToken:
    phases = PhaseMarks(target.device)                            # target pass | sampling, no extra sync
    logits = target.feed(uncached(target, out.ids), keep=1)     # (1, V)
    phases.mark()
    probs = warp(logits, cfg)
    token = choose(logits, probs, cfg, gen)                       # (1,)
    p = probs[0].gather(0, token)                                 # (1,) its probability, on the device
    token_id, p = phases.read(torch.cat([token.double(), p.double()]))   # one host read, the step's one sync
    phases.mark()
    target_s, sample_s = phases.seconds()
    token_id = int(token_id)
    piece = out.append(token_id)
    return TargetToken(index=out.n_generated - 1, token_id=token_id, piece=piece, p=p, target_s=target_s,
                       sample_s=sample_s, lane=lane, t=clock.read())
