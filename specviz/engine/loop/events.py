"""The engine's whole vocabulary: frozen event records, one `Event` union.

Shaped after h11's events: each is a frozen dataclass with a literal `kind` and a one-line
"Emitted when ..." docstring. Every event carries its `lane` ("spec" or "base") and `t`,
that lane's own compute clock in seconds when the event was made. Token events carry the
text `piece` they add to the output (incrementally decoded, so the pieces concatenate to
the final text). Probabilities follow the convention in acceptance.py: p = target, q = draft.
`to_dict` gives a plain JSON-able dict; everything a view shows can be rebuilt from these.
Events are keyword-only and check their invariants when made (`_SelfChecking`), as h11's do: each
field on its own, then the fields against each other (a tree's choices against its parents, a verdict's
draw against its probability, a round's counts against each other, a stop reason from the list), in
a few comparisons, since events are built per token.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Literal, Union

from ..metrics.measures import LaneStats

PROBABILITIES = ("p", "q", "accept_prob", "u", "prob", "overlap")     # each in [0, 1] where present (None: not drawn)
COUNTS = ("round", "position", "index", "token_id", "discarded", "drafted", "accepted", "emitted",
          "total_tokens", "total_drafted", "total_accepted", "k_next", "unjudged")   # each a whole number >= 0
PROB_SLACK = 1e-3     # half-precision softmax may round a probability a hair past 1
DRAW_SLACK = 1e-6     # u and accept_prob are compared on the device, then read back as Python floats
STOP_REASONS = ("max_tokens", "eos", "stop_string", "cancelled", "length_limit")


def _is_probability(x) -> bool:
    return isinstance(x, (int, float)) and not math.isnan(x) and -PROB_SLACK <= x <= 1 + PROB_SLACK


class _SelfChecking:
    """Every event checks its invariants when made: probabilities in [0, 1], counts and positions
    whole and >= 0, the lane one of the two, clocks >= 0. A broken event fails where it is built."""

    def __post_init__(self):
        names = {f.name for f in fields(self)}
        for name in PROBABILITIES:
            value = getattr(self, name, None)
            if name in names and value is not None:
                values = value if isinstance(value, (list, tuple)) else [value]
                if not all(_is_probability(x) for x in values):
                    raise ValueError(f"{type(self).__name__}.{name} must be a probability in [0, 1], not {value!r}")
        for name in COUNTS:
            value = getattr(self, name, 0)
            if name in names and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{type(self).__name__}.{name} must be a whole number >= 0, not {value!r}")
        for name in ("t", "draft_s", "verify_s", "bookkeeping_s"):
            value = getattr(self, name, 0.0)
            if name in names and not (isinstance(value, (int, float)) and value >= 0):
                raise ValueError(f"{type(self).__name__}.{name} must be seconds >= 0, not {value!r}")
        for entry in getattr(self, "picture", ()):
            if not all(x is None or _is_probability(x) for x in entry[2:]):
                raise ValueError(f"{type(self).__name__}.picture holds a probability outside [0, 1]: {entry!r}")
        if self.lane not in ("spec", "base"):
            raise ValueError(f"{type(self).__name__}.lane must be 'spec' or 'base', not {self.lane!r}")


@dataclass(frozen=True, kw_only=True)
class Drafted(_SelfChecking):
    """Emitted when the drafter has proposed this round's tokens (before verification)."""
    round: int
    token_ids: list[int]
    pieces: list[str]              # each token decoded on its own (display only; drafts are not output yet)
    q: list[float]                 # draft probability of each proposed token
    # A token tree (proposal.py), one entry per node in the order above; None for a chain. parents: the
    # node's parent (-1: the round's root, the last committed token); depths: 1 = a child of the root;
    # choices: its rank among its siblings (0 = the draft's first choice). q is then that of the
    # distribution the node was drawn from (the draft's, without the siblings drawn before it).
    parents: list[int] | None = None
    depths: list[int] | None = None
    choices: list[int] | None = None
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["drafted"] = "drafted"

    def __post_init__(self):
        super().__post_init__()
        n = len(self.token_ids)
        if not len(self.pieces) == len(self.q) == n:
            raise ValueError(f"Drafted: {n} token ids, {len(self.pieces)} pieces and {len(self.q)} q values differ")
        tree = (self.parents, self.depths, self.choices)
        if any(x is not None for x in tree):
            if any(x is None or len(x) != n for x in tree):
                raise ValueError(f"Drafted: a tree needs parents, depths and choices for each of its {n} tokens")
            for i, (parent, depth) in enumerate(zip(self.parents, self.depths)):
                # Parents come before their children, and a node sits one depth below its parent.
                if not -1 <= parent < i or depth != (1 if parent < 0 else self.depths[parent] + 1):
                    raise ValueError(f"Drafted: node {i} has parent {parent} and depth {depth}: not a tree in "
                                     f"feeding order")
            # A node's choice is its rank among its siblings: how many of them were drawn before it.
            seen: dict[int, int] = {}
            for i, (parent, choice) in enumerate(zip(self.parents, self.choices)):
                if choice != seen.get(parent, 0):
                    raise ValueError(f"Drafted: node {i} is choice {choice} of parent {parent}, whose earlier "
                                     f"children number {seen.get(parent, 0)}")
                seen[parent] = choice + 1


