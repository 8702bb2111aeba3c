"""What a round costs on this machine, measured in a few passes, and the k that pays best here.

The speedup of speculative decoding depends on the machine as much as on the draft: a verify
pass over k + 1 tokens costs about one plain step where a step is bound by reading the weights
(a GPU at small batch), but noticeably more on a CPU, and how much more varies between CPUs
and with the number of threads. So the app measures, once per loaded pair and in the thread
setting it serves with:

    plain_s        one target step (1 token after a cached context, one row of logits)
    draft_s        one draft step  (1 token after a cached context)
    pass_s[n]      one target pass over n tokens (n = k + 1 for a verify at k)

and prices a round in plain steps: c = draft_s / plain_s, v(k) = pass_s[k + 1] / plain_s.
With an expected acceptance rate a (measured on held-out prompts, or in earlier races here),
the k with the highest E(a, k) / (k c + v(k)) is the one to offer (theory.py).
The timings are medians over a few repeats on a fixed context, taken with the models'
ordinary caches (cached_model.py), so they price exactly the passes a race runs.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import torch

from .cached_model import cached_model
from .pair import ModelPair
from .theory import expected_speedup
from .timing import synchronize

CONTEXT = 64          # cached tokens before each timed pass (a short chat prompt)
REPEATS = 5           # timed repeats per pass size (median kept), after one warm-up


@dataclass(frozen=True)
class MachineCosts:
    plain_s: float
    draft_s: float | None                      # None: no draft model (prompt lookup drafts for ~free)
    pass_s: dict[int, float] = field(default_factory=dict)    # tokens in one target pass -> seconds
    threads: int = 1

    @property
    def c(self) -> float:
        return self.draft_s / self.plain_s if self.draft_s is not None else 0.0

    def v(self, k: int) -> float:
        """A verify pass at k (k + 1 tokens), in plain steps."""
        return self.pass_s[k + 1] / self.plain_s

    def to_dict(self) -> dict:
        return {"plain_ms": 1e3 * self.plain_s, "draft_ms": None if self.draft_s is None else 1e3 * self.draft_s,
                "c": self.c, "v": {k - 1: s / self.plain_s for k, s in sorted(self.pass_s.items()) if k > 1},
                "threads": self.threads}


def _median_pass(model, vocab_size: int, context: torch.Tensor, tokens: int, repeats: int,
                 draft: bool = False) -> float:
    # The model-with-cache a race would get on this device (eager on a CPU, CUDA graphs on a GPU,
    # a draft's lean step on a CPU), so the passes timed are the passes a race runs; the first one
    # warms up (and captures a graph).
    lm = cached_model(model, vocab_size, positions=len(context) + tokens + 1, draft=draft)
    try:
        lm.feed(context, keep=1)
        times = []
        for i in range(repeats + 1):
            new = context[i: i + tokens].clone()      # any in-vocabulary ids: cost depends on the count only
            synchronize(lm.device)
            start = time.perf_counter()
            lm.feed(new, keep=tokens)
            synchronize(lm.device)
            times.append(time.perf_counter() - start)
            lm.crop(len(context))
    finally:
        lm.release()
    return statistics.median(times[1:])


@torch.inference_mode()
def measure_costs(pair: ModelPair, k_max: int, context: int = CONTEXT, repeats: int = REPEATS) -> MachineCosts:
    """Time plain steps, draft steps and target passes of 2..k_max + 1 tokens on this machine."""
    ids = pair.tokenizer("The quick brown fox jumps over the lazy dog. " * 16)["input_ids"]
    ctx = torch.tensor(ids[:context], dtype=torch.long, device=pair.device)
    plain = _median_pass(pair.target, pair.vocab_size, ctx, 1, repeats)
    draft = None
    if pair.draft is not None and not pair.draft_reads_features:
        draft = _median_pass(pair.draft, pair.vocab_size, ctx, 1, repeats, draft=True)
    passes = {n: _median_pass(pair.target, pair.vocab_size, ctx, n, repeats) for n in range(2, k_max + 2)}
    return MachineCosts(plain_s=plain, draft_s=draft, pass_s={1: plain, **passes}, threads=torch.get_num_threads())


def pick_k(a: float, costs: MachineCosts, k_range: tuple[int, int]) -> int:
    """The k in k_range (both ends included, within the measured passes) with the highest expected speedup."""
    ks = [k for k in range(k_range[0], k_range[1] + 1) if k + 1 in costs.pass_s]
    return max(ks, key=lambda k: expected_speedup(a, k, costs.c, costs.v(k)))
