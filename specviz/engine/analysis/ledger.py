"""Why faster, why slower: one race's time ledger and the sentence that names its main cause.

Each lane's clock is split into what it spent its seconds on (measured per round by the
lanes' phase marks, timing.py), and the race's figures are set against the break-even point
of speculative decoding on this machine:

    speculative lane   draft steps | target passes (verify) | acceptance and sampling | everything else
    plain lane                       target passes           | sampling                | everything else

"Everything else" is the lane's clock minus its measured phases: cache crops, detokenizing,
building events. With a the acceptance rate, k the drafts per round, c a draft step and v a
verify pass, both in plain steps (measures.py), a round costs k c + v plain steps and yields
E(a, k) = (1 - a^(k+1)) / (1 - a) tokens on average (theory.py). Speculation pays when
E(a, k) > k c + v: the break-even acceptance is the a where the two are equal.

The verdict never calls a loss a win: below 1.0x the ledger says "slower" and names the cause
(the draft guessed too rarely for what a round costs here, or time went outside the passes).

c and v are the pair's cost model's (cost_model.py: the median of the load-time timing and every race,
this one included) where a model is given, with their range; else this race's own. A figure inside its
noise is shown with its range and prices nothing: no formula, no break-even. And one race is one draw:
a speedup inside the timings' spread, or a race on a machine busy with other work, is never called
"slower" (it reads "about even"), and a "faster" one there says to repeat it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..metrics import measures as m
from ..metrics.theory import MIN_V, break_even_acceptance, expected_speedup, expected_tokens_per_round, priced_v
from .cost_model import ROUND_SLACK
from .verdict import EVEN_BAND, figure_range as _range, spread as _spread, verdict as _verdict

SLOW_DRAFT_C = 0.3    # a draft step above 0.3 plain steps is named as the cause when drafting outweighs verifying


@dataclass(frozen=True)
class LaneLedger:
    """Seconds one lane spent, by phase (every field in seconds but the counts)."""
    total_s: float
    draft_s: float           # draft model steps (0 in the plain lane)
    target_s: float          # target forward passes: verify passes, or plain steps
    accept_s: float          # acceptance and sampling (speculative), sampling (plain)
    other_s: float           # the rest of the lane's clock
    tokens: int
    target_passes: int


@dataclass(frozen=True)
class Ledger:
    spec: LaneLedger
    plain: LaneLedger
    k: float                       # drafts per round actually made (mean; the setting unless cut short)
    a: float | None                # acceptance rate, accepted / judged
    tau: float | None              # tokens per target pass in the speculative lane
    c: float | None                # one draft step, in plain steps
    v: float | None                # one verify pass (with acceptance), in plain steps
    speedup: float | None          # measured: speculative tok/s over plain tok/s
    theory: float | None           # E(a, k) / (k c + v) with these a, c and v
    break_even_a: float | None     # speculation pays above this a here (None: at no a, with this k, c, v)
    verdict: str                   # "faster", "about even", "slower" or "unmeasured"
    cause: str                     # one plain sentence: why
    c_range: tuple | None = None   # (low, high, samples) of c in the cost model (None: this race's own)
    v_range: tuple | None = None   # (low, high, samples) of v in the cost model
    uncertain: str = ""            # "" or why this one race's verdict may not hold (busy, spread)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Ledger":
        """The ledger a trace or a benchmark result saved with `to_dict`."""
        return cls(**{**d, "spec": LaneLedger(**d["spec"]), "plain": LaneLedger(**d["plain"]),
                      **{r: tuple(d[r]) for r in ("c_range", "v_range") if d.get(r) is not None}})


def lane_ledger(t: m.LaneTally) -> LaneLedger:
    measured = t.draft_s + t.target_s + t.accept_s
    return LaneLedger(total_s=t.elapsed_s, draft_s=t.draft_s, target_s=t.target_s, accept_s=t.accept_s,
                      other_s=max(0.0, t.elapsed_s - measured), tokens=t.tokens,
                      target_passes=t.rounds if t.rounds else t.tokens)   # the plain lane: one pass a token


def build(spec: m.LaneTally, plain: m.LaneTally, model=None, busy: str = "",
          speedup: float | None = None) -> Ledger:
    """The ledger of a finished race (or of a benchmark's pooled tallies). `model`: the pair's cost model
    (cost_model.CostModel) with this race already in it; `busy`: "" or why the machine was not quiet;
    `speedup`: the race's like-for-like figure where the lanes wrote different lengths
    (measures.compared_speedup), instead of the whole lanes' rate ratio."""
    a, c, v = m.acceptance_rate(spec), m.cost_ratio(spec, plain), m.verify_ratio(spec, plain)
    k = m.drafts_per_round(spec) or 0.0
    c_fig = v_fig = None
    if model is not None and k > 0 and abs(k - round(k)) <= ROUND_SLACK:
        c_fig, v_fig = model.chain(round(k))
        c = c_fig.value if c_fig.value is not None else c
        v = v_fig.value if v_fig.value is not None else v
    noise = [f for f in (c_fig, v_fig) if f is not None and f.noise] or ([] if v is None or v >= MIN_V else [None])
    speedup = speedup if speedup is not None else m.lane_speedup(spec, plain)
    # No theory for a round that measured no time at all (a trace without phase timings), nor from noise.
    priced = None not in (a, c, v) and k > 0 and k * c + v > 0 and not noise
    theory = expected_speedup(a, k, c, v) if priced else None
    even = break_even_acceptance(k, c, v) if priced else None
    tau = m.mean_acceptance_length(spec)
    spec_l, plain_l = lane_ledger(spec), lane_ledger(plain)
    spread = _spread(v_fig)
    verdict, uncertain = _verdict(speedup, spread, busy)
    if noise and None not in (a, c, v) and speedup is not None:
        cause = _noise_cause(verdict, a, k, c, v, c_fig, v_fig)
    else:
        cause = _cause(verdict, speedup, a, k, c, v, tau, even, theory, spec_l)
    if uncertain:
        cause = f"{cause} {uncertain}"
    return Ledger(spec=spec_l, plain=plain_l, k=k, a=a, tau=tau, c=c, v=v, speedup=speedup, theory=theory,
                  break_even_a=even, verdict=verdict, cause=cause, c_range=_range(c_fig), v_range=_range(v_fig),
                  uncertain=uncertain)


def _noise_cause(verdict, a, k, c, v, c_fig, v_fig) -> str:
    """The sentence where c or v is inside its noise: the figures with their range, and nothing priced."""
    figs = " and ".join(f.text(".3f" if f.name == "c" else ".2f") for f in (c_fig, v_fig) if f is not None) or \
        f"v = {v:.2f} measured, less than one plain step"
    return (f"{verdict.capitalize()}: {_kept(a)}, at {k_label(k)}; what a round costs here is still inside its "
            f"timing noise ({figs}), so no formula or break-even is priced from it: repeat the race to say.")


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _kept(a: float, only: str = "") -> str:
    """a in words, as the strip defines it: of the drafts the target judged, the share it kept (not of
    every draft made: those after a rejection are never judged, and a_d counts them)."""
    return f"the target accepted {only}{_pct(a)} of the drafts it judged"


def _is_setting(k: float) -> bool:
    """A ledger's k is the mean drafts a round made: a whole number is the setting itself; anything
    else means some rounds were cut short (the confidence stop, the end of the run)."""
    return float(k).is_integer()


def k_label(k: float) -> str:
    """How a ledger names its k: `k = 3`, or `2.94 drafts a round` where rounds were cut short
    (the mean is what the formula used; it is not a setting anyone chose)."""
    return f"k = {k:g}" if _is_setting(k) else f"{k:.3g} drafts a round"


def _cause(verdict, speedup, a, k, c, v, tau, even, theory, spec: LaneLedger) -> str:
    if verdict == "unmeasured" or None in (a, c, v):
        return "Not enough of a race to tell: no draft was judged, or one lane made no tokens."
    drafts = f"a round of k = {k:g} drafts" if _is_setting(k) else f"a round ({k:.3g} drafts on average)"
    cost = k * c + priced_v(v)           # a round, in plain steps
    # Each ingredient named with its own value: "2.86 × c = 0.14" read as c = 0.14 beside a strip saying 0.050.
    pass_price = (f"v = {v:.2f}" if v == priced_v(v) else
                  f"v = {v:.2f} measured, priced at {priced_v(v):.2f} since a pass does at least a step's work")
    price = (f"{drafts} cost {cost:.2f} plain steps ({k:.3g} draft steps at c = {c:.3f} each, then a verify pass "
             f"at {pass_price})")
    if verdict == "faster":
        return (f"Faster: {_kept(a)}, so each target pass gave {tau:.2f} tokens while "
                f"{price}; here speculation pays above a = {even:.2f}." if tau is not None and even is not None else
                f"Faster: {_kept(a)} and {price}.")
    # Slower or even: name the biggest reason.
    if k * c >= v and c >= SLOW_DRAFT_C:
        # The draft itself is the main cost (tiny models on a GPU: a step costs launches, whatever its size).
        pays = f"speculation would pay here above a = {even:.2f}" if even is not None else "no acceptance rate pays"
        return (f"{verdict.capitalize()}: the draft is too slow next to its target: one draft step costs "
                f"c = {c:.2f} plain steps, so {price}; {_kept(a)} and {pays}.")
    if even is None:
        return (f"{verdict.capitalize()}: {price}, more than the {k + 1:.3g} tokens a round can ever yield, so no "
                f"acceptance rate pays at this k: try a smaller k.")
    if a < even:
        return (f"{verdict.capitalize()}: {_kept(a, 'only ')} and {price}; on this machine "
                f"speculation pays above a = {even:.2f}.")
    if theory is not None and theory < 1 + EVEN_BAND:
        return (f"{verdict.capitalize()}: {_kept(a)}, about the break-even a = {even:.2f} "
                f"for this k on this machine, where {price}; the formula predicts {theory:.2f}x.")
    # The acceptance clears the break-even and the formula predicts a gain, yet the race did not gain.
    # The formula assumes a's hits spread evenly over rounds; the tokens the passes actually gave say
    # whether the rounds themselves fell short, before any time outside the passes is blamed.
    gives = tau / cost if tau is not None and cost > 0 else None
    if gives is not None and gives < 1 + EVEN_BAND:
        return (f"{verdict.capitalize()}: {_kept(a)}, above the break-even a = {even:.2f}, "
                f"but each target pass gave only {tau:.2f} tokens, fewer than the {expected_tokens_per_round(a, k):.2f} "
                f"the formula expects from that a (hits and misses did not spread evenly over the rounds), "
                f"while {price}: {gives:.2f}x at most.")
    # The rounds would have gained: what the race lost went outside the passes (their share, measured).
    outside = (spec.accept_s + spec.other_s) / spec.total_s if spec.total_s else 0.0
    rounds = f"each target pass gave {tau:.2f} tokens while {price}, {gives:.2f}x before anything else, but " \
        if gives is not None else "but "
    return (f"{verdict.capitalize()}: {_kept(a)}, above the break-even a = {even:.2f}; "
            f"{rounds}{_pct(outside)} of the speculative lane's time went outside the model passes (acceptance, "
            f"sampling, detokenizing, cache crops, events, or a machine busy with other work).")


def text_lines(led: Ledger) -> list[str]:
    """The ledger as plain lines (the CLI and the benchmark table): the verdict and its cause, then
    where each lane's seconds went and the figures the verdict rests on."""
    def lane(name: str, part) -> str:
        total = part.total_s or 1.0
        cells = [("draft steps", part.draft_s), ("target passes", part.target_s),
                 ("acceptance and sampling" if name == "speculative" else "sampling", part.accept_s),
                 ("everything else", part.other_s)]
        shown = ", ".join(f"{label} {s:.2f} s ({100 * s / total:.0f}%)" for label, s in cells if label != "draft steps"
                          or part.draft_s)
        return f"  {name:<12} {part.total_s:.2f} s for {part.tokens} tokens in {part.target_passes} target passes: {shown}"

    def fmt(x, spec=".2f"):
        return "-" if x is None else format(x, spec)

    return [f"why: {led.cause}", lane("speculative", led.spec), lane("plain", led.plain),
            f"  a = {fmt(led.a)} (accepted / judged), tau = {fmt(led.tau)} tokens a pass, {k_label(led.k)}, "
            f"c = {fmt(led.c, '.3f')}, v = {fmt(led.v)}; break-even a here = {fmt(led.break_even_a)}; "
            f"formula E/(k c + v) = {fmt(led.theory)}x, measured {fmt(led.speedup)}x"]
