"""One sampling function for every model and lane: logits -> probabilities -> token.

`warp` applies temperature, then top-k, then top-p (the order transformers uses) to the
logits of the target and of the draft alike, before any ratio p/q is taken; so the
speculative output follows the target's distribution *under the same settings*, and the
baseline samples from exactly that distribution (gpt-fast shares one helper the same way).
Greedy (temperature 0) picks the argmax of the raw logits; its probabilities, shown for
teaching only, are the plain softmax.
"""
from __future__ import annotations

from typing import Protocol

import torch


class Sampling(Protocol):
    """The settings `warp` and `choose` read (a SpecConfig has them)."""
    greedy: bool
    temperature: float
    top_k: int
    top_p: float


def warp(logits: torch.Tensor, cfg: Sampling) -> torch.Tensor:
    """(..., V) logits -> (..., V) float32 probabilities under cfg's temperature, top-k and top-p."""
    logits = logits.float()
    if cfg.greedy:
        return torch.softmax(logits, dim=-1)
    logits = logits / cfg.temperature
    if 0 < cfg.top_k < logits.size(-1):
        # Keep the top_k largest logits (ties with the k-th are kept too).
        kth = torch.topk(logits, cfg.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if cfg.top_p < 1.0:
        # Keep the smallest most-likely set whose mass reaches top_p: a token stays when
        # the mass of the tokens ranked above it is still below top_p.
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        sorted_probs = torch.softmax(sorted_logits, dim=-1)
        mass_above = sorted_probs.cumsum(-1) - sorted_probs
        drop = mass_above >= cfg.top_p
        drop[..., 0] = False      # the most likely token always stays (a top_p that underflows float32 is 0)
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
    return torch.softmax(logits, dim=-1)


def choose(logits: torch.Tensor, probs: torch.Tensor, cfg: Sampling, gen: torch.Generator) -> torch.Tensor:
    """One token per row of (n, V): argmax of the logits when greedy, else a draw from probs. (n,) long."""
    if cfg.greedy:
        return logits.argmax(dim=-1)
    return torch.multinomial(probs, 1, generator=gen).squeeze(-1)


def make_generator(device: torch.device, seed: int) -> torch.Generator:
    """The run's own random source: same seed, same draws, whatever else runs in the process."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen
