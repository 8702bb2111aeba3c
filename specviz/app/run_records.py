"""How a finished lane ran, as small frozen records that check themselves (as the engine's events do):
`DecodePath`, what a lane's `Done.stats.decode_path` says as text, and `ChoiceRow`, one row of a tree
lane's `Done.stats.by_choice`.

The engine's stats and the saved trace keep their JSON form (a string, a list of dicts), so traces
exported earlier still load; these records read that form once, where a page, the CLI or the bench
takes it in, and give it back unchanged (`str(path)`, `row.to_dict()`). A value no engine writes (an
unknown path, a row kept more often than judged) cannot be built: ValueError, with what is wrong.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

# The paths a target's steps take (runtime/cached_model.path_stats): transformers' forward, CUDA graphs
# replayed, torch.compile's static cache, or the graph path's host-side stand-in off CUDA.
TARGET_PATHS = ("eager", "CUDA graphs", "torch.compile", "eager replay")
FELL_BACK = "eager ("       # "eager (why)": the graph path closed, and every step ran eagerly


@dataclass(frozen=True)
class DecodePath:
    """How a lane's target stepped: `how` (one of TARGET_PATHS) and, when the graph path closed and
    the lane ran eagerly instead, `fell_back`: why ("" when nothing fell back)."""
    how: str = "eager"
    fell_back: str = ""

    def __post_init__(self):
        if self.how not in TARGET_PATHS:
            raise ValueError(f"unknown decode path {self.how!r}: one of {', '.join(TARGET_PATHS)}")
        if not isinstance(self.fell_back, str):
            raise ValueError("a decode path's fallback reason is text")
        if self.fell_back and self.how != "eager":
            raise ValueError(f"only the eager path is a fallback, not {self.how!r}")

    @classmethod
    def parse(cls, text: str | None) -> "DecodePath":
        """The record of Done.stats.decode_path ("eager", "CUDA graphs", "eager (graph capture failed: ...)");
        None or "" (a stats record older than the field) is "eager"."""
        if not text:
            return cls()
        if not isinstance(text, str):
            raise ValueError(f"a decode path is text, not {type(text).__name__}")
        if text.startswith(FELL_BACK) and text.endswith(")"):
            return cls("eager", text[len(FELL_BACK):-1])
        return cls(text)

    def __str__(self) -> str:
        """The engine's own text for this path (parse's inverse)."""
        return f"{FELL_BACK}{self.fell_back})" if self.fell_back else self.how

    @property
    def plain_eager(self) -> bool:
        """Stepped through transformers' forward as a matter of course (nothing to say on the page)."""
        return self.how == "eager" and not self.fell_back


def _count(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"a choice row's {name} is a whole number of at least {low}, not {value!r}")
    return value


@dataclass(frozen=True)
class ChoiceRow:
    """A tree lane, at `depth` (1 = a child of the round's root): the draft's `choice`-th candidate among
    its siblings (0 = its first choice) was judged `judged` times by the target and kept `accepted` times."""
    depth: int
    choice: int
    judged: int
    accepted: int

    def __post_init__(self):
        _count("depth", self.depth, 1)
        _count("choice", self.choice, 0)
        _count("judged", self.judged, 1)          # a row exists only where the target judged the choice
        _count("accepted", self.accepted, 0)
        if self.accepted > self.judged:
            raise ValueError(f"a choice kept {self.accepted} times of {self.judged} judged")

    @property
    def rate(self) -> float:
        """Kept where judged: accepted / judged."""
        return self.accepted / self.judged

    @classmethod
    def from_dict(cls, row: Mapping) -> "ChoiceRow":
        """A row of measures.ChoiceTally.rows(); its `rate`, when given, must be accepted / judged."""
        if not isinstance(row, Mapping):
            raise ValueError(f"a choice row is a mapping, not {type(row).__name__}")
        try:
            made = cls(row["depth"], row["choice"], row["judged"], row["accepted"])
        except KeyError as missing:
            raise ValueError(f"a choice row lacks {missing}") from None
        rate = row.get("rate", made.rate)
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isclose(rate, made.rate,
                                                                                             abs_tol=1e-12):
            raise ValueError(f"a choice row's rate {rate!r} is not accepted / judged = {made.rate!r}")
        return made

    def to_dict(self) -> dict:
        """The engine's form (measures.ChoiceTally.rows()): from_dict's inverse."""
        return {"depth": self.depth, "choice": self.choice, "judged": self.judged, "accepted": self.accepted,
                "rate": self.rate}


def choice_rows(rows: Iterable[Mapping] | None) -> tuple[ChoiceRow, ...]:
    """A lane's by_choice as records, depth first then choice (() for a chain's None); each (depth, choice)
    at most once."""
    made = sorted((ChoiceRow.from_dict(r) for r in rows or ()), key=lambda r: (r.depth, r.choice))
    keys = [(r.depth, r.choice) for r in made]
    if len(set(keys)) != len(keys):
        raise ValueError("a (depth, choice) appears twice in one lane's rows")
    return tuple(made)


def as_dicts(rows: Iterable[ChoiceRow]) -> list[dict]:
    """The engine's form of the rows, for its analysis functions (engine/analysis/tree_ledger.py)."""
    return [r.to_dict() for r in rows]
