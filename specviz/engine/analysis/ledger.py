"""Why faster, why slower: one race's time ledger, the one record every line about that race prints.

Each lane's clock is split into what it spent its seconds on (measured per round by the
lanes' phase marks, timing.py), and the race's figures are set against the break-even point
of speculative decoding at this race's own prices:

    speculative lane   draft steps | target passes (verify) | acceptance and sampling | everything else
    plain lane                       target passes           | sampling                | everything else

"Everything else" is the lane's clock minus its measured phases: cache crops, detokenizing,
building events. With a the acceptance rate, k the drafts per round, c a draft step and v a
verify pass, both in plain steps of this race's own plain lane (measures.py), a round costs k c + v
plain steps and yields E(a, k) = (1 - a^(k+1)) / (1 - a) tokens on average (theory.py). Speculation
pays when E(a, k) > k c + v: the break-even acceptance is the a where the two are equal.

Every figure here is this race's: a, c, v, tokens per pass, the formula's speedup and the measured
one. The headline, the why, the stats strip, the box under the panes, the trace, the CLI and the bench
print this one record, so a symbol means one thing wherever it is read. The pair's cost model (what
races on this machine typically cost, cost_model.py) is a prediction for the next race: it is carried
beside the record as `typical`, under its own name and count, and never replaces a figure nor moves the
verdict. The verdict compares the lanes' measured times with an interval from this race's own timings
(verdict.py, race_spread.py). A pass this race timed cheaper than a plain step is disturbed timing: then
nothing is priced (no formula, no break-even) and the why says so instead of stating a break-even.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..metrics import measures as m
from ..metrics.theory import MIN_V, break_even_acceptance, expected_speedup, expected_tokens_per_round, priced_v
from .cost_model import MIN_SAMPLES, ROUND_SLACK
from . import race_spread
from .verdict import EVEN_BAND, verdict as _verdict

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
    """One race's record: every figure this race's own (the `typical` dict alone is across races)."""
    spec: LaneLedger
    plain: LaneLedger
    k: float                       # drafts per round actually made (mean; the setting unless cut short)
    a: float | None                # acceptance rate, accepted / judged
    tau: float | None              # tokens per target pass in the speculative lane
    c: float | None                # one draft step, in this race's plain steps
    v: float | None                # one verify pass (with acceptance), in this race's plain steps
    speedup: float | None          # measured: speculative tok/s over plain tok/s
    theory: float | None           # E(a, k) / (k c + v) with these a, c and v (None: not priced)
    break_even_a: float | None     # speculation pays above this a (None: not priced, or no a pays: see priced)
    verdict: str                   # "faster", "about even", "slower" or "unmeasured"
    cause: str                     # the why: one plain sentence, then the formula's
    uncertain: str = ""            # "" or what qualifies the verdict (a wide interval, a busy machine)
    priced: bool = False           # a, c and v were measured and trusted: theory and break-even stand
    interval: tuple | None = None  # (low, high) of the speedup from this race's own timings (race_spread.py)
    plain_words: str = ""          # the why's first, plain sentence alone
    typical: dict | None = None    # across races (the cost model, a prediction): k, c, v, their ranges, samples

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Ledger":
        """The ledger a trace or a benchmark result saved with `to_dict` (keys of older records dropped)."""
        known = set(cls.__dataclass_fields__)
        d = {key: value for key, value in d.items() if key in known}
        return cls(**{**d, "spec": LaneLedger(**d["spec"]), "plain": LaneLedger(**d["plain"]),
                      **({"interval": tuple(d["interval"])} if d.get("interval") is not None else {})})

    @property
    def no_a_pays(self) -> bool:
        """Priced, and a round costs more than the k + 1 tokens it can give: no acceptance rate pays."""
        return self.priced and self.break_even_a is None


def lane_ledger(t: m.LaneTally) -> LaneLedger:
    measured = t.draft_s + t.target_s + t.accept_s
    return LaneLedger(total_s=t.elapsed_s, draft_s=t.draft_s, target_s=t.target_s, accept_s=t.accept_s,
                      other_s=max(0.0, t.elapsed_s - measured), tokens=t.tokens,
                      target_passes=t.rounds if t.rounds else t.tokens)   # the plain lane: one pass a token


def typical(model, k: float) -> dict | None:
    """What races of this pair typically cost here at the nearest whole k (the cost model's medians, ranges
    and counts): a prediction, shown under its own name, never one of this race's figures."""
    if model is None or not k or abs(k - round(k)) > ROUND_SLACK or round(k) < 1:
        return None
    c_fig, v_fig = model.chain(round(k))
    if max(c_fig.samples, v_fig.samples) < MIN_SAMPLES:      # one or two timings are no "typical"
        return None
    out = {"k": round(k), "runs": getattr(model, "runs", 0)}
    for f in (c_fig, v_fig):
        out.update({f.name: f.value, f"{f.name}_low": f.low, f"{f.name}_high": f.high,
                    f"{f.name}_samples": f.samples, f"{f.name}_settled": f.settled})
    return out


