"""Every measured number of specviz, each defined once, with its formula.

A lane's events fold into a `LaneTally` (counts and seconds). The engine folds its own events
into one to build `Done.stats` (a `LaneStats`: the tally and the lane's figures); the page folds
the events it receives into one per lane; the CLI and the benchmark read `Done.stats.tally`.
All of them then call the functions below, so the page, the CLI, the benchmark and the engine's
summary cannot disagree on a definition.

    acceptance rate     a = accepted / verified drafts = accepted / (accepted + rejected)
                        (drafts after the first rejection of a round are never verified)
    draft acceptance    a_d = accepted / drafted   (vLLM's "draft acceptance rate"; discarded drafts
                        count against it, so a_d <= a)
    conditional acceptance at draft position i (0-based)
                        a_i = P(accept at i | positions < i accepted) = accepted at i / judged at i
                        (a draft at i is judged only when every earlier one of its round was accepted)
    mean acceptance length  tau = tokens emitted / target passes (rounds), in [1, k + 1]: Spec-Bench's
                        "mean accepted tokens", vLLM's "mean acceptance length" (1 + accepted / drafts);
                        the two agree except for rounds a stop rule cut short or that drafted
                        nothing. docs/metrics.md names each engine's term for every figure here.
    tokens per round        = tokens emitted in full rounds / full rounds, where a round is
                        full when it drafted the k planned for it and no stop rule cut it:
                        the quantity Leviathan's E = (1 - a^(k+1)) / (1 - a) predicts
    rate                    = tokens / seconds on the lane's own clock
    speedup                 = rate(speculative) / rate(plain)   (a rate ratio: still right when
                        the lanes stop at different lengths, as EOS or sampling can make them)
    cost ratio          c = (seconds drafting / drafted tokens) / (seconds per plain token)
    verify ratio        v = (seconds verifying / rounds) / (seconds per plain token)
    theory speedup      S = E / (k c + v) with the measured v (engine/metrics/theory.py; v = 1 only as
                        theory.GPU_IDEAL_V, where a figure labels it GPU-ideal)

Several runs pool by adding their tallies (`pool`): a and tokens per round of a benchmark row or
a k sweep are those of the pooled tally, never recomputed by hand.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Mapping

TOKEN_KINDS = ("accepted", "resampled", "bonus", "target_token")   # events that add a token to the output


@dataclass
class LaneTally:
    rounds: int = 0
    drafted: int = 0
    accepted: int = 0
    rejected: int = 0             # verified drafts that failed (at most one a round)
    tokens: int = 0               # output tokens
    full_rounds: int = 0
    full_round_tokens: int = 0
    draft_s: float = 0.0          # seconds drafting, summed over rounds
    verify_s: float = 0.0         # seconds in target passes with acceptance, summed over rounds
    target_s: float = 0.0         # seconds in target forward passes (verify passes, or plain steps)
    accept_s: float = 0.0         # seconds in acceptance and sampling (speculative), sampling (plain)
    elapsed_s: float = 0.0        # the lane's clock at its latest event

    def add(self, event) -> None:
        kind = event.kind
        if kind in TOKEN_KINDS:
            self.tokens += 1
        if kind == "accepted":
            self.accepted += 1
        elif kind == "rejected":
            self.rejected += 1
        elif kind == "target_token":
            self.target_s += event.target_s
            self.accept_s += event.sample_s
        elif kind == "round_end":
            self.rounds += 1
            self.drafted += event.drafted
            self.draft_s += event.draft_s
            self.verify_s += event.verify_s
            self.target_s += event.target_s
            self.accept_s += event.accept_s
            if event.full:
                self.full_rounds += 1
                self.full_round_tokens += event.emitted
        self.elapsed_s = max(self.elapsed_s, event.t)

    @classmethod
    def from_stats(cls, stats: "LaneStats | Mapping") -> "LaneTally":
        """The tally a `Done.stats` was made from (a copy), or that a trace's stats record holds (a field
        an older trace lacks keeps its default)."""
        if isinstance(stats, LaneStats):
            return replace(stats.tally)
        return cls(**{f.name: stats.get(f.name, f.default) for f in fields(cls)})


def pool(tallies) -> LaneTally:
    """Several runs' tallies added up (counts and seconds): pooled a = sum accepted / sum verified."""
    total = LaneTally()
    for t in tallies:
        for f in fields(LaneTally):
            setattr(total, f.name, getattr(total, f.name) + getattr(t, f.name))
    return total


