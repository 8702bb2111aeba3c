"""Closed-form expectations of speculative decoding (Leviathan et al. 2023, sec. 3.3-3.4).

With acceptance rate a (each draft accepted independently with probability a), k drafts
per round and cost ratio c = (time of one draft step) / (time of one target step):
    expected tokens per round   E = (1 - a^(k+1)) / (1 - a)
    expected speedup            S = E / (k c + 1)
The "+ 1" prices the verify pass of k + 1 tokens like one target step, which holds while a
step is bound by reading the weights (a GPU at small batch). Where it is not (a small model on
a CPU), `v` = (time of a verify pass) / (time of a target step) replaces it: S_v = E / (k c + v).
Every caller passes v: the measured one (engine/metrics/measures.py's verify_ratio), or GPU_IDEAL_V where a
figure says it shows the GPU-ideal case. There is no default, so no number silently assumes v = 1.
A verify pass feeds k + 1 >= 2 tokens through the target, at least a plain step's work: a measured v
below 1 is timing noise (a plain step's clock also holds sampling and bookkeeping), and pricing it
there would promise more tokens per second than the rounds yield tokens per pass. So the formulas
price a pass at `priced_v(v)` = max(v, 1), and S never exceeds E.
    accepted drafts per round   P(i) = a^i (1 - a) for i < k, and a^k for i = k.

A token tree of width w at the first depth and a chain below each first token (shape w,1,...,1, depth k,
w k nodes; docs/trees.md): the first depth keeps one of its w guesses with A1 = 1 - (1 - a)(1 - a2)^(w-1),
a2 the chance a later guess is kept once the ones before it were rejected (the page's per-depth table
measures it), and below it the chain goes on as before: E = 1 + A1 (1 - a^k) / (1 - a). Its pass feeds
w k + 1 tokens: priced by stretching the chain's extra over one step, v(w) = 1 + (v - 1) w (a GPU's v = 1
stays 1); its draft steps at c each (one draft pass per depth feeds a depth's nodes together), which is
optimistic on a CPU, where a wider draft pass costs more.
"""
from __future__ import annotations

GPU_IDEAL_V = 1.0   # a verify pass of k + 1 tokens priced as one target step: the GPU-ideal case, labelled so
MIN_V = 1.0         # no verify pass costs less than one plain step (see above)


def priced_v(v: float) -> float:
    """The verify pass's price in plain steps: the measured v, never below one step."""
    return max(v, MIN_V)


def expected_tokens_per_round(a: float, k: int) -> float:
    if a >= 1.0:
        return k + 1.0
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def expected_speedup(a: float, k: int, c: float, v: float) -> float:
    """S = E / (k c + v): c and v in plain target steps (v priced at no less than one step)."""
    return expected_tokens_per_round(a, k) / (k * c + priced_v(v))


def expected_tokens_first_width(a: float, a2: float, w: int, k: int) -> float:
    """E of the tree w,1,...,1 (depth k) above: w = 1 is the chain's E."""
    first = 1.0 - (1.0 - a) * (1.0 - a2) ** (w - 1)
    below = float(k) if a >= 1.0 else (1.0 - a ** k) / (1.0 - a)
    return 1.0 + first * below


def expected_speedup_first_width(a: float, a2: float, w: int, k: int, c: float, v: float) -> float:
    """S of the tree w,1,...,1 (depth k): E / (k c + v(w)), v(w) = 1 + (v - 1) w as above."""
    return expected_tokens_first_width(a, a2, w, k) / (k * c + priced_v(1.0 + (priced_v(v) - 1.0) * w))


def accepted_pmf(a: float, k: int) -> list[float]:
    """P(i drafts accepted in a round), i = 0..k."""
    return [a ** i * (1.0 - a) for i in range(k)] + [a ** k]


def best_k(a: float, c: float, v: float, k_max: int = 16) -> int:
    """The k in 1..k_max with the highest expected speedup (v taken as the same for every k)."""
    return max(range(1, k_max + 1), key=lambda k: expected_speedup(a, k, c, v))


def break_even_acceptance(k: float, c: float, v: float) -> float | None:
    """The acceptance rate at which speculation neither gains nor loses: E(a, k) = k c + v.

    E rises from 1 (a = 0) to k + 1 (a -> 1), so the equation has one root when 1 < k c + v < k + 1;
    at or below 1 every a pays (0.0 is returned), at or above k + 1 none does (None). Solved by
    bisection (E is increasing in a); k may be a mean over rounds, hence a float.
    """
    cost = k * c + priced_v(v)
    if cost <= 1.0:
        return 0.0
    if cost >= k + 1:
        return None
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if expected_tokens_per_round(mid, k) < cost:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