def typical_words(t: dict | None) -> str:
    """The cost model in words, named as across races so it never reads as this race's c or v:
    "typical here at k = 3, across 12 timings: a draft step 0.050 plain steps, a verify pass 1.62"."""
    if not t:
        return ""
    parts = []
    if t.get("c") is not None:
        parts.append(f"a draft step {t['c']:.3f} plain steps ({t['c_samples']} timings)")
    if t.get("v") is not None:
        parts.append(f"a verify pass {t['v']:.2f} plain steps ({t['v_samples']} timings)")
    return f"typical here at k = {t['k']}, across races (a prediction for the next one): " + ", ".join(parts)


def build(spec: m.LaneTally, plain: m.LaneTally, model=None, busy: str = "",
          speedup: float | None = None, interval: tuple | None = None,
          source: str = "this race's own timings") -> Ledger:
    """The ledger of a finished race (or of a benchmark's pooled tallies), from its own two lanes.
    `model`: the pair's cost model, carried only as `typical` (never a figure of this race); `busy`: ""
    or why the machine was not quiet; `speedup`: the race's like-for-like figure where the lanes wrote
    different lengths (measures.compared_speedup), instead of the whole lanes' rate ratio; `interval`:
    (low, high) of the speedup from this race's own timings (race_spread.py; a repeat's range), `source`
    saying which where the why gives it."""
    a, c, v = m.acceptance_rate(spec), m.cost_ratio(spec, plain), m.verify_ratio(spec, plain)
    k = m.drafts_per_round(spec) or 0.0
    speedup = speedup if speedup is not None else m.lane_speedup(spec, plain)
    disturbed = v is not None and v < MIN_V and spec.verify_s > 0
    # No theory for a round that measured no time at all (a trace without phase timings), nor from a pass
    # this race timed cheaper than one plain step (a pass over k + 1 >= 2 tokens cannot be: disturbed).
    priced = None not in (a, c, v) and k > 0 and k * c + v > 0 and not disturbed
    theory = expected_speedup(a, k, c, v) if priced else None
    even = break_even_acceptance(k, c, v) if priced else None
    tau = m.mean_acceptance_length(spec)
    spec_l, plain_l = lane_ledger(spec), lane_ledger(plain)
    verdict, uncertain = _verdict(speedup, interval, busy, source)
    plain_words = _plain(a, tau, k, c, v, speedup, priced)
    if disturbed and a is not None and speedup is not None:
        reason = (f"This race timed a verify pass at v = {v:.2f} plain steps, less than one step, which a pass over "
                  f"more than one token cannot cost: its timings were disturbed, so no formula or break-even is "
                  f"priced from them.")
    elif not priced:
        reason = ("Not enough of a race to tell: no draft was judged, or one lane made no tokens." if a is None
                  or speedup is None else "No formula: this race timed no draft steps or verify passes (a record "
                  "without phase timings), so nothing is priced.")
    else:
        reason = _cause(verdict, speedup, a, k, c, v, tau, even, theory, spec_l)
    cause = " ".join(x for x in (plain_words, reason, uncertain) if x)
    return Ledger(spec=spec_l, plain=plain_l, k=k, a=a, tau=tau, c=c, v=v, speedup=speedup, theory=theory,
                  break_even_a=even, verdict=verdict, cause=cause, uncertain=uncertain, priced=priced,
                  interval=tuple(interval) if interval is not None else None, plain_words=plain_words,
                  typical=typical(model, k))


def race_tallies(stats) -> tuple[m.LaneTally, m.LaneTally]:
    """Each lane's (spec, plain) tally: the engine's own (Done.stats), else the fold of the events."""
    out = []
    for lane in ("spec", "base"):
        done = stats.done.get(lane)
        try:
            out.append(m.LaneTally.from_stats(done) if done else stats.tallies[lane])
        except (KeyError, TypeError):
            out.append(stats.tallies[lane])
    return out[0], out[1]


def of_race(stats, model=None, busy: str = "", tallies=None) -> Ledger:
    """The ledger of a race folded into an engine/analysis/stats.RunStats (the page and the CLI alike):
    its speedup like for like, its interval from its own rounds and plain steps. `tallies`: the lanes'
    (spec, plain) tallies where the caller has the engine's own (Done.stats), else the fold's."""
    spec, plain = tallies if tallies is not None else (stats.tallies["spec"], stats.tallies["base"])
    speedup, over = stats.compared()
    whole = speedup if over is not None else m.lane_speedup(spec, plain)
    return build(spec, plain, model, busy, speedup if over is not None else None,
                 race_spread.of_stats(stats, whole))


