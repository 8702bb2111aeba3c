"""One vLLM completion's tokens and its per-request speculative metrics, turned into rounds and token fates.

What a client sees of a server's speculation (vLLM's `--per-request-spec-decode-metrics detailed`): for
each verify step, how many drafts it proposed (`per_step_drafted`) and how many of them the target kept
(`per_step_accepted`), plus every output token with the target's logprob. From that alone each token's
fate follows, in order: the first token comes from the prefill (the target's own, before any draft); then
each step emits its accepted drafts and one token of the target's own, a *correction* when a draft was
rejected (accepted < drafted) or a *bonus* when all were kept. The rejected drafts themselves (which tokens,
with what draft probability, and the uniform draws) never leave the server: a round knows its rejections
only as a count (`ServerRound.rejected`), and nothing here makes them up.

When the recorded steps do not account for every token (n-gram drafting does not record the steps that
proposed nothing; a router may drop the metrics), no fate is assigned: every token is `unexplained` and
`Fates.why` says why. The last step may be cut short by max_tokens, EOS or a stop string: its tokens are
then fewer than accepted + 1.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

FATES = ("first", "accepted", "correction", "bonus", "unexplained")
Fate = Literal["first", "accepted", "correction", "bonus", "unexplained"]


@dataclass(frozen=True)
class ServerToken:
    """One output token as the server reported it, with its fate in the round that produced it."""
    index: int                      # position in the output, 0-based
    piece: str                      # its text, as the server streamed it
    token_id: int | None            # None when the server did not return token ids
    logprob: float | None           # the target's log-probability of it (vLLM returns the target's)
    fate: Fate
    round: int | None = None        # the verify step (1-based) that emitted it; None for the first or unexplained

    def __post_init__(self):
        if self.fate not in FATES:
            raise ValueError(f"ServerToken.fate must be one of {FATES}, not {self.fate!r}")
        if self.index < 0 or (self.round is not None and self.round < 1):
            raise ValueError(f"ServerToken: index {self.index} and round {self.round} must be >= 0 and >= 1")


@dataclass(frozen=True)
class ServerRound:
    """One verify step of the server: drafts proposed, drafts kept, and the tokens it emitted."""
    round: int
    drafted: int
    accepted: int
    tokens: tuple[ServerToken, ...] = field(default_factory=tuple)

    def __post_init__(self):
        if not 0 <= self.accepted <= self.drafted:
            raise ValueError(f"ServerRound {self.round}: {self.accepted} accepted of {self.drafted} drafted")
        if len(self.tokens) > self.accepted + 1:
            raise ValueError(f"ServerRound {self.round}: {len(self.tokens)} tokens from {self.accepted} accepted "
                             f"drafts and one of the target's")

    @property
    def rejected(self) -> int:
        """Drafts the target threw away this step: a count only (the server does not say which)."""
        return self.drafted - self.accepted

    def to_dict(self) -> dict:
        return {"round": self.round, "drafted": self.drafted, "accepted": self.accepted,
                "rejected": self.rejected, "tokens": [t.piece for t in self.tokens]}


@dataclass(frozen=True)
class Fates:
    """Every output token with its fate, the rounds they came from, and why fates are missing if they are."""
    first: ServerToken | None
    rounds: tuple[ServerRound, ...]
    tokens: tuple[ServerToken, ...]
    why: str | None = None          # None: every token explained; else the reason none is


def assign_fates(pieces: list[str], token_ids: list[int | None], logprobs: list[float | None],
                 per_step_accepted: list[int] | None, per_step_drafted: list[int] | None) -> Fates:
    """Tokens and the server's per-step counts -> Fates (see the module docstring for the rule)."""
    n = len(pieces)
    if not len(token_ids) == len(logprobs) == n:
        raise ValueError("pieces, token ids and logprobs must be as long as each other")

    def unexplained(why: str) -> Fates:
        return Fates(None, (), tuple(ServerToken(i, pieces[i], token_ids[i], logprobs[i], "unexplained")
                                     for i in range(n)), why)

    if not per_step_accepted or per_step_drafted is None:
        return unexplained("the server sent no per-step counts (start vLLM with "
                           "--per-request-spec-decode-metrics detailed, and send n = 1)")
    if len(per_step_accepted) != len(per_step_drafted):
        return unexplained("the server's per-step counts disagree in length")
    # Tokens the steps can explain: the prefill's one, then accepted + 1 a step; only the last step may be cut.
    full = 1 + sum(a + 1 for a in per_step_accepted)
    before_last = full - (per_step_accepted[-1] + 1)
    if n > full:
        return unexplained(f"{n - full} of {n} tokens came from steps the server did not record (a drafter that "
                           f"proposed nothing, as n-gram matching often does, leaves no step behind)")
    if n <= before_last:
        return unexplained(f"the server recorded steps for {full} tokens but sent {n}")
    tokens = [ServerToken(0, pieces[0], token_ids[0], logprobs[0], "first")] if n else []
    rounds = []
    for step, (accepted, drafted) in enumerate(zip(per_step_accepted, per_step_drafted), start=1):
        own: list[ServerToken] = []
        for j in range(accepted + 1):
            i = len(tokens)
            if i >= n:
                break
            fate = "accepted" if j < accepted else ("bonus" if accepted == drafted else "correction")
            own.append(ServerToken(i, pieces[i], token_ids[i], logprobs[i], fate, step))
            tokens.append(own[-1])
        rounds.append(ServerRound(step, drafted, accepted, tuple(own)))
    return Fates(tokens[0] if tokens else None, tuple(rounds), tuple(tokens))
