"""Is a server's speculative output still the target's? Two checks a client can make from the outside.

1. Tokens the target would almost never produce. vLLM reports each output token's log-probability under the
   target. A faithful sampler at temperature T <= 1 rarely emits a token the raw target gives less than
   e^-8 (1 in 3,000); a sampler that is not keeping the target's distribution (a broken rejection step,
   uninitialised temperatures) emits many. How many is "many" is not guessed: with the same weights here,
   one teacher-forced pass of the local target over the server's own output gives, position by position,
   the probability that the target's own sampler (the same temperature, top-k, top-p: sampling.warp) would
   have drawn such a token there; their sum is the expected count, and the observed count is compared with
   it as a Poisson tail. Without local weights, only the count and the logprobs are shown.
2. The same pass also gives the local target's logprob of every server token: equal to the server's within
   its arithmetic (bf16 on most servers), or the two do not run the same weights.
At temperature 0 the check is the argmax: each token must be the target's most likely one, except where the
local top two are closer than the server's arithmetic can tell apart.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..engine.loop.sampling import warp

UNLIKELY_LOGPROB = -8.0        # a token below this target logprob: one the target would almost never produce
VERDICT_P = 1e-6               # a Poisson tail below this: the output does not follow the target's law
GREEDY_MARGIN = 0.05           # local top-two logit gap below which a greedy mismatch is the server's rounding


@dataclass(frozen=True)
class Verdict:
    """What the check found; `lossless` is None when it could not tell (no logprobs, no local model)."""
    tokens: int
    unlikely: tuple[int, ...]          # indices of tokens below UNLIKELY_LOGPROB
    expected_unlikely: float | None    # how many the target's own sampler would give there (local pass)
    tail_p: float | None               # P(Poisson(expected) >= observed)
    greedy_mismatches: tuple[int, ...] = ()
    max_logprob_gap: float | None = None   # largest |server logprob - local logprob| over the tokens
    lossless: bool | None = None

    def sentence(self) -> str:
        """One plain line for the page and the terminal."""
        n = len(self.unlikely)
        if self.lossless is False and self.greedy_mismatches:
            return (f"NOT the target's output: {len(self.greedy_mismatches)} of {self.tokens} tokens are not the "
                    f"target's most likely token at temperature 0 (first at token {self.greedy_mismatches[0]}).")
        if self.lossless is False:
            return (f"NOT the target's distribution: {n} of {self.tokens} tokens are ones the target gives less "
                    f"than 1 in 3,000 (logprob < {UNLIKELY_LOGPROB:g}); its own sampler would give about "
                    f"{self.expected_unlikely:.1f} (chance {_chance(self.tail_p)}). The server's speculation is not lossless.")
        if self.lossless and self.tail_p is None:
            return f"Consistent with the target: each of the {self.tokens} tokens is the target's most likely one."
        if self.lossless:
            return (f"Consistent with the target: {n} of {self.tokens} tokens below logprob {UNLIKELY_LOGPROB:g}, "
                    f"about {self.expected_unlikely:.1f} expected from the target itself.")
        return (f"{n} of {self.tokens} tokens below logprob {UNLIKELY_LOGPROB:g} (no local copy of the target to "
                f"say how many its own sampler would give).")


def _chance(p: float) -> str:
    return "below 1e-12" if p < 1e-12 else f"{p:.0e}"


def poisson_tail(observed: int, expected: float) -> float:
    """P(X >= observed) for X ~ Poisson(expected), summed from the tail up (no cancellation when it is tiny)."""
    if observed <= 0:
        return 1.0
    expected = max(expected, 1e-12)
    term = lambda i: math.exp(-expected + i * math.log(expected) - math.lgamma(i + 1))    # noqa: E731
    if observed <= expected:
        return max(0.0, 1.0 - sum(term(i) for i in range(observed)))
    last = observed + int(10 * math.sqrt(expected) + 50)
    return min(1.0, sum(term(i) for i in range(observed, last)))


def unlikely(logprobs: list[float | None]) -> tuple[int, ...]:
    return tuple(i for i, lp in enumerate(logprobs) if lp is not None and lp < UNLIKELY_LOGPROB)


@torch.no_grad()
def local_pass(model, prompt_ids: list[int], output_ids: list[int], cfg) -> tuple[list[float], float, list[int]]:
    """One teacher-forced pass of the local target: each output token's raw logprob, the expected number of
    unlikely tokens under the target's own sampler (cfg's temperature, top-k, top-p), and the greedy
    mismatches (indices where the token is not the argmax by more than GREEDY_MARGIN)."""
    ids = torch.tensor([prompt_ids + output_ids], device=model.device)
    logits = model(ids).logits[0, len(prompt_ids) - 1:-1].float()      # the logits that chose each output token
    raw = torch.log_softmax(logits, dim=-1)
    out = torch.tensor(output_ids, device=logits.device)
    own = raw.gather(1, out[:, None])[:, 0]
    expected = 0.0
    mismatches: list[int] = []
    if cfg.greedy:
        top2 = logits.topk(2, dim=-1).values
        chosen = logits.gather(1, out[:, None])[:, 0]
        gap = top2[:, 0] - chosen
        close = (top2[:, 0] - top2[:, 1]) < GREEDY_MARGIN
        mismatches = [i for i in range(len(output_ids)) if gap[i] > 0 and not close[i]]
    else:
        probs = warp(logits, cfg)
        expected = float((probs * (raw < UNLIKELY_LOGPROB)).sum())
    return own.tolist(), expected, mismatches


def check(logprobs: list[float | None], local: tuple[list[float], float, list[int]] | None, greedy: bool) -> Verdict:
    """The verdict from the server's logprobs and, when there is one, the local pass."""
    low = unlikely(logprobs)
    if local is None:
        return Verdict(len(logprobs), low, None, None)
    own, expected, mismatches = local
    gaps = [abs(a - b) for a, b in zip(logprobs, own) if a is not None and math.isfinite(a)]
    gap = max(gaps) if gaps else None
    if greedy:
        return Verdict(len(logprobs), low, 0.0, None, tuple(mismatches), gap, lossless=not mismatches)
    tail = poisson_tail(len(low), expected)
    return Verdict(len(logprobs), low, expected, tail, (), gap, lossless=tail >= VERDICT_P)


def has_ids(completion) -> bool:
    """Whether the server returned the prompt's and every output token's ids (what the local pass reads)."""
    return bool(completion.prompt_ids) and None not in completion.token_ids


def verdict_of(completion, temperature: float, target=None) -> Verdict:
    """The check of one completion (remote/client.Completion) at its temperature: the logprob count, with the
    local pass of `target` (the same weights here) when one is given and the server returned token ids."""
    from ..engine.loop.config import SpecConfig
    cfg = SpecConfig(temperature=temperature)
    local = None
    if target is not None and has_ids(completion):
        local = local_pass(target, completion.prompt_ids, list(completion.token_ids), cfg)
    return check(completion.logprobs, local, cfg.greedy)