def _plain(a, tau, k, c, v, speedup, priced) -> str:
    """The why's first sentence, for a class: how often the draft was right, what a round cost and gave,
    and what the race ran ("" where nothing was judged)."""
    if a is None or tau is None or speedup is None:
        return ""
    hits = round(10 * a)
    guessed = (f"The draft guessed right {hits} time{'' if hits == 1 else 's'} in 10" if hits else
               "The draft almost never guessed right")
    if not priced:
        return f"{guessed}; each target pass gave {tau:.1f} tokens, and speculation ran {speedup:.2f}x."
    cost = k * c + v
    gives = tau / cost
    ran = (f"so speculation ran {speedup:.2f}x" if abs(gives - speedup) <= 0.1 * speedup else
           f"{gives:.2f}x in the model passes alone; the lanes' clocks measured {speedup:.2f}x, the difference being "
           f"time outside the passes")
    return f"{guessed}; each round cost {cost:.1f} plain steps and gave {tau:.1f} tokens, {ran}."


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
    if verdict == "faster" and even is not None:
        return (f"In the formula: {_kept(a)}, so each target pass gave {tau:.2f} tokens while "
                f"{price}; at these prices speculation pays above a = {even:.2f}, and E(a, k) / (k c + v) "
                f"gives {theory:.2f}x." if tau is not None and theory is not None else
                f"In the formula: {_kept(a)} and {price}.")
    # Slower or even: name the biggest reason.
    if k * c >= v and c >= SLOW_DRAFT_C:
        # The draft itself is the main cost (tiny models on a GPU: a step costs launches, whatever its size).
        pays = f"speculation would pay here above a = {even:.2f}" if even is not None else "no acceptance rate pays"
        return (f"The main cause: the draft is too slow next to its target: one draft step costs "
                f"c = {c:.2f} plain steps, so {price}; {_kept(a)} and {pays}.")
    if even is None:
        return (f"In the formula: {price}, more than the {k + 1:.3g} tokens a round can ever yield, so no "
                f"acceptance rate pays at this k: try a smaller k.")
    if a < even:
        return (f"The main cause: {_kept(a, 'only ')} and {price}; at these prices "
                f"speculation pays above a = {even:.2f}.")
    if theory is not None and theory < 1 + EVEN_BAND:
        return (f"The main cause: {_kept(a)}, about the break-even a = {even:.2f} "
                f"for this k at these prices, where {price}; the formula predicts {theory:.2f}x.")
    # The acceptance clears the break-even and the formula predicts a gain, yet the race did not gain.
    # The formula assumes a's hits spread evenly over rounds; the tokens the passes actually gave say
    # whether the rounds themselves fell short, before any time outside the passes is blamed.
    gives = tau / cost if tau is not None and cost > 0 else None
    if gives is not None and gives < 1 + EVEN_BAND:
        return (f"The main cause: {_kept(a)}, above the break-even a = {even:.2f}, "
                f"but each target pass gave only {tau:.2f} tokens, fewer than the {expected_tokens_per_round(a, k):.2f} "
                f"the formula expects from that a (hits and misses did not spread evenly over the rounds), "
                f"while {price}: {gives:.2f}x at most.")
    # The rounds would have gained: what the race lost went outside the passes (their share, measured).
    outside = (spec.accept_s + spec.other_s) / spec.total_s if spec.total_s else 0.0
    rounds = f"each target pass gave {tau:.2f} tokens while {price}, {gives:.2f}x before anything else, but " \
        if gives is not None else "but "
    return (f"The main cause: {_kept(a)}, above the break-even a = {even:.2f}; "
            f"{rounds}{_pct(outside)} of the speculative lane's time went outside the model passes (acceptance, "
            f"sampling, detokenizing, cache crops, events, or a machine busy with other work).")


def lone_lane_words(tally: m.LaneTally) -> str:
    """A speculative lane run alone (step mode) in the record's words: its a and tau, this run's own, by
    the functions the ledger uses. No c or v: they price a step in plain steps, and no plain lane ran beside
    it to time one (the pair's cost model, a prediction across races, is not this run's and is not shown)."""
    a, tau = m.acceptance_rate(tally), m.mean_acceptance_length(tally)
    judged = tally.accepted + tally.rejected
    kept = ("no draft was judged" if a is None else
            f"{_kept(a)} (a = {a:.2f}: {tally.accepted} of {judged})")
    gave = "" if tau is None else (f", and a target pass gave tau = {tau:.2f} tokens on average ({tally.tokens} "
                                   f"tokens in {tally.rounds} passes)")
    return (f"This run: {kept}{gave}. Its c and v (a draft step and a verify pass, in plain steps) need a plain "
            f"lane timed beside it: the Race tab measures them for its race.")


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

    even = ("not priced" if not led.priced else "none at this k" if led.no_a_pays else fmt(led.break_even_a))
    spread = (f" (interval {led.interval[0]:.2f}-{led.interval[1]:.2f}x)" if led.interval else "")
    lines = [f"why: {led.cause}", lane("speculative", led.spec), lane("plain", led.plain),
             f"  this race: a = {fmt(led.a)} (accepted / judged), tau = {fmt(led.tau)} tokens a pass, {k_label(led.k)}, "
             f"c = {fmt(led.c, '.3f')}, v = {fmt(led.v)}; break-even a = {even}; "
             f"formula E/(k c + v) = {fmt(led.theory)}x, measured {fmt(led.speedup)}x{spread}"]
    return lines + ([f"  {typical_words(led.typical)}"] if led.typical else [])