def acceptance_rate(t: LaneTally) -> float | None:
    verified = t.accepted + t.rejected
    return t.accepted / verified if verified else None


def draft_acceptance_rate(t: LaneTally) -> float | None:
    """a_d = accepted / drafted: vLLM's draft acceptance rate (discarded drafts count as not accepted)."""
    return t.accepted / t.drafted if t.drafted else None


def drafts_per_round(t: LaneTally) -> float | None:
    """The drafts a round actually made, on average: the setting k, or less where a stop rule, the
    length limit or a drafter with nothing to propose cut rounds short. The theory's k for a race."""
    return t.drafted / t.rounds if t.rounds else None


def kept_per_round(t: LaneTally) -> float | None:
    """Drafts kept per round (accepted / rounds, between 0 and k): what a better exact rule, such as
    block verification, raises for the same draft and target."""
    return t.accepted / t.rounds if t.rounds else None


def mean_acceptance_length(t: LaneTally) -> float | None:
    """tau = tokens emitted / target passes (one pass a round), between 1 and k + 1."""
    return t.tokens / t.rounds if t.rounds else None


@dataclass
class PositionTally:
    """Judged and accepted drafts at each draft position (0-based) of a lane's rounds."""
    judged: Counter = field(default_factory=Counter)
    accepted: Counter = field(default_factory=Counter)

    def add(self, event) -> None:
        if event.kind in ("accepted", "rejected"):
            self.judged[event.position] += 1
            self.accepted[event.position] += event.kind == "accepted"


@dataclass
class ChoiceTally:
    """Tree rounds: judged and accepted nodes by (depth, choice), depth 1 = a child of the round's root and
    choice its rank among its siblings (0 = the draft's first choice, 1 = its second, ...). How often the
    second choice is kept where the first was not is what a tree buys over a chain of the same depth."""
    judged: Counter = field(default_factory=Counter)
    accepted: Counter = field(default_factory=Counter)

    def add(self, event) -> None:
        if event.kind in ("accepted", "rejected") and getattr(event, "choice", None) is not None:
            key = (event.position + 1, event.choice)
            self.judged[key] += 1
            self.accepted[key] += event.kind == "accepted"

    def rows(self) -> list[dict]:
        """One row per (depth, choice) judged: counts and accepted / judged, depth first."""
        return [{"depth": d, "choice": c, "judged": n, "accepted": self.accepted[(d, c)],
                 "rate": self.accepted[(d, c)] / n} for (d, c), n in sorted(self.judged.items())]


def conditional_acceptance(judged: Mapping[int, int], accepted: Mapping[int, int]) -> dict[int, float]:
    """a_i = P(accept at position i | positions < i accepted) = accepted_i / judged_i, for every i judged."""
    return {i: accepted.get(i, 0) / n for i, n in sorted(judged.items()) if n}


def tokens_per_round(t: LaneTally) -> float | None:
    return t.full_round_tokens / t.full_rounds if t.full_rounds else None


def rate(tokens: int, seconds: float) -> float | None:
    return tokens / seconds if seconds > 0 and tokens else None


def speedup(fast_tokens: int, fast_s: float, slow_tokens: int, slow_s: float) -> float | None:
    fast, slow = rate(fast_tokens, fast_s), rate(slow_tokens, slow_s)
    return fast / slow if fast and slow else None


def lane_speedup(spec: LaneTally, base: LaneTally) -> float | None:
    return speedup(spec.tokens, spec.elapsed_s, base.tokens, base.elapsed_s)


def equal_length_speedup(spec_times, base_times) -> tuple[float | None, int]:
    """Like for like when the lanes wrote different lengths: over the first n tokens of each, n the
    shorter lane's count, the plain lane's clock at its n-th token over the speculative lane's.
    `*_times[i]`: the lane's clock when its i-th token came (index 0: 0.0, the start). Returns (speedup, n)."""
    n = min(len(spec_times), len(base_times)) - 1
    if n < 1 or spec_times[n] <= 0 or base_times[n] <= 0:
        return None, max(n, 0)
    return base_times[n] / spec_times[n], n