class _Verdict(_SelfChecking):
    """A judged draft (Accepted, Rejected): the draw u decided it against accept_prob (kept iff u <
    accept_prob, acceptance.py; under the block rule, see below), and a tree's node and choice come together."""

    def __post_init__(self):
        super().__post_init__()
        kept = isinstance(self, Accepted)
        decided = True
        if getattr(self, "kept", None) is not None:
            # The block rule (block.py) keeps the longest prefix whose joint test passed: a draft is kept when
            # it lies inside that prefix, whatever its own draw, and the first draft past it is the rejected one.
            # Only the last kept draft's draw (and the rejected one's) decided the round.
            if (self.position >= self.kept) if kept else (self.position != self.kept):
                raise ValueError(f"{type(self).__name__}: position {self.position} against a kept prefix of "
                                 f"{self.kept}")
            decided = not kept or self.position == self.kept - 1
        if decided and self.u is not None and (self.u >= self.accept_prob + DRAW_SLACK if kept
                                               else self.u < self.accept_prob - DRAW_SLACK):
            raise ValueError(f"{type(self).__name__}: u = {self.u!r} against accept_prob = {self.accept_prob!r} "
                             f"would have {'rejected' if kept else 'kept'} it")
        if (self.node is None) != (self.choice is None):
            raise ValueError(f"{type(self).__name__}: a tree's verdict names its node and its choice, or neither")


@dataclass(frozen=True, kw_only=True)
class Accepted(_Verdict):
    """Emitted when a drafted token passes verification and becomes output."""
    round: int
    position: int                  # its depth in the round's tree, 0-based (a chain's: its index among the drafts)
    token_id: int
    piece: str
    p: float
    q: float
    accept_prob: float             # min(1, p/q); greedy: 1.0 (argmax match)
    u: float | None                # the uniform draw that decided it; None for greedy
    # "ratio" / "argmax": the exact rule (sampling / greedy); "forced": benchmarking-only fixed
    # acceptance (not lossless); anything else: the name of the non-default rule that judged it
    # (engine/loop/rules.py, e.g. "typical(epsilon=0.09,delta=0.3)"; accept_prob is that rule's).
    rule: str
    index: int                     # index of the token in the generated output
    node: int | None = None        # tree rounds: the judged node (an index into Drafted's nodes); None for a chain
    # The block rule (engine/loop/block.py): accept_prob and u are the joint test h_i and its draw of the
    # prefix ending here, weight its w_i, and kept the prefix length the round keeps (the longest with
    # u < h, so a draft may be kept though its own test failed). None under other rules.
    weight: float | None = None
    kept: int | None = None
    choice: int | None = None      # tree rounds: its rank among its siblings (0 = the draft's first choice)
    # The picture of this position: the most likely tokens of p and of q as (id, piece, p, q), most likely
    # under p first (q is None on a bonus, which no draft competed for), and overlap = sum over the whole
    # vocabulary of min(p, q): the chance the exact rule keeps a draft drawn from q (acceptance.py).
    picture: list[tuple[int, str, float, float | None]] = field(default_factory=list)
    overlap: float | None = None
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["accepted"] = "accepted"


