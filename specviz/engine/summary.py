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
            # The theory's a: accepted / verified drafts (drafts after a rejection are never verified).
            "acceptance_rate": self.accepted / verified if (verified := self.accepted + self.rejected) else None,
            "accepted_per_drafted": self.accepted / self.drafted if self.drafted else None,
            "mean_tokens_per_round": self.tokens / self.rounds if self.rounds else None,
            "tokens": self.tokens,
            "target_forwards": self.target_forwards,
            "draft_forwards": self.draft_forwards,
            "elapsed_s": elapsed_s,
            "tokens_per_s": self.tokens / elapsed_s if elapsed_s > 0 else None,
        }
