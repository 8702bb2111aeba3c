"""The k a loaded pair is offered with on this server: read from its cost model, not copied from another machine.

When a pair is loaded, the app times a few passes of it in a decoding slot (engine/analysis/calibrate.py:
plain steps, target passes of 2..k_max + 1 tokens, each k's draft steps in their place in a round) with
the threads it serves with; every timed repeat seeds the pair's cost model (engine/analysis/cost_model.py),
and every race with it adds its own c and v. The advice is the cost model's: the k with the highest
E(a, k) / (k c(k) + v(k + 1)) for the acceptance rate a the preset's draft reached on held-out prompts
(spaces.yaml `acceptance`, else the draft's expect.json pooled over chat and code: Preset.acceptance), with
the ks within noise of it. Where the figures are noise or too few, or where no k is expected to gain, there
is no advice: the line says why, and the preset's k stays, said to be not measured here. The line is a
prediction and says so: it names the cost model as "typical here" with its count, the a it assumes, and
where the pair's latest race accepted a clearly different share, that race's a beside it (never as the
advice's own).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..engine.analysis.cost_model import Advice, CostModel
from ..engine.metrics.theory import expected_speedup


SEEN_DIFFERS = 0.05     # a race's a this far from the assumed one is named beside the advice


@dataclass(frozen=True)
class KAdvice:
    advice: Advice
    model: CostModel
    source: str = "on held-out prompts"    # where the assumed a was measured (pair_expect.assumed_a_words)

    @property
    def k(self) -> int | None:
        """The k offered, or None where the figures cannot say (the preset's k stays)."""
        return self.advice.k

    @property
    def a(self) -> float:
        return self.advice.a

    @property
    def expected(self) -> float | None:
        return self.advice.expected

    @property
    def c(self) -> float | None:
        """A draft step at the advised k, in plain steps (the cost model's median)."""
        return self.advice.c.value if self.advice.c else None

    @property
    def v(self) -> float | None:
        """The verify pass at the advised k (k + 1 tokens), in plain steps (the cost model's median)."""
        return self.advice.v.value if self.advice.v else None

    def figures(self) -> str:
        """'c = 0.05 (0.04-0.06, 7 runs) and v = 1.31 (...) for a pass of 4 tokens', or ''."""
        c, v = self.advice.c, self.advice.v
        if c is None or v is None:
            return ""
        return f"{c.text('.3f')} and {v.text()} for a verify pass of {v.size} tokens"

    def flat_k(self, k_range: tuple[int, int]) -> int | None:
        """The best k with the advised k's one c and v at every k (what the what-if chart draws)."""
        if self.k is None:
            return None
        return max(range(k_range[0], k_range[1] + 1), key=lambda k: expected_speedup(self.a, k, self.c, self.v))

    def line(self, seen_a: float | None = None) -> str:
        """The advice as the k note: a prediction, named so. `seen_a`: the a the pair's latest race here
        accepted, said beside the assumed one where they differ by more than SEEN_DIFFERS."""
        seen = ""
        if seen_a is not None and abs(seen_a - self.a) > SEEN_DIFFERS:
            side = "above" if seen_a > self.a else "below"
            seen = (f" The latest race accepted a = {seen_a:.2f}, {side} the draft's usual {self.a:.2f}: "
                    f"with that a the best k may differ.")
        if self.k is None:
            figures = self.figures()
            return (f"No k advised for this machine yet: {self.advice.reason}"
                    f"{f' (typical here: {figures})' if figures else ''}. The pair's own k stays offered, not "
                    f"measured to pay here.{seen}")
        lo, hi = self.advice.within
        near = "" if lo == hi else f"; k = {lo} to {hi} are within its timing noise of it"
        runs = self.model.runs
        return (f"k = {self.k} suits this machine{near} (a prediction): typical here, across {runs} "
                f"race{'s' if runs != 1 else ''} and the timing at load, a draft step costs "
                f"{self.figures()}; assuming the draft's acceptance a = {self.a:.2f} ({self.source}), the formula "
                f"expects {self.expected:.2f}x.{seen}")

    def to_dict(self) -> dict:
        c, v = self.advice.c, self.advice.v
        return {"k": self.k, "a": self.a, "expected_speedup": self.expected, "within": self.advice.within,
                "reason": self.advice.reason,
                **{f.name: {"value": f.value, "low": f.low, "high": f.high, "samples": f.samples, "size": f.size}
                   for f in (c, v) if f is not None}}


def from_model(model: CostModel, a: float, k_range: tuple[int, int], source: str | None = None) -> KAdvice:
    """The model's advice for acceptance a; `source` says where a comes from (pair_expect.assumed_a_words)."""
    return KAdvice(model.advise(a, k_range), model, *([source] if source else []))


def advise(costs, a: float, k_range: tuple[int, int], key: tuple = ("", "", "", "")) -> KAdvice:
    """The advice of a cost model seeded from one calibration alone (calibrate.MachineCosts)."""
    model = CostModel(key)
    model.seed(costs)
    return from_model(model, a, k_range)
