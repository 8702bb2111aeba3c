"""Acceptance rules side by side: pure functions over one position's p (target), q (draft) and draft x.

The engine's default is the exact rule (Leviathan et al. 2023), whose two formulas are written
here once: `ratio_accept_prob` and `residual`. acceptance.py judges every round through the rule
the config names, the exact one included. The other rules exist so a run can show what they trade. Each rule gives, row by row over (..., V) distributions and (...) drafted ids:
    accept_prob(p, q, x)         the probability the draft x is kept
    correction(p, q, x)          the distribution the emitted token is drawn from when x is not kept
    expected_acceptance(p, q)    sum_x q(x) accept_prob(p, q, x), in closed form
The bonus token after k accepted drafts is the target's own sample from p under every rule.

    exact         keep x with min(1, p/q); else draw from norm(max(0, p - q)).   lossless
                  E = sum_x min(p(x), q(x)) = 1 - TV(p, q)
    sample_match  keep x iff x == y for the target's own sample y ~ p; else emit y.   lossless
                  E = sum_x p(x) q(x). Run as its equivalent: keep x with probability p(x), else
                  draw from p with x removed (the law of y given y != x), so a uniform u decides it.
    greedy_match  keep x iff x == argmax p; else emit argmax p. At temperature 0 this is the
                  exact rule (the engine's "argmax" verdicts); when sampling it is lossy: the
                  output collapses onto argmax p.   E = q(argmax p)
    typical       Medusa's typical acceptance (Cai et al. 2024, sec. 3.3.1), as vLLM's
                  TypicalAcceptanceSampler: keep x iff p(x) > min(epsilon, delta exp(-H(p)));
                  else emit the target's own sample y ~ p (vLLM's recovered token). Lossy.
                  E = sum of q(x) over x with p(x) > threshold. vLLM's defaults: epsilon
                  (posterior_threshold) 0.09, delta (posterior_alpha) 0.3. H is in nats; vLLM adds
                  1e-5 inside its log, here 0 log 0 = 0.
    ensemble      static ensemble verification (transformers' assistant_ensemble_weight, from
                  DIVERSED): the exact rule judged against the mix m = w p + (1 - w) q instead of p, so the
                  output follows m, not p. Lossy for w < 1.   E = sum_x min(m(x), q(x)).
                  As in transformers, w weighs the TARGET (w = 1 is the exact rule).
    block         block verification (Sun et al., ICLR 2025): a chain's drafts judged jointly, the
                  longest prefix whose joint test passes is kept (formulas in block.py). Lossless,
                  and keeps at least as many drafts as exact in expectation. At one position it IS
                  the exact rule (the methods below, which the rules tab's first-position law reads);
                  `joint` tells the judge to run the block form on a chain. Chains only.

A rule is named by a string: "exact", "block", "sample_match", "greedy_match", "typical", "ensemble",
or with parameters "typical(epsilon=0.05,delta=0.2)", "ensemble(w=0.3)". `get_rule(name)`
parses it; `Rule.name` is the canonical form that configs, events and Done.stats record.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import torch

from ...errors import ConfigError

DEFAULT = "exact"


def ratio_accept_prob(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """min(1, p(x) / q(x)): the probability the exact rule keeps draft x (q(x) > 0 since x ~ q)."""
    return torch.clamp(p_x / q_x, max=1.0)


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(0, p - q)) row by row over (..., V): where the exact rule draws after a rejection.
    It has mass whenever a rejection is possible (p(x) < q(x) implies some p(y) > q(y)); a row
    with no mass (p == q) falls back to p."""
    res = torch.clamp(p - q, min=0.0)
    mass = res.sum(-1, keepdim=True)
    return torch.where(mass > 0, res / mass.clamp_min(1e-30), p)


