"""Closed-form expectations of speculative decoding (Leviathan et al. 2023, sec. 3.3-3.4).

With acceptance rate a (each draft accepted independently with probability a), k drafts
per round and cost ratio c = (time of one draft step) / (time of one target step):
    expected tokens per round   E = (1 - a^(k+1)) / (1 - a)
    expected speedup            S = E / (k c + 1)
The "+ 1" prices the verify pass of k + 1 tokens like one target step, which holds while a
step is bound by reading the weights (a GPU at small batch). Where it is not (a small model on
a CPU), `v` = (time of a verify pass) / (time of a target step) replaces it: S_v = E / (k c + v).
    accepted drafts per round   P(i) = a^i (1 - a) for i < k, and a^k for i = k.
"""
from __future__ import annotations


def expected_tokens_per_round(a: float, k: int) -> float:
    if a >= 1.0:
        return k + 1.0
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def expected_speedup(a: float, k: int, c: float, v: float = 1.0) -> float:
    return expected_tokens_per_round(a, k) / (k * c + v)


def accepted_pmf(a: float, k: int) -> list[float]:
    """P(i drafts accepted in a round), i = 0..k."""
    return [a ** i * (1.0 - a) for i in range(k)] + [a ** k]


def best_k(a: float, c: float, k_max: int = 16, v: float = 1.0) -> int:
    """The k in 1..k_max with the highest expected speedup (v taken as the same for every k)."""
    return max(range(1, k_max + 1), key=lambda k: expected_speedup(a, k, c, v))
