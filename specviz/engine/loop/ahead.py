"""Drafting the next round before this round's events are built: the device drafts while the host builds.

After a round's one host read (the verdict) the host knows every token the round will commit: the
accepted path's drafts and the correction or bonus. Building the round's events from them (pieces,
pictures, residual tops) is host work of a millisecond or two; on CUDA the device would idle through it.
So `Rounds.step` launches the next round's draft from those tokens first (the kernels are queued and the
host goes on) and builds the events while the device drafts. Nothing the output depends on moves: the
drafter and the run's random generator see the very calls, in the very order, of drafting after the
events (building events draws nothing and touches no model), so greedy and seeded sampled runs give the
same tokens and the same events, timestamps aside.

The draft ahead is made only when the next round is certain to draft from exactly those tokens: the
round adds them all (no EOS among them; the length rules leave room for a draft after them). Two things
it cannot foresee end the run instead: a stop string completed by one of the tokens, and Stop (the
lane's cancel). Then the draft ahead is never judged, and its forward passes are the only trace
(`Done.stats.draft_forwards` counts them; at most one round's a run).

`SPECVIZ_DRAFT_AHEAD`: `auto` (default) drafts ahead on CUDA only, where the device runs behind the
host; on the CPU the draft would run before the events either way, a reordering with nothing to gain;
`on` drafts ahead on every device (the tests prove the ordering and the exactness on the CPU with it);
`off` never.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from ...errors import ConfigError
from .proposal import Proposal
from ...runtime.timing import PhaseMarks

ENV = "SPECVIZ_DRAFT_AHEAD"
CHOICES = ("auto", "on", "off")


def drafts_ahead(device: torch.device) -> bool:
    """Whether a lane on `device` drafts the next round before building this round's events."""
    choice = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if choice not in CHOICES:
        raise ConfigError(f"{ENV} must be one of {', '.join(CHOICES)}, not {choice[:40]!r}")
    return choice == "on" or (choice == "auto" and device.type == "cuda")


def committed(verdict) -> list[int]:
    """The tokens a round commits when no stop rule cuts it: the accepted path's drafts, in order, then
    the correction or the bonus (commit_round appends exactly these)."""
    return [verdict.tokens[node] for node in verdict.path] + [verdict.next_token]


@dataclass
class Ahead:
    """A round's draft made during the previous round: the sequence it drafted from, the widths it was
    asked for, its proposal, and its phase marks (opened before the draft, marked after it; the round
    resumes them when it runs, so the time between is charged to no phase)."""
    ids: list[int]
    widths: tuple[int, ...]
    proposal: Proposal
    phases: PhaseMarks

    def take(self, ids: list[int], widths: tuple[int, ...]) -> tuple[Proposal, PhaseMarks]:
        """The proposal for a round about to draft from `ids` with `widths`: this one, which was drafted
        from them. Anything else is a bug in the round (the drafter's cache and the random generator
        already moved past this draft), so it fails loudly rather than decoding on."""
        if ids != self.ids or tuple(widths) != tuple(self.widths):
            raise RuntimeError("the draft made ahead was for another sequence than the round's: "
                               f"{len(self.ids)} ids and widths {self.widths}, not {len(ids)} and {tuple(widths)}")
        self.phases.resume()
        return self.proposal, self.phases
