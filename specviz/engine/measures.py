"""Every measured number of specviz, each defined once, with its formula.

A lane's events fold into a `LaneTally` (counts and seconds). The engine folds its own events
into one to build `Done.stats`; the page folds the events it receives into one per lane; the
CLI and the benchmark rebuild one from `Done.stats`. All of them then call the functions below,
so the page, the CLI, the benchmark and the engine's summary cannot disagree on a definition.

    acceptance rate     a = accepted / verified drafts = accepted / (accepted + rejected)
                        (drafts after the first rejection of a round are never verified)
    tokens per round        = tokens emitted in full rounds / full rounds, where a round is
                        full when it drafted the k planned for it and no stop rule cut it:
                        the quantity Leviathan's E = (1 - a^(k+1)) / (1 - a) predicts
    rate                    = tokens / seconds on the lane's own clock
    speedup                 = rate(speculative) / rate(plain)   (a rate ratio: still right when
                        the lanes stop at different lengths, as EOS or sampling can make them)
    cost ratio          c = (seconds drafting / drafted tokens) / (seconds per plain token)
    verify ratio        v = (seconds verifying / rounds) / (seconds per plain token)
    theory speedup      S = E / (k c + v) with the measured v (engine/theory.py; v = 1 only as
                        theory.GPU_IDEAL_V, where a figure labels it GPU-ideal)

Several runs pool by adding their tallies (`pool`): a and tokens per round of a benchmark row or
a k sweep are those of the pooled tally, never recomputed by hand.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

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
    elapsed_s: float = 0.0        # the lane's clock at its latest event

    def add(self, event) -> None:
        kind = event.kind
        if kind in TOKEN_KINDS:
            self.tokens += 1
        if kind == "accepted":
            self.accepted += 1
        elif kind == "rejected":
            self.rejected += 1
        elif kind == "round_end":
            self.rounds += 1
            self.drafted += event.drafted
            self.draft_s += event.draft_s
            self.verify_s += event.verify_s
            if event.full:
                self.full_rounds += 1
                self.full_round_tokens += event.emitted
        self.elapsed_s = max(self.elapsed_s, event.t)

    @classmethod
    def from_stats(cls, stats: dict) -> "LaneTally":
        """The tally a `Done.stats` dict was made from."""
        return cls(**{f.name: stats[f.name] for f in fields(cls)})


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


def tokens_per_round(t: LaneTally) -> float | None:
    return t.full_round_tokens / t.full_rounds if t.full_rounds else None


def rate(tokens: int, seconds: float) -> float | None:
    return tokens / seconds if seconds > 0 and tokens else None


def speedup(fast_tokens: int, fast_s: float, slow_tokens: int, slow_s: float) -> float | None:
    fast, slow = rate(fast_tokens, fast_s), rate(slow_tokens, slow_s)
    return fast / slow if fast and slow else None


def lane_speedup(spec: LaneTally, base: LaneTally) -> float | None:
    return speedup(spec.tokens, spec.elapsed_s, base.tokens, base.elapsed_s)


def per_plain_step(seconds: float, count: int, plain_rate: float | None) -> float | None:
    """Seconds per step (seconds / count) in units of one plain decoding step (1 / plain_rate)."""
    return (seconds / count) * plain_rate if count and plain_rate else None


def cost_ratio(spec: LaneTally, base: LaneTally) -> float | None:
    """c: one draft step, in plain target steps."""
    return per_plain_step(spec.draft_s, spec.drafted, rate(base.tokens, base.elapsed_s))


def verify_ratio(spec: LaneTally, base: LaneTally) -> float | None:
    """v: one verify phase (target pass over k + 1 tokens, then acceptance), in plain target steps."""
    return per_plain_step(spec.verify_s, spec.rounds, rate(base.tokens, base.elapsed_s))


def summary(t: LaneTally, **extra) -> dict:
    """What `Done.stats` carries: the tally itself, then the lane's own derived figures."""
    return {**asdict(t), "acceptance_rate": acceptance_rate(t), "tokens_per_round": tokens_per_round(t),
            "tokens_per_s": rate(t.tokens, t.elapsed_s), **extra}
