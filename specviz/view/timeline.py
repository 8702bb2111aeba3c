"""The round on one clock: both lanes of a race drawn on one time axis, under the panes.

Speculative lane: each round as its draft steps (small dashed blocks) then its verify pass (one solid
block), and under the pass the tokens that round decided, in the panes' colours: kept drafts, rejected
drafts, then the correction or the bonus. Plain lane: one solid block per token (one target pass each).
Each lane's clock is its own compute clock (engine events' `t`), so the two rows compare the same
quantity: seconds of compute per token.

Where each block sits comes from the events: a RoundEnd gives its lane clock at the round's end and
the seconds it spent drafting, verifying and on bookkeeping, so the round starts at
t - (draft_s + verify_s + bookkeeping_s); the draft steps share draft_s evenly (events carry the
round's drafting time, not each step's). A TargetToken ends at t after target_s + sample_s.

HTML only grows while a race streams (view/live_html.py appends it): every block is absolutely placed
by CSS variables (--t start, --d length, in seconds); assets/page.js sets the axis' length --T on the
box as the race grows, and its tick labels. No model text appears here: only numbers and fixed words.
"""
from __future__ import annotations

from .render import clean

# No wrapper element: appended pieces land at the end of the live box (view/live_html.py), which
# assets/style.css draws as the timeline (.tl-box .live-box).
HEAD = ('<div class="tl-lane tl-lane-spec">speculative</div><div class="tl-lane tl-lane-base">plain</div>'
        '<div class="tl-axis"></div>'
        '<div class="tl-key">dashed: a draft step · solid: one target pass · under it, the tokens it decided '
        '(kept, rejected, correction, bonus)</div>')
FATES = ("accepted", "rejected", "resampled", "bonus")   # the order a round's tokens are drawn under its pass


def _block(cls: str, start: float, length: float, tip: str = "", extra: str = "") -> str:
    """One absolutely placed block: class from a fixed set, start and length in seconds of lane clock."""
    tip_attr = f' data-tip="{clean(tip)}" tabindex="0"' if tip else ""
    return (f'<i class="{cls}" style="--t:{start:.5f};--d:{max(length, 0.0):.5f}" '
            f'data-end="{start + max(length, 0.0):.5f}"{tip_attr}>{extra}</i>')


class Timeline:
    """Folds a race's events into timeline HTML (append-only while it grows)."""

    def __init__(self):
        self.parts: list[str] = []
        self.fates: list[str] = []        # the current speculative round's token fates, in order
        self.rounds = 0                   # speculative rounds drawn
        self.passes = 0                   # plain target passes drawn

    def add(self, event) -> None:
        kind = event.kind
        if event.lane == "spec" and kind in FATES:
            self.fates.append(kind)
        elif event.lane == "spec" and kind == "round_end":
            self._round(event)
        elif event.lane == "base" and kind == "target_token":
            self._plain(event)

    def _round(self, end) -> None:
        spent = end.draft_s + end.verify_s + end.bookkeeping_s
        start = max(0.0, end.t - spent)
        steps = max(1, int(end.drafted))
        step = end.draft_s / steps
        counts = {f: self.fates.count(f) for f in FATES}
        tip = (f"round {int(end.round)}: {int(end.drafted)} draft steps, {end.draft_s:.3f} s; one verify pass, "
               f"{end.verify_s:.3f} s; kept {counts['accepted']}, rejected {counts['rejected']}"
               + (", correction 1" if counts["resampled"] else "") + (", bonus 1" if counts["bonus"] else ""))
        self.parts.append("".join(_block("tl-b tl-draft", start + i * step, step) for i in range(steps)))
        cells = "".join(f'<b class="tl-f tl-{f}"></b>' for f in self.fates)
        self.parts.append(_block("tl-b tl-verify", start + end.draft_s, end.verify_s, tip)
                          + _block("tl-fates tl-fates-spec", start + end.draft_s, end.verify_s, extra=cells))
        self.fates = []
        self.rounds += 1

    def _plain(self, token) -> None:
        length = token.target_s + token.sample_s
        self.passes += 1
        tip = f"plain decoding: target pass {self.passes}, {length:.3f} s, one token"
        self.parts.append(_block("tl-b tl-pass", max(0.0, token.t - length), length, tip)
                          + _block("tl-fates tl-fates-base", max(0.0, token.t - length), length,
                                   extra='<b class="tl-f tl-target"></b>'))

    def html(self) -> str:
        """The timeline so far: always HEAD then the blocks in event order, so each value extends the last."""
        return HEAD + "".join(self.parts) if self.parts else ""
