"""Running totals of a lane and the summary dict that `Done.stats` carries."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Totals:
    rounds: int = 0
    drafted: int = 0
    accepted: int = 0
    rejected: int = 0       # drafts verified and rejected (at most one a round)
    tokens: int = 0
    target_forwards: int = 0
    draft_forwards: int = 0
    full_rounds: int = 0      # rounds that drafted the full k and were not cut short by a stop rule
    full_round_tokens: int = 0
    draft_s: float = 0.0      # seconds drafting, summed over rounds
    verify_s: float = 0.0     # seconds in target passes with acceptance, summed over rounds

    def add_round(self, drafted: int, accepted: int, emitted: int, rejected: int = 0) -> None:
        self.rounds += 1
        self.drafted += drafted
        self.accepted += accepted
        self.rejected += rejected
        self.tokens += emitted

    def summary(self, elapsed_s: float) -> dict:
        return {
            "rounds": self.rounds,
            "drafted": self.drafted,
            "accepted": self.accepted,
            "rejected": self.rejected,
            # The theory's a: accepted / verified drafts (drafts after a rejection are never verified).
            "acceptance_rate": self.accepted / verified if (verified := self.accepted + self.rejected) else None,
            "accepted_per_drafted": self.accepted / self.drafted if self.drafted else None,
            "mean_tokens_per_round": self.tokens / self.rounds if self.rounds else None,
            # Comparable with the theory's (1 - a^(k+1)) / (1 - a): full rounds only.
            "full_rounds": self.full_rounds,
            "full_round_tokens": self.full_round_tokens,
            "mean_tokens_per_full_round": self.full_round_tokens / self.full_rounds if self.full_rounds else None,
            "tokens": self.tokens,
            "target_forwards": self.target_forwards,
            "draft_forwards": self.draft_forwards,
            "draft_s": self.draft_s,
            "verify_s": self.verify_s,
            "elapsed_s": elapsed_s,
            "tokens_per_s": self.tokens / elapsed_s if elapsed_s > 0 else None,
        }