@dataclass(frozen=True, kw_only=True)
class Rejected(_Verdict):
    """Emitted for each drafted token that fails verification: a chain's first failing draft (the
    drafts after it are discarded), or in a tree each sibling rejected in turn before one is kept or
    the correction is drawn (the nodes under a rejected one are discarded)."""
    round: int
    position: int
    token_id: int
    piece: str
    p: float
    q: float
    accept_prob: float             # min(1, p/q); greedy: 0.0 (not the argmax)
    u: float | None
    rule: str                      # as in Accepted
    discarded: int                 # drafts after this one in the round (a tree: the nodes under it), thrown away unverified
    node: int | None = None        # as in Accepted
    weight: float | None = None    # as in Accepted (block rule)
    kept: int | None = None
    choice: int | None = None
    picture: list[tuple[int, str, float, float | None]] = field(default_factory=list)   # as in Accepted
    overlap: float | None = None
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["rejected"] = "rejected"


@dataclass(frozen=True, kw_only=True)
class Resampled(_SelfChecking):
    """Emitted when the target's correction replaces a rejected draft token."""
    round: int
    position: int
    token_id: int
    piece: str
    prob: float                    # probability under the residual norm(max(0, p - q)); greedy: p of the argmax
    p: float                       # target probability of the token
    top_residual: list[tuple[int, str, float]] = field(default_factory=list)  # (id, piece, prob), most likely first
    index: int = 0
    parent: int | None = None      # tree rounds: the node whose children it replaces (-1: the round's root)
    # The block rule: the weight w of the kept prefix; prob is then under norm(max(0, w p - q)). None otherwise.
    weight: float | None = None
    picture: list[tuple[int, str, float, float | None]] = field(default_factory=list)   # as in Accepted
    overlap: float | None = None
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["resampled"] = "resampled"


@dataclass(frozen=True, kw_only=True)
class Bonus(_SelfChecking):
    """Emitted when every draft was accepted and the target adds one token of its own for free."""
    round: int
    position: int
    token_id: int
    piece: str
    p: float
    index: int = 0
    parent: int | None = None      # tree rounds: the node it follows (a leaf of the tree; -1: the round's root)
    picture: list[tuple[int, str, float, float | None]] = field(default_factory=list)   # as in Accepted
    overlap: float | None = None
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["bonus"] = "bonus"


@dataclass(frozen=True, kw_only=True)
class TargetToken(_SelfChecking):
    """Emitted for each token of plain (target-only) decoding."""
    index: int
    token_id: int
    piece: str
    p: float
    target_s: float = 0.0          # seconds in this token's target pass (device time on CUDA)
    sample_s: float = 0.0          # seconds warping, sampling and reading the token back
    lane: str = "base"
    t: float = 0.0
    kind: Literal["target_token"] = "target_token"


