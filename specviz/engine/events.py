"""The engine's whole vocabulary: frozen event records, one `Event` union.

Shaped after h11's events: each is a frozen dataclass with a literal `kind` and a one-line
"Emitted when ..." docstring. Every event carries its `lane` ("spec" or "base") and `t`,
that lane's own compute clock in seconds when the event was made. Token events carry the
text `piece` they add to the output (incrementally decoded, so the pieces concatenate to
the final text). Probabilities follow the convention in acceptance.py: p = target, q = draft.
`to_dict` gives a plain JSON-able dict; everything a view shows can be rebuilt from these.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal, Union


@dataclass(frozen=True)
class Drafted:
    """Emitted when the drafter has proposed this round's tokens (before verification)."""
    round: int
    token_ids: list[int]
    pieces: list[str]              # each token decoded on its own (display only; drafts are not output yet)
    q: list[float]                 # draft probability of each proposed token
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["drafted"] = "drafted"


@dataclass(frozen=True)
class Accepted:
    """Emitted when a drafted token passes verification and becomes output."""
    round: int
    position: int                  # index of the token within the round's drafts (0-based)
    token_id: int
    piece: str
    p: float
    q: float
    accept_prob: float             # min(1, p/q); greedy: 1.0 (argmax match)
    u: float | None                # the uniform draw that decided it; None for greedy
    rule: Literal["ratio", "argmax", "forced"]  # forced: benchmarking-only fixed acceptance (not lossless)
    index: int                     # index of the token in the generated output
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["accepted"] = "accepted"


@dataclass(frozen=True)
class Rejected:
    """Emitted for the first drafted token that fails verification; later drafts are discarded."""
    round: int
    position: int
    token_id: int
    piece: str
    p: float
    q: float
    accept_prob: float             # min(1, p/q); greedy: 0.0 (not the argmax)
    u: float | None
    rule: Literal["ratio", "argmax", "forced"]  # forced: benchmarking-only fixed acceptance (not lossless)
    discarded: int                 # drafts after this one in the round, thrown away unverified
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["rejected"] = "rejected"


@dataclass(frozen=True)
class Resampled:
    """Emitted when the target's correction replaces a rejected draft token."""
    round: int
    position: int
    token_id: int
    piece: str
    prob: float                    # probability under the residual norm(max(0, p - q)); greedy: p of the argmax
    p: float                       # target probability of the token
    top_residual: list[tuple[int, str, float]] = field(default_factory=list)  # (id, piece, prob), most likely first
    index: int = 0
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["resampled"] = "resampled"


@dataclass(frozen=True)
class Bonus:
    """Emitted when every draft was accepted and the target adds one token of its own for free."""
    round: int
    position: int
    token_id: int
    piece: str
    p: float
    index: int = 0
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["bonus"] = "bonus"


@dataclass(frozen=True)
class TargetToken:
    """Emitted for each token of plain (target-only) decoding."""
    index: int
    token_id: int
    piece: str
    p: float
    lane: str = "base"
    t: float = 0.0
    kind: Literal["target_token"] = "target_token"


@dataclass(frozen=True)
class RoundEnd:
    """Emitted when a speculative round is finished, with its costs and the running totals."""
    round: int
    drafted: int
    accepted: int
    emitted: int                   # tokens added to the output this round
    draft_s: float                 # seconds drafting (device-synchronized)
    verify_s: float                # seconds in the target pass, acceptance and sampling
    bookkeeping_s: float           # seconds cropping caches, detokenizing and building events
    total_tokens: int
    total_drafted: int
    total_accepted: int
    text: str                      # running output text
    k_next: int                    # k for the next round (differs from k under adaptive_k)
    full: bool                     # drafted the k planned for it and no stop rule cut it (see measures.py)
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["round_end"] = "round_end"


@dataclass(frozen=True)
class Done:
    """Emitted last, once: the full output, why it stopped and the run's summary."""
    text: str                      # the streamed pieces joined (a character left unfinished at the very end is dropped)
    token_ids: list[int]
    stop_reason: Literal["max_tokens", "eos", "stop_string", "cancelled", "length_limit"]
    stats: dict
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["done"] = "done"


Event = Union[Drafted, Accepted, Rejected, Resampled, Bonus, TargetToken, RoundEnd, Done]


def to_dict(event: Event) -> dict:
    """A plain, JSON-able dict of the event (tuples become lists)."""
    return asdict(event)


_BY_KIND = {cls.__dataclass_fields__["kind"].default: cls
            for cls in (Drafted, Accepted, Rejected, Resampled, Bonus, TargetToken, RoundEnd, Done)}


def from_dict(record: dict) -> Event:
    """The event a `to_dict` record came from (for events that crossed a process boundary)."""
    cls = _BY_KIND[record["kind"]]
    fields = {k: v for k, v in record.items() if k != "kind"}
    if cls is Resampled:
        fields["top_residual"] = [tuple(t) for t in fields.get("top_residual", [])]
    return cls(**fields)