def _at(dist: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """dist(x) row by row: (..., V), (...) -> (...)."""
    return dist.gather(-1, x.unsqueeze(-1)).squeeze(-1)


@dataclass(frozen=True)
class Exact:
    family = "exact"
    lossless = True
    joint = False         # True: the judge tests a chain's drafts together (block.py), not one by one
    description = "keep x with probability min(1, p/q); on rejection draw from norm(max(0, p - q))"

    @property
    def name(self) -> str:
        return self.family

    def accept_prob(self, p, q, x):
        return ratio_accept_prob(_at(p, x), _at(q, x))

    def correction(self, p, q, x):
        return residual(p, q)

    def expected_acceptance(self, p, q):
        return torch.minimum(p, q).sum(-1)


@dataclass(frozen=True)
class Block(Exact):
    family = "block"
    lossless = True
    joint = True
    description = ("judge the drafted block jointly: keep the longest prefix whose joint test passes, "
                   "resample from the block's residual (Sun et al. 2025)")


@dataclass(frozen=True)
class SampleMatch(Exact):
    family = "sample_match"
    lossless = True
    description = "keep x only if it equals the target's own sample y ~ p; otherwise emit y"

    def accept_prob(self, p, q, x):
        return _at(p, x)

    def correction(self, p, q, x):
        # y ~ p given y != x: norm(max(0, p - p(x) e_x)), the exact residual against p's mass on x
        return residual(p, p * torch.nn.functional.one_hot(x, p.size(-1)).to(p.dtype))

    def expected_acceptance(self, p, q):
        return (p * q).sum(-1)


@dataclass(frozen=True)
class GreedyMatch(Exact):
    family = "greedy_match"
    lossless = False      # lossless only at temperature 0, where the engine's exact rule is this match
    description = "keep x only if it is the target's most likely token; otherwise emit that token"

    def accept_prob(self, p, q, x):
        return (x == p.argmax(-1)).to(p.dtype)

    def correction(self, p, q, x):
        return torch.nn.functional.one_hot(p.argmax(-1), p.size(-1)).to(p.dtype)

    def expected_acceptance(self, p, q):
        return _at(q, p.argmax(-1))


@dataclass(frozen=True)
class Typical(Exact):
    epsilon: float = 0.09     # vLLM posterior_threshold
    delta: float = 0.3        # vLLM posterior_alpha
    family = "typical"
    lossless = False
    description = "keep x if p(x) > min(epsilon, delta exp(-H(p))) (Medusa, vLLM); otherwise emit a sample of p"

    @property
    def name(self) -> str:
        return f"typical(epsilon={self.epsilon:g},delta={self.delta:g})"

    def threshold(self, p):
        """min(epsilon, delta exp(-H(p))) per row, H in nats."""
        entropy = torch.special.entr(p).sum(-1)
        return torch.clamp(self.delta * torch.exp(-entropy), max=self.epsilon)

    def accept_prob(self, p, q, x):
        return (_at(p, x) > self.threshold(p)).to(p.dtype)

    def correction(self, p, q, x):
        return p

    def expected_acceptance(self, p, q):
        return (q * (p > self.threshold(p).unsqueeze(-1))).sum(-1)


@dataclass(frozen=True)
class Ensemble(Exact):
    w: float = 0.5            # weight of the target in the mix m = w p + (1 - w) q
    family = "ensemble"
    lossless = False
    description = "the exact rule judged against the mix m = w p + (1 - w) q (transformers' assistant_ensemble_weight)"

    @property
    def name(self) -> str:
        return f"ensemble(w={self.w:g})"

    def mix(self, p, q):
        return self.w * p + (1 - self.w) * q

    def accept_prob(self, p, q, x):
        return super().accept_prob(self.mix(p, q), q, x)

    def correction(self, p, q, x):
        return residual(self.mix(p, q), q)

    def expected_acceptance(self, p, q):
        return super().expected_acceptance(self.mix(p, q), q)


Rule = Exact   # every rule has Exact's interface


@dataclass(frozen=True)
class RuleEntry:
    """One registered rule: its class, the instance the rules tab compares, and how its bars are drawn.
    The lossless rules share the greens (the page's colour for "keeps p"); sample_match's and block's
    bars are hatched, as their greens alone sit too close to exact's to tell the bars apart."""
    cls: type
    shown: str             # the name (with parameters) the rules tab races
    colour: str            # its bars' colour (CSS hex)
    pattern: str = ""      # its bars' hatching (plotly marker pattern; "" = solid)


# The one list of rules: config validation, the rules tab and its chart all read it.
REGISTRY = {entry.cls.family: entry for entry in (
    RuleEntry(Exact, "exact", "#1b7f5b"),
    RuleEntry(Block, "block", "#4caf7d", "x"),
    RuleEntry(SampleMatch, "sample_match", "#2f9e77", "/"),
    RuleEntry(GreedyMatch, "greedy_match", "#c0392b"),
    RuleEntry(Typical, "typical", "#d9822b"),
    RuleEntry(Ensemble, "ensemble(w=0.5)", "#8e44ad"),
)}
FAMILIES = {family: entry.cls for family, entry in REGISTRY.items()}
# parameter -> (low, high, high allowed): typical's in (0, 1]; ensemble's w in (0, 1) as in transformers (1 = exact)
PARAMS = {"typical": {"epsilon": (0.0, 1.0, True), "delta": (0.0, 1.0, True)}, "ensemble": {"w": (0.0, 1.0, False)}}
_NAME = re.compile(r"^\s*([a-z_]+)\s*(?:\((.*)\))?\s*$")


def get_rule(name: str) -> Rule:
    """The rule a name stands for: a family, optionally with parameters, e.g. "ensemble(w=0.3)"."""
    if not isinstance(name, str):
        raise ConfigError(f"rule must be a name such as 'exact', not {name!r}")
    return _parse(name)


@functools.lru_cache(maxsize=64)      # the engine asks once a round
def _parse(name: str) -> Rule:
    m = _NAME.match(name)
    if not m or m.group(1) not in FAMILIES:
        raise ConfigError(f"rule must be one of {', '.join(FAMILIES)} (parameters as in 'ensemble(w=0.3)'), not {name!r}")
    family, args = m.group(1), (m.group(2) or "").strip()
    allowed, params = PARAMS.get(family, {}), {}
    for part in filter(None, (a.strip() for a in args.split(","))):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in allowed:
            raise ConfigError(f"rule {family} takes {', '.join(allowed) or 'no parameters'}, not {key!r}")
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(f"rule parameter {key} must be a number, not {value.strip()!r}") from None
        lo, hi, closed = allowed[key]
        if not (math.isfinite(number) and lo < number and (number <= hi if closed else number < hi)):
            raise ConfigError(f"rule parameter {key} must be in ({lo:g}, {hi:g}{']' if closed else ')'}, not {value.strip()}")
        params[key] = number
    return FAMILIES[family](**params)


def describe(name: str) -> dict:
    """What a view shows about a rule: its canonical name, family, lossless flag and one line."""
    rule = get_rule(name)
    return {"name": rule.name, "family": rule.family, "lossless": rule.lossless, "description": rule.description}


def output_distribution(rule: Rule, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """The exact law of the token one position emits, x ~ q judged by rule: (V,), (V,) -> (V,).
        out = sum_x q(x) [a(x) e_x + (1 - a(x)) correction_x]; equal to p for a lossless rule."""
    vocab = p.numel()
    x = torch.arange(vocab)
    rows_p, rows_q = p.expand(vocab, vocab), q.expand(vocab, vocab)      # row x: judging draft x
    a = rule.accept_prob(rows_p, rows_q, x)                              # (V,)
    kept = q * a
    return kept + ((q * (1 - a)).unsqueeze(-1) * rule.correction(rows_p, rows_q, x)).sum(0)


def simulate(rule: Rule, p: torch.Tensor, q: torch.Tensor, n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """n independent one-position trials, vectorized: draft x ~ q, keep it if u < accept_prob, else draw
    from the correction. Returns (emitted tokens (n,), kept (n,) bool)."""
    x = torch.multinomial(q, n, replacement=True, generator=gen)
    rows_p, rows_q = p.expand(n, -1), q.expand(n, -1)
    kept = torch.rand(n, generator=gen) < rule.accept_prob(rows_p, rows_q, x)
    fallback = torch.multinomial(rule.correction(rows_p, rows_q, x), 1, generator=gen).squeeze(-1)
    return torch.where(kept, x, fallback), kept
