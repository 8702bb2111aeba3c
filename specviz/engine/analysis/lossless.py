"""The lossless check: sample the next token many times *through speculative decoding* and
compare the histogram with the target's exact next-token probabilities.

Each sample is a fresh seeded speculative run whose first round drafts one token, so the
first output token is either that accepted draft or the target's correction: exactly the
step the acceptance rule must get right. Also reported: the draft's own distribution q (to
show the output follows p although the proposals follow q), the total-variation distance
to p, the distance sampling noise alone would give, and a chi-square p-value.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Iterator

import torch

from ..loop.config import SEED_MAX, SpecConfig
from ..loop.drafters import uses_draft_model
from ..loop.speculative import speculate
from ..loop.output import encode_prompt
from ...runtime.pair import ModelPair
from ..loop.sampling import warp


ALPHA = 0.01    # the verdict's significance level: a p-value below it says "not the target's distribution"


def verdict_line(p_value: float) -> str:
    """The check's one-line conclusion from the chi-square p-value: the one verdict the Lossless tab and
    the workshop's exercise both give."""
    if p_value >= ALPHA:
        return (f"Verdict: consistent with the target's distribution: p = {p_value:.3f} (a p-value below "
                f"{ALPHA:g} would say otherwise).")
    return (f"Verdict: not consistent with the target's distribution: p = {p_value:.3g}, below {ALPHA:g}. "
            f"Run it again with another seed: if it repeats, please report it.")


def draft_contrast(draft: float, noise: float, consistent: bool, final: bool, needed: int | None = None,
                   most: int | None = None) -> str:
    """The draft's own distance to the target, and only what it shows: "the output follows p" is said
    once the verdict is in and says so, and only where the draft is clearly farther than sampling noise;
    where it is not, how many samples would show it (`needed`; None: more than the `most` samples this
    server runs for the prompt). The Lossless tab and the workshop's exercise both say it."""
    head = f"For contrast, the draft's own distribution is {draft:.3f} away from the target's"
    if not final:
        return head + ": the proposals follow q; the verdict on the output comes with the last sample."
    if not consistent:
        return head + "."
    if draft < 2 * noise:
        if draft < 1e-9:
            return head + ": the draft proposes exactly the target's distribution, so there is no difference to show."
        # A lower temperature, not a higher one: heating spreads p over more tokens, and the noise of a
        # spread distribution grows faster than the two models' distance.
        limit = f"the {most}" if most is not None else "the samples"
        more = (f"about {needed} samples would" if needed is not None else
                f"more than {limit} this server runs for this prompt would be needed: try a prompt where "
                f"the draft guesses worse, or a lower temperature such as 0.5")
        return (head + f", within twice the sampling noise ({noise:.3f}): at this many samples the draft itself "
                f"would look about as close, so this run cannot show the difference; {more}.")
    return head + ": the proposals follow q, yet the output follows p."


def chi_square_pvalue(observed: list[int], expected_probs: list[float], min_expected: float = 5.0) -> float:
    """Goodness of fit without SciPy: chi2 survival = regularized upper gamma Q(df/2, x/2).
    Cells expected fewer than min_expected times are pooled into one."""
    n = sum(observed)
    cells, pooled_obs, pooled_exp = [], 0, 0.0
    for o, p in zip(observed, expected_probs):
        if n * p >= min_expected:
            cells.append((o, n * p))
        else:
            pooled_obs, pooled_exp = pooled_obs + o, pooled_exp + n * p
    if pooled_exp > 0:
        cells.append((pooled_obs, pooled_exp))
    if len(cells) < 2:
        return 1.0
    stat = sum((o - e) ** 2 / e for o, e in cells)
    return float(torch.special.gammaincc(torch.tensor((len(cells) - 1) / 2, dtype=torch.float64),
                                         torch.tensor(stat / 2, dtype=torch.float64)))


def expected_tv_noise(p: torch.Tensor, n: int) -> float:
    """Expected total variation between n samples' frequencies and p itself (no bias at all).

    Each count X_i is Binomial(n, p_i), and De Moivre's closed form gives its mean absolute
    deviation exactly: E|X - n p| = 2 (m + 1) C(n, m + 1) p^(m+1) (1 - p)^(n-m), m = floor(n p).
    So E[TV] = 1/2 sum_i E|X_i - n p_i| / n, which is at most 1 at every n (the normal
    approximation sqrt(2 p (1 - p) / (pi n)) is not: over a large vocabulary at small n it sums
    past 1, since a token with n p << 1 deviates by about 2 p, not by sqrt(p / n))."""
    n = max(1, int(n))
    p = p.double().clamp(0.0, 1.0)
    inside = (p > 0) & (p < 1)
    q = p[inside]
    m = torch.floor(n * q).clamp(max=n - 1)
    log_mad = (math.log(2.0) + torch.log(m + 1) + math.lgamma(n + 1) - torch.lgamma(m + 2) - torch.lgamma(n - m)
               + (m + 1) * torch.log(q) + (n - m) * torch.log1p(-q))
    return float(0.5 * torch.exp(log_mad).sum() / n)


