"""Running totals of a lane and the summary dict that `Done.stats` carries."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Totals:
    rounds: int = 0
    drafted: int = 0
    accepted: int = 0
    tokens: int = 0
    target_forwards: int = 0
    draft_forwards: int = 0

    def add_round(self, drafted: int, accepted: int, emitted: int) -> None:
        self.rounds += 1
        self.drafted += drafted
        self.accepted += accepted
        self.tokens += emitted

    def summary(self, elapsed_s: float) -> dict:
        return {
            "rounds": self.rounds,
            "drafted": self.drafted,
            "accepted": self.accepted,
            "acceptance_rate": self.accepted / self.drafted if self.drafted else None,
            "mean_tokens_per_round": self.tokens / self.rounds if self.rounds else None,
            "tokens": self.tokens,
            "target_forwards": self.target_forwards,
            "draft_forwards": self.draft_forwards,
            "elapsed_s": elapsed_s,
            "tokens_per_s": self.tokens / elapsed_s if elapsed_s > 0 else None,
        }
