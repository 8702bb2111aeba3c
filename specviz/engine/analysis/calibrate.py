"""What a round costs on this machine, measured in a few passes, and the k that pays best here.

The speedup of speculative decoding depends on the machine as much as on the draft: a verify
pass over k + 1 tokens costs about one plain step where a step is bound by reading the weights
(a GPU at small batch), but noticeably more on a CPU, and how much more varies between CPUs
and with the number of threads. So the app measures, once per loaded pair and in the thread
setting it serves with:

    plain_s        one target step (1 token after a cached context, one row of logits)
    pass_s[n]      one target pass over n tokens (n = k + 1 for a verify at k)
    round_draft_s[k]  a round's k draft steps where a race runs them: right after a verify pass of
                   k + 1 tokens, the first step feeding the token that pass gave (the draft's cache
                   catching up), through the race's own drafter (engine/loop/drafters.py)
    draft_s        one draft step on its own (1 token after a cached context; shown, not priced)

and prices a round in plain steps: c(k) = round_draft_s[k] / (k plain_s), v(k) = pass_s[k + 1] / plain_s.
The draft is priced in its place in the round, not alone: its first step after a verify pass runs
with the caches full of the target's weights and feeds one more token, and costs ~1.7-2x a step
on its own (bundled pair, 1 thread: 0.67 ms against 0.33-0.39 ms). Timed alone, c came out ~0.04
where the races' own ledgers measured 0.052-0.064, and the page's "the formula expects" promised
2.1-2.6x where the races ran 1.8x.
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

from ...runtime.cached_model import CachedModel, cached_model
from ..loop.config import SpecConfig
from ..loop.drafters import ModelDrafter
from ...runtime.pair import ModelPair
from ..loop.sampling import make_generator
from ..metrics.theory import expected_speedup
from ...runtime.timing import synchronize

CONTEXT = 64          # cached tokens before each timed pass (a short chat prompt)
REPEATS = 5           # timed repeats per pass size (median kept), after one warm-up


@dataclass(frozen=True)
class MachineCosts:
    plain_s: float
    draft_s: float | None                      # None: no draft model (prompt lookup drafts for ~free)
    pass_s: dict[int, float] = field(default_factory=dict)    # tokens in one target pass -> seconds
    threads: int = 1
    round_draft_s: dict[int, float] = field(default_factory=dict)  # k -> a round's k draft steps, seconds
    # Every timed repeat behind those medians (the cost model's samples, cost_model.py: their spread).
    pass_samples: dict[int, tuple[float, ...]] = field(default_factory=dict)   # tokens in a pass -> seconds
    round_samples: dict[int, tuple[float, ...]] = field(default_factory=dict)  # k -> seconds of k draft steps

    @property
    def c_alone(self) -> float:
        """A draft step on its own, in plain steps (0 without a draft model): a lower bound of c(k)."""
        return self.draft_s / self.plain_s if self.draft_s is not None else 0.0

    def c(self, k: int) -> float:
        """A draft step in a round of k, in plain steps: what a race pays (c_alone where k was not timed)."""
        if self.draft_s is not None and k in self.round_draft_s:
            return self.round_draft_s[k] / (k * self.plain_s)
        return self.c_alone

    def v(self, k: int) -> float:
        """A verify pass at k (k + 1 tokens), in plain steps."""
        return self.pass_s[k + 1] / self.plain_s

    def to_dict(self) -> dict:
        return {"plain_ms": 1e3 * self.plain_s, "draft_ms": None if self.draft_s is None else 1e3 * self.draft_s,
                "c": {k: self.c(k) for k in sorted(self.round_draft_s)} if self.draft_s is not None else 0.0,
                "v": {k - 1: s / self.plain_s for k, s in sorted(self.pass_s.items()) if k > 1},
                "threads": self.threads}


def _timed_passes(model, vocab_size: int, context: torch.Tensor, tokens: int, repeats: int,
                  draft: bool = False) -> list[float]:
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
    return times[1:]


def _median_pass(model, vocab_size: int, context: torch.Tensor, tokens: int, repeats: int,
                 draft: bool = False) -> float:
    return statistics.median(_timed_passes(model, vocab_size, context, tokens, repeats, draft))


def _timed_rounds(pair: ModelPair, context: torch.Tensor, k_max: int,
                  repeats: int) -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    """Rounds as a race runs them, for k = 1..k_max: a verify pass of k + 1 tokens, then k draft steps.
    Returns the seconds of each timed repeat (tokens in the pass -> [s], k -> [s of the k draft steps])."""
    ids = context.tolist()
    n_max = k_max + 1
    target = cached_model(pair.target, pair.vocab_size, positions=len(ids) + n_max + 1)
    greedy = SpecConfig(k=k_max, k_max=k_max)
    drafter = ModelDrafter(pair.draft, pair.vocab_size, greedy, make_generator(pair.device, 0),
                           positions=len(ids) + n_max + 1)
    try:
        target.feed(context, keep=1)
        drafter.lm.feed(context[:-1], keep=1)         # the draft lags by the token the last pass gave
        passes, rounds = {}, {}
        for k in range(1, k_max + 1):
            pass_times, draft_times = [], []
            for i in range(repeats + 1):
                new = context[i: i + k + 1].clone()   # any in-vocabulary ids: cost depends on the count only
                synchronize(pair.device)
                start = time.perf_counter()
                target.feed(new, keep=k + 1)          # the verify pass
                synchronize(pair.device)
                pass_times.append(time.perf_counter() - start)
                target.crop(len(ids))
                start = time.perf_counter()
                drafter.propose(ids, (1,) * k)         # feeds ids[-1] (catching up), then k steps
                synchronize(pair.device)
                draft_times.append(time.perf_counter() - start)
                drafter.lm.crop(len(ids) - 1)
            passes[k + 1] = pass_times[1:]
            rounds[k] = draft_times[1:]
    finally:
        target.release()
        drafter.release()
    return passes, rounds


@torch.inference_mode()
def measure_costs(pair: ModelPair, k_max: int, context: int = CONTEXT, repeats: int = REPEATS) -> MachineCosts:
    """Time plain steps, target passes of 2..k_max + 1 tokens, and a round's draft steps on this machine.
    With a draft model the passes are timed inside the rounds (each once, as a race runs them)."""
    ids = pair.tokenizer("The quick brown fox jumps over the lazy dog. " * 16)["input_ids"]
    ctx = torch.tensor(ids[:context], dtype=torch.long, device=pair.device)
    plains = _timed_passes(pair.target, pair.vocab_size, ctx, 1, repeats)
    draft, rounds = None, {}
    if pair.draft is not None and not pair.draft_reads_features:
        draft = _median_pass(pair.draft, pair.vocab_size, ctx, 1, repeats, draft=True)
        passes, rounds = _timed_rounds(pair, ctx, k_max, repeats)
    else:
        passes = {n: _timed_passes(pair.target, pair.vocab_size, ctx, n, repeats) for n in range(2, k_max + 2)}
    median = statistics.median
    return MachineCosts(plain_s=median(plains), draft_s=draft,
                        pass_s={1: median(plains), **{n: median(t) for n, t in passes.items()}},
                        threads=torch.get_num_threads(), round_draft_s={k: median(t) for k, t in rounds.items()},
                        pass_samples={n: tuple(t) for n, t in passes.items()},
                        round_samples={k: tuple(t) for k, t in rounds.items()})


def pick_k(a: float, costs: MachineCosts, k_range: tuple[int, int], priced_at: int | None = None) -> int:
    """The k in k_range (both ends included, within the measured passes) with the highest expected speedup,
    each k priced with its own c(k) and v(k); or, with `priced_at`, every k with that one k's c and v (the
    single-c, single-v formula the what-if chart draws)."""
    ks = [k for k in range(k_range[0], k_range[1] + 1) if k + 1 in costs.pass_s]
    price = (lambda k: (costs.c(k), costs.v(k))) if priced_at is None else (lambda k: (costs.c(priced_at),
                                                                                       costs.v(priced_at)))
    return max(ks, key=lambda k: expected_speedup(a, k, *price(k)))


@torch.inference_mode()
def measure_pass_v(pair: ModelPair, sizes, context: int = CONTEXT, repeats: int = REPEATS) -> dict[int, float]:
    """v(n) for each n in sizes: one eager target pass over n tokens after a cached context, in plain
    steps (one eager 1-token pass), as a token tree's verify pass runs (tree_pass.py: one pass
    over the uncached token and every node). Prices a tree of n - 1 nodes against a chain of n - 1 drafts."""
    ids = pair.tokenizer("The quick brown fox jumps over the lazy dog. " * 16)["input_ids"]
    ctx = torch.tensor(ids[:context], dtype=torch.long, device=pair.device)
    lm = CachedModel(pair.target, pair.vocab_size)

    def median_pass(n: int) -> float:
        times = []
        for i in range(repeats + 1):
            new = ctx[i % context: i % context + 1].repeat(n)      # any in-vocabulary ids: cost depends on the count
            synchronize(lm.device)
            start = time.perf_counter()
            lm.feed(new, keep=n)
            synchronize(lm.device)
            times.append(time.perf_counter() - start)
            lm.crop(context)
        return statistics.median(times[1:])

    lm.feed(ctx, keep=1)
    plain = median_pass(1)
    return {n: median_pass(n) / plain for n in sorted(set(sizes))}
