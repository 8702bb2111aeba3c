"""What a round costs here, as far as it has been measured: the one source of c, v(n) and their spread.

One `CostModel` is kept per (pair, device, decode path, machine). It holds samples, never a single
figure: the load-time calibration (calibrate.py) gives one sample per timed repeat of each size, and
every race or step-mode run adds its own measured c and v (measures.cost_ratio, measures.verify_ratio:
the lanes' step and pass times, in plain steps of the same race). A figure is then the median of its
samples with their range and their count; the range is the middle half of the samples (first to third
quartile) from QUARTILES_FROM samples on, so one stray timing among many does not make a figure noise,
and lowest to highest below that:

    c(k)   one draft step in a round of k drafts, in plain steps
    v(n)   one verify pass over n tokens (n = k + 1 for a chain at k; nodes + 1 for a tree), in plain steps

A step-mode run has no plain lane: its draft steps and passes are priced in the model's own plain step
(the median of the calibration's and every race's plain lane), so it refines c and v like a race.

A figure is *noise* when its own samples cannot tell it from nothing: a pass cheaper than one step
(v < 1: a pass over n >= 2 tokens does at least a step's work), a range wider than the value, or a
value at or below zero. It is *settled* when it is not noise and has at least MIN_SAMPLES samples.
Only settled figures advise a k or price a comparison; the others are shown with their range and
the page says how many more runs it needs ("two more races to say").

The k advice weighs E(a, k) / (k c(k) + v(k + 1)) (Leviathan et al. 2023, theory.py) at each k with
settled figures, and names every k whose best case (lowest c and v) reaches the best k's worst case
(highest c and v): those are within noise of the best, and the advice says the range, not one k.
It never names a k the formula expects to lose (below 1.0x at the median figures): where no k is
expected to gain, there is no advice, and the reason says so.

Samples a busy machine produced are dropped, not averaged in: a verify pass timed cheaper than one plain
step (impossible for a pass over two or more tokens), a draft step at or below zero, and a whole race
whose plain step strayed more than OFF_NEIGHBOURS times from the median plain step here (other programs
took the cores while it ran). `dropped` and `dropped_races` count them.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from ..metrics import measures as m
from ..metrics.theory import MIN_V, expected_speedup

ROUND_SLACK = 0.5      # a race's mean drafts a round counts as the nearest k (a short race's last round is cut)
MIN_SAMPLES = 3        # samples a figure needs before it advises or prices (one race is not a figure)
QUARTILES_FROM = 4     # from this many samples a figure's range is its middle half (quartiles), else all of them
OFF_NEIGHBOURS = 1.6   # a race whose plain step is this many times off the median plain step here is dropped
KEEP = 64              # the latest samples kept per figure: a server's figures follow the machine as it is now
WORDS = {1: "one", 2: "two", 3: "three"}


@dataclass(frozen=True)
class Figure:
    """One cost figure: the median of its samples, their range and count (value None: no sample yet)."""
    name: str                    # "c" or "v"
    size: int                    # k for c, n (tokens in the pass) for v
    value: float | None
    low: float | None
    high: float | None
    samples: int
    floor: float = 0.0           # the least a real figure can be (1 step for a pass over n >= 2 tokens)

    @property
    def noise(self) -> bool:
        """Inside its own noise: cheaper than it can be, or spread wider than the value."""
        if self.value is None:
            return False
        return (self.value < self.floor if self.floor else self.value <= 0) or (self.high - self.low) > self.value

    @property
    def settled(self) -> bool:
        return self.value is not None and not self.noise and self.samples >= MIN_SAMPLES

    def needs(self) -> int:
        """Runs still needed before this figure could be settled (0 when it has enough samples)."""
        return max(0, MIN_SAMPLES - self.samples)

    def text(self, fmt: str = ".2f") -> str:
        """"v = 1.48 (1.31-1.73, 5 runs)" or "v = 0.87 (0.52-1.90, 2 runs: timing noise)": the range is the
        middle half of the runs from QUARTILES_FROM runs on."""
        if self.value is None:
            return f"{self.name} unmeasured"
        spread = "" if self.samples < 2 else f"{format(self.low, fmt)}-{format(self.high, fmt)}, "
        label = "run" if self.samples == 1 else "runs"
        return (f"{self.name} = {format(self.value, fmt)} ({spread}{self.samples} {label}"
                f"{': timing noise' if self.noise else ''})")


    def words(self) -> str:
        """The figure in words, for pages that also show a race's own c and v: "a draft step typically
        0.050 plain steps here (0.04-0.06, 5 timings)", never "c = ..." beside this race's c."""
        what = "a draft step" if self.name == "c" else f"a verify pass of {self.size} tokens"
        if self.value is None:
            return f"{what}: not timed here yet"
        fmt = ".3f" if self.name == "c" else ".2f"
        spread = "" if self.samples < 2 else f"{format(self.low, fmt)}-{format(self.high, fmt)}, "
        label = "timing" if self.samples == 1 else "timings"
        return (f"{what} typically {format(self.value, fmt)} plain steps here ({spread}{self.samples} {label}"
                f"{': timing noise' if self.noise else ''})")