def compared_speedup(spec: LaneTally, base: LaneTally, spec_times=None, base_times=None) -> tuple[float | None, int | None]:
    """The race's speedup: the rate ratio on each lane's whole clock where both wrote as many tokens;
    else, given each token's time, `equal_length_speedup` over the shorter length (its n returned; None
    for the whole-clock figure). A sampled lane that ended its text at 87 tokens is not set against 128."""
    if spec.tokens == base.tokens or spec_times is None or base_times is None:
        return lane_speedup(spec, base), None
    return equal_length_speedup(spec_times, base_times)


def per_plain_step(seconds: float, count: int, plain_rate: float | None) -> float | None:
    """Seconds per step (seconds / count) in units of one plain decoding step (1 / plain_rate)."""
    return (seconds / count) * plain_rate if count and plain_rate else None


def cost_ratio(spec: LaneTally, base: LaneTally) -> float | None:
    """c: one draft step, in plain target steps."""
    return per_plain_step(spec.draft_s, spec.drafted, rate(base.tokens, base.elapsed_s))


def verify_ratio(spec: LaneTally, base: LaneTally) -> float | None:
    """v: one verify phase (target pass over k + 1 tokens, then acceptance), in plain target steps."""
    return per_plain_step(spec.verify_s, spec.rounds, rate(base.tokens, base.elapsed_s))


@dataclass(frozen=True)
class LaneStats:
    """What `Done.stats` carries: the lane's tally, the lane's own figures above, and how it decoded.

    `to_dict()` flattens it into the keys traces and the JSON API have always had (the tally's
    fields, then the figures, then the rest; `rule` and `rule_lossless` only on a speculative lane);
    `from_dict` reads such a record back, a key an older trace lacks keeping its default.
    """
    tally: LaneTally                              # counts and seconds; elapsed_s = the lane's clock at its end
    acceptance_rate: float | None = None          # a
    draft_acceptance_rate: float | None = None    # a_d
    mean_acceptance_length: float | None = None   # tau
    tokens_per_round: float | None = None         # over full rounds (Leviathan's E)
    tokens_per_s: float | None = None             # rate on the lane's own clock
    target_forwards: int = 0                      # target forward passes (one a round; one a plain token)
    draft_forwards: int = 0                       # draft model forward passes (0 for prompt lookup)
    # "eager", "CUDA graphs", "torch.compile" or "eager replay": the path the target's graph-eligible passes
    # take (a tree's verify pass over more than MAX_GRAPH_TOKENS runs eagerly under "CUDA graphs" too)
    decode_path: str = "eager"
    capture_s: float = 0.0                        # seconds this run spent capturing CUDA graphs
    graph_check_delta: float | None = None        # largest |replay - eager step| this run's graph checks found
    draft_path: str = ""                          # how the draft model stepped ("" without one): "eager" (transformers'
                                                  # forward), "lean eager, fp32 weights" / "..., int8 weights" (lean_draft.py), ...
    draft_format_by: str = ""                     # how the lean step's weights' format was chosen: "chosen by timing on
                                                  # this machine", "set by SPECVIZ_DRAFT_STEP=...", "fixed at fp32, as ..."
    rule: str | None = None                       # speculative lanes: the acceptance rule's name ("forced" when forced)
    rule_lossless: bool | None = None             # speculative lanes: does that rule keep the target's distribution?
    by_choice: list[dict] | None = None           # tree lanes: ChoiceTally.rows() (None for a chain)
    tree: list[int] | None = None                 # tree lanes: the shape, candidates per depth (None for a chain)
    tree_budget: int | None = None                # tree lanes: the dynamic tree's node budget (0: the static shape)

    @classmethod
    def of(cls, tally: LaneTally, **how) -> "LaneStats":
        """A finished lane's stats: its tally (copied), the figures computed from it, and `how` it decoded."""
        return cls(replace(tally), acceptance_rate(tally), draft_acceptance_rate(tally), mean_acceptance_length(tally),
                   tokens_per_round(tally), rate(tally.tokens, tally.elapsed_s), **how)

    def to_dict(self) -> dict:
        out = asdict(self.tally)
        for f in fields(self)[1:]:
            value = getattr(self, f.name)
            if not (f.name in ("rule", "rule_lossless", "by_choice", "tree", "tree_budget") and value is None):
                out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, record: Mapping) -> "LaneStats":
        return cls(LaneTally.from_stats(record), **{f.name: record.get(f.name, f.default)
                                                   for f in fields(cls)[1:]})