def samples_to_separate(p: torch.Tensor, distance: float, step: int, most: int) -> int | None:
    """The fewest samples (a multiple of `step`, at most `most`) at which a distribution `distance` away
    from p lies beyond twice the noise alone, 2 E[TV](n) < distance; None where `most` is not enough.
    E[TV] falls with n (about as 1/sqrt(n) once every likely token is expected often), so a doubling
    then a bisection over multiples of `step` finds it in a few dozen evaluations."""
    separates = lambda n: 2 * expected_tv_noise(p, n) < distance      # noqa: E731
    top = most // step
    if distance <= 0 or top < 1 or not separates(top * step):
        return None
    lo, hi = 0, 1                   # in steps: separates(hi * step); not lo (0 samples never do)
    while hi < top and not separates(hi * step):
        lo, hi = hi, min(2 * hi, top)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if separates(mid * step) else (mid, hi)
    return hi * step


# The temperature a greedy setting is checked at. Sharper than T = 1, so the draft's own distance to the
# target stands out of the sampling noise within a few hundred samples: at T = 1, p spreads over more
# tokens and the noise grows faster than the distance (benchmarks/history/notes-2026-11.md has the sample
# counts on the page's examples). Any temperature shows the rule's exactness alike.
GREEDY_CHECK_TEMPERATURE = 0.7

# Sample i of a check with seed s draws with seed (s * SEED_STRIDE + i) mod 2^32: independent generators
# per sample; checks with seeds below 2^32 / SEED_STRIDE (4,294) share none of them (while samples <
# SEED_STRIDE), and larger seeds, wrapped, almost never do.
SEED_STRIDE = 1_000_003

@dataclass
class LosslessResult:
    counts: Counter            # first-token id -> times it came out of speculative decoding
    p: torch.Tensor            # the target's next-token probabilities (V,)
    q: torch.Tensor | None     # the draft's (V,), when the drafter is the draft model
    temperature: float

    @property
    def samples(self) -> int:
        return sum(self.counts.values())

    def tv_to_target(self) -> float:
        """Total variation between the observed frequencies and p."""
        n = self.samples
        freq = torch.zeros_like(self.p)
        for tok, c in self.counts.items():
            freq[tok] = c / n
        return 0.5 * float((freq - self.p).abs().sum())

    def tv_noise(self) -> float:
        """The distance sampling noise alone gives with this many samples: E[TV] = 1/2 sum_i E|f_i - p_i|."""
        return expected_tv_noise(self.p, self.samples)

    def tv_draft(self) -> float | None:
        return None if self.q is None else 0.5 * float((self.q - self.p).abs().sum())

    def p_value(self) -> float:
        ids = range(self.p.numel())
        return chi_square_pvalue([self.counts.get(i, 0) for i in ids], self.p.tolist())

    def consistent(self) -> bool:
        """Whether the samples pass the chi-square test against p at ALPHA."""
        return self.p_value() >= ALPHA


@torch.inference_mode()
def _next_token_probs(model, ids: list[int], vocab: int, cfg: SpecConfig, device) -> torch.Tensor:
    logits = model(input_ids=torch.tensor([ids], device=device), logits_to_keep=1).logits[0, -1, :vocab]
    return warp(logits, cfg).cpu()


def lossless_check(pair: ModelPair, prompt, cfg: SpecConfig, samples: int, report_every: int = 25) -> Iterator[LosslessResult]:
    """Yield the growing result every report_every samples, and once at the end."""
    if cfg.greedy:   # greedy output is one token; sampling is where the check means something
        cfg = replace(cfg, temperature=GREEDY_CHECK_TEMPERATURE)
    ids = encode_prompt(pair, prompt)
    one_round = replace(cfg, k=1, max_new_tokens=2, adaptive_k=False, stop_strings=())
    p = _next_token_probs(pair.target, ids, pair.vocab_size, cfg, pair.device)
    q = (_next_token_probs(pair.draft, ids, pair.vocab_size, cfg, pair.device)
         if uses_draft_model(cfg.drafter) and pair.draft is not None else None)
    result = LosslessResult(Counter(), p, q, cfg.temperature)
    for i in range(samples):
        seed = (cfg.seed * SEED_STRIDE + i) % (SEED_MAX + 1)     # distinct for i < SEED_STRIDE, within SpecConfig's range
        done = list(speculate(pair, ids, replace(one_round, seed=seed)))[-1]
        result.counts[done.token_ids[0]] += 1
        if (i + 1) % report_every == 0 or i + 1 == samples:
            yield result