@dataclass(frozen=True)
class Advice:
    """The k the cost model offers, or why it offers none (k None, `reason` says what it still needs)."""
    k: int | None
    a: float
    expected: float | None              # E(a, k) / (k c + v) at the median figures
    within: tuple[int, int] | None      # the ks within noise of the best (both ends included)
    c: Figure | None
    v: Figure | None
    reason: str = ""


@dataclass
class CostModel:
    key: tuple[str, str, str, str]                       # (pair, device, decode path, machine)
    c_samples: dict[int, list[float]] = field(default_factory=dict)    # k -> samples of c(k)
    v_samples: dict[int, list[float]] = field(default_factory=dict)    # n -> samples of v(n)
    plain_samples: list[float] = field(default_factory=list)           # seconds of one plain target step
    runs: int = 0                                        # races and step-mode runs folded in
    dropped: int = 0                                     # samples dropped as a busy machine's
    dropped_races: int = 0                               # whole races dropped (their plain step far off)

    def seed(self, costs) -> None:
        """The load-time calibration (calibrate.MachineCosts): each timed repeat is one sample, each in
        plain steps of the calibration's median plain step."""
        for k, times in getattr(costs, "round_samples", {}).items():
            self._add("c", k, [s / (k * costs.plain_s) for s in times])
        for n, times in getattr(costs, "pass_samples", {}).items():
            if n > 1:
                self._add("v", n, [s / costs.plain_s for s in times])
        _keep(self.plain_samples, list(getattr(costs, "pass_samples", {}).get(1, ())) or [costs.plain_s])

    def add_run(self, c: float | None, v: float | None, k: int | None, n: int | None) -> None:
        """One race's or step run's measured c (at k drafts a round) and v (a pass over n tokens)."""
        if c is not None and k:
            self._add("c", k, [c])
        if v is not None and n:
            self._add("v", n, [v])
        self.runs += 1

    def _add(self, name: str, size: int, values: list[float]) -> None:
        """Samples of c(size) or v(size), less those no quiet machine gives (a pass under one step, a
        draft step at or below zero): a busy machine's, dropped rather than averaged in."""
        floor = MIN_V if name == "v" and size > 1 else 0.0
        kept = [x for x in values if (x >= floor if floor else x > 0)]
        self.dropped += len(values) - len(kept)
        if kept:
            _keep((self.c_samples if name == "c" else self.v_samples).setdefault(size, []), kept)

    def add_race(self, spec: m.LaneTally, plain: m.LaneTally, tree: bool = False) -> bool:
        """A finished race's own figures (`race_sample`), and its plain lane's seconds a step. False (nothing
        added) where its plain step is far off the median here: a busy machine's race, dropped."""
        if plain.tokens and plain.elapsed_s > 0:
            step = plain.elapsed_s / plain.tokens
            median = self.plain_step_s() if len(self.plain_samples) >= MIN_SAMPLES else None
            if median and not 1 / OFF_NEIGHBOURS <= step / median <= OFF_NEIGHBOURS:
                self.dropped_races += 1
                return False
            _keep(self.plain_samples, [step])
        self.add_run(*race_sample(spec, plain, tree))
        return True

    def plain_step_s(self) -> float | None:
        """Seconds of one plain target step here: the median of the calibration's and the races' plain lanes."""
        return statistics.median(self.plain_samples) if self.plain_samples else None

    def add_step_run(self, spec: m.LaneTally, tree: bool = False) -> bool:
        """A step-mode run (a speculative lane alone): its draft steps and passes priced in this model's
        plain step (`plain_step_s`), since it ran no plain lane of its own. False (nothing added) before
        any plain step was timed here."""
        plain = self.plain_step_s()
        if plain is None or spec.rounds == 0:
            return False
        per_round = m.drafts_per_round(spec)
        if per_round is None or round(per_round) < 1:
            return False
        k = round(per_round)
        c = spec.draft_s / spec.drafted / plain if spec.drafted and not tree else None
        self.add_run(c, spec.verify_s / spec.rounds / plain, None if tree else k, k + 1)
        return True

    def c(self, k: int) -> Figure:
        return _figure("c", k, self.c_samples.get(k, []), 0.0)

    def v(self, n: int) -> Figure:
        return _figure("v", n, self.v_samples.get(n, []), MIN_V if n > 1 else 0.0)

    def chain(self, k: int) -> tuple[Figure, Figure]:
        """A chain at k: (c(k), v(k + 1))."""
        return self.c(k), self.v(k + 1)

    def advise(self, a: float, k_range: tuple[int, int]) -> Advice:
        """The best k for acceptance a over k_range, with the ks within noise of it; none where no k's
        figures are settled (then `reason` says what is missing)."""
        ks = range(k_range[0], k_range[1] + 1)
        settled = [k for k in ks if all(f.settled for f in self.chain(k))]
        if not settled:
            return Advice(None, a, None, None, *self._unsettled(ks))
        best = max(settled, key=lambda k: expected_speedup(a, k, self.c(k).value, self.v(k + 1).value))
        c, v = self.chain(best)
        expected = expected_speedup(a, best, c.value, v.value)
        if expected < 1.0:          # never advise a k the formula expects to lose
            return Advice(None, a, None, None, c, v,
                          f"at the draft's usual a = {a:.2f} the formula expects no k from {ks[0]} to {ks[-1]} to "
                          f"gain here (the best, k = {best}, {expected:.2f}x)")
        worst_best = expected_speedup(a, best, self.c(best).high, self.v(best + 1).high)
        near = [k for k in settled if expected_speedup(a, k, self.c(k).low, self.v(k + 1).low) >= worst_best
                and expected_speedup(a, k, self.c(k).value, self.v(k + 1).value) >= 1.0]
        return Advice(best, a, expected, (min(near), max(near)), c, v)

    def _unsettled(self, ks) -> tuple[Figure | None, Figure | None, str]:
        """The figure nearest to settled (most samples) among the ks, and what it still needs."""
        figs = [f for k in ks for f in self.chain(k) if f.value is not None]
        if not figs:
            return None, None, "nothing measured here yet: one race to start with, three to say"
        f = max(figs, key=lambda f: (not f.noise, f.samples))
        pair = self.chain(f.size if f.name == "c" else f.size - 1)
        if f.noise or f.needs() == 0:
            return (*pair, f"the timings are inside their noise ({f.text()}): repeat the race on a quieter "
                           f"machine to say")
        more = f.needs()
        return (*pair, f"{WORDS.get(more, str(more))} more race{'s' if more > 1 else ''} to say")