@dataclass(frozen=True, kw_only=True)
class RoundEnd(_SelfChecking):
    """Emitted when a speculative round is finished, with its costs and the running totals."""
    round: int
    drafted: int
    accepted: int
    emitted: int                   # tokens added to the output this round
    draft_s: float                 # seconds drafting (device-synchronized)
    verify_s: float                # seconds in the target pass, acceptance and sampling (= target_s + accept_s)
    target_s: float = 0.0          # of which the target's forward pass over the uncached tokens and the drafts
    accept_s: float = 0.0          # of which acceptance, the correction or bonus draw, and the one host read
    bookkeeping_s: float           # seconds cropping caches, detokenizing and building events
    total_tokens: int
    total_drafted: int
    total_accepted: int
    text: str                      # running output text
    k_next: int                    # k for the next round (differs from k under adaptive_k)
    full: bool                     # drafted the k planned for it and no stop rule cut it (see measures.py)
    # Tree rounds: nodes neither judged nor under a rejected node (siblings after the kept one, their
    # subtrees, the rest once a stop rule fired), so drafted = accepted + rejected + discarded + unjudged.
    unjudged: int = 0
    # The block rule's joint test (engine/loop/block.py), one (w_i, h_i, u_i) per draft: the weight, the
    # test of the prefix ending there and its draw; the round kept the longest prefix with u_i < h_i.
    block: list[tuple[float, float, float]] | None = None
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["round_end"] = "round_end"

    def __post_init__(self):
        super().__post_init__()
        # Accepted and unjudged drafts are among the drafted; a round emits its accepted tokens and at
        # most one of the target's (a correction or a bonus; fewer when a stop cut it); totals include it.
        if self.accepted + self.unjudged > self.drafted:
            raise ValueError(f"RoundEnd: {self.accepted} accepted and {self.unjudged} unjudged of {self.drafted} "
                             f"drafted")
        if self.emitted > self.accepted + 1:
            raise ValueError(f"RoundEnd: {self.emitted} emitted from {self.accepted} accepted drafts (at most one more)")
        if not (self.drafted <= self.total_drafted and self.accepted <= self.total_accepted <= self.total_drafted
                and self.emitted <= self.total_tokens):
            raise ValueError(f"RoundEnd: running totals ({self.total_tokens} tokens, {self.total_accepted} of "
                             f"{self.total_drafted} drafts accepted) below this round's")


@dataclass(frozen=True, kw_only=True)
class Done(_SelfChecking):
    """Emitted last, once: the full output, why it stopped and the run's summary."""
    text: str                      # the streamed pieces joined (a character left unfinished at the very end is dropped)
    token_ids: list[int]
    stop_reason: Literal["max_tokens", "eos", "stop_string", "cancelled", "length_limit"]   # STOP_REASONS
    stats: LaneStats               # the lane's tally and figures (measures.py); a dict in to_dict's record
    lane: str = "spec"
    t: float = 0.0
    kind: Literal["done"] = "done"

    def __post_init__(self):
        super().__post_init__()
        if self.stop_reason not in STOP_REASONS:
            raise ValueError(f"Done: stop_reason must be one of {', '.join(STOP_REASONS)}, not {self.stop_reason!r}")


Event = Union[Drafted, Accepted, Rejected, Resampled, Bonus, TargetToken, RoundEnd, Done]


def to_dict(event: Event) -> dict:
    """A plain, JSON-able dict of the event (tuples become lists; Done's stats flattened by LaneStats.to_dict)."""
    record = asdict(event)
    if isinstance(event, Done):
        record["stats"] = event.stats.to_dict()
    return record


_BY_KIND = {cls.__dataclass_fields__["kind"].default: cls
            for cls in (Drafted, Accepted, Rejected, Resampled, Bonus, TargetToken, RoundEnd, Done)}


def from_dict(record: dict) -> Event:
    """The event a `to_dict` record came from (for events that crossed a process boundary)."""
    cls = _BY_KIND[record["kind"]]
    fields = {k: v for k, v in record.items() if k != "kind"}
    for name in ("top_residual", "picture", "block"):
        if fields.get(name) is not None:
            fields[name] = [tuple(t) for t in fields[name]]
    if cls is Done:
        fields["stats"] = LaneStats.from_dict(fields.get("stats") or {})
    return cls(**fields)