def race_sample(spec: m.LaneTally, plain: m.LaneTally, tree: bool = False):
    """(c, v, k, n) a race measured: c at its k drafts a round, v over its pass's n = k + 1 tokens, k the
    mean drafts a round to the nearest whole number (the last round of a short race is cut by the token
    budget; a confidence stop or adaptive k spreads rounds around their mean, and c per draft step moves
    little with k). A token tree drafts one pass a depth, not one step a draft: it gives v(nodes + 1) only."""
    c, v = m.cost_ratio(spec, plain), m.verify_ratio(spec, plain)
    per_round = m.drafts_per_round(spec)
    if per_round is None or round(per_round) < 1:
        return None, None, None, None
    k = round(per_round)
    return (None if tree else c), v, (None if tree else k), k + 1


def _keep(samples: list[float], new: list[float]) -> None:
    samples.extend(new)
    del samples[:-KEEP]


def _figure(name: str, size: int, samples: list[float], floor: float) -> Figure:
    if not samples:
        return Figure(name, size, None, None, None, 0, floor)
    if len(samples) < QUARTILES_FROM:
        low, high = min(samples), max(samples)
    else:                                     # the middle half: one stray timing does not make a figure noise
        low, _, high = statistics.quantiles(samples, n=4, method="inclusive")
    return Figure(name, size, statistics.median(samples), low, high, len(samples), floor)
