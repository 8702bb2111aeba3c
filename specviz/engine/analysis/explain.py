"""What one token event means, in words: the one explanation that the page's tooltips
(view/render.py), step mode (view/tabs/step.py) and the terminal (cli/terminal.py) all show.

Each reads only the event's own fields (p, q, min(1, p/q), the draw u, the residual), so a saved
trace explains itself the same way. Under the block rule (engine/loop/block.py) a verdict's numbers are
the joint test of the prefix ending at that draft (weight w, test h, draw u) and the prefix kept. Conventions as in engine/loop/acceptance.py: p = target probability,
q = draft probability, accept with min(1, p/q), resample from norm(max(0, p - q)).
"""
from __future__ import annotations

import math

from ..loop.detokenize import visible


def plural(n: int, one: str, many: str | None = None) -> str:
    """'1 draft', '3 drafts', 'no drafts': a count with its noun in the right form."""
    word = one if n == 1 else (many or one + "s")
    return f"{'no' if n == 0 else n} {word}"


def shown(piece: str) -> str:
    """A token as the page and the terminal quote it: its visible form between quotes."""
    return f"'{visible(piece)}'"


def _after(discarded: int, tree: bool = False) -> str:
    if tree:      # a token tree: what goes is the rejected node's subtree; its later siblings may still be judged
        return ("no nodes grew under it" if discarded == 0 else "the node under it is discarded" if discarded == 1
                else f"the {discarded} nodes under it are discarded")
    return ("the draft after it is discarded" if discarded == 1 else
            "no drafts came after it" if discarded == 0 else f"the {discarded} drafts after it are discarded")


def _num(x: float | None) -> str:
    """Three decimals; below 0.01, two significant digits (p = 0.000043 and q = 0.0010 explain a ratio
    of 0.043 where "0.000" and "0.001" could not)."""
    if x is None:
        return "—"
    if 0 < abs(x) < 0.01:
        return f"{x:.{1 - math.floor(math.log10(abs(x)))}f}"
    return f"{x:.3f}"


def _target_top_choice(event) -> bool:
    """A correction that is the target's own argmax (greedy rules): its probability is p itself, and
    the event's top list is p's, not a residual's."""
    return bool(event.top_residual) and abs(event.prob - event.p) < 1e-9


def tooltip(event) -> str:
    """Plain-text explanation of one token event, with the round's real numbers."""
    kind = event.kind
    if kind == "target_token":
        return f"plain target token #{event.index + 1}\np = {_num(event.p)}"
    head = f"round {event.round}, draft position {event.position + 1}"
    if kind in ("accepted", "rejected"):
        nums = f"p (target) = {_num(event.p)}   q (draft) = {_num(event.q)}"
        if event.rule == "argmax":
            why = ("the target's most likely token: accepted" if kind == "accepted"
                   else "not the target's most likely token: rejected")
        elif getattr(event, "weight", None) is not None:
            why = (f"block weight w = {_num(event.weight)}   joint test h = {_num(event.accept_prob)}   "
                   f"u = {_num(event.u)}\n{block_reason(event)}")
        else:
            op = "<" if kind == "accepted" else "≥"
            why = (f"min(1, p/q) = {_num(event.accept_prob)}   u = {_num(event.u)} {op} {_num(event.accept_prob)}\n"
                   + reason(event))
        under = ("node under it", "nodes under it") if getattr(event, "node", None) is not None else ("later draft",)
        tail = f"\n{plural(event.discarded, *under)} discarded" if kind == "rejected" else ""
        return f"{kind} · {head}\n{nums}\n{why}{tail}"
    if kind == "resampled":
        top = ", ".join(f"{shown(piece)} {prob:.2f}" for _, piece, prob in event.top_residual)
        if getattr(event, "weight", None) is not None:
            return (f"resampled · {head}\nthe block's correction, drawn from norm(max(0, w·p − q)), "
                    f"w = {_num(event.weight)}\nresidual probability = {_num(event.prob)}   p (target) = "
                    f"{_num(event.p)}\nresidual top: {top}")
        if _target_top_choice(event):       # greedy: the correction is p's argmax, its list is p's top
            return (f"resampled · {head}\nthe target's correction: its own most likely token\n"
                    f"p (target) = {_num(event.p)}\ntarget's top: {top}")
        return (f"resampled · {head}\nthe target's correction, drawn from norm(max(0, p − q))\n"
                f"residual probability = {_num(event.prob)}   p (target) = {_num(event.p)}\nresidual top: {top}")
    if kind == "bonus" and event.position == 0:
        return f"bonus · round {event.round}\nnothing drafted this round: the target's own next token\np = {_num(event.p)}"
    if kind == "bonus":
        return f"bonus · round {event.round}\nall drafts accepted: one more token from the target\np = {_num(event.p)}"
    return kind


def reason(event) -> str:
    """Why a sampled verdict went the way it did, in words: what u is and what it was compared with."""
    if event.kind not in ("accepted", "rejected") or event.u is None:
        return ""
    if event.rule not in ("ratio", "argmax", "forced"):
        rule = f"the {event.rule} rule"
    else:
        rule = "the exact rule"
    chance = f"{rule} keeps this draft with probability {_num(event.accept_prob)}"
    if event.kind == "accepted":
        return f"{chance}; a uniform random draw u landed below it, so the draft was kept"
    return f"{chance}; a uniform random draw u landed at or above it, so the draft was thrown away"


def block_reason(event) -> str:
    """Why the block rule kept or dropped this draft: the longest prefix whose joint test passed
    (u < h), read from the end of the block backwards, is kept whole."""
    passed = event.u < event.accept_prob
    keeps = (f"the block keeps its first {plural(event.kept, 'draft')}" if event.kept
             else "the block keeps none of its drafts")
    if event.kind == "rejected":
        return f"u is not below h, nor did any longer prefix pass its test: {keeps}"
    if passed and event.kept == event.position + 1:
        return f"u is below h and no longer prefix passed: {keeps}, up to this one"
    if passed:
        return f"u is below h, and a longer prefix passed too: {keeps}"
    return f"u is not below h, but a longer prefix passed its test: {keeps}, this one with them"


def sentence(event, quote=shown) -> str:
    """One sentence on why this verdict happened, with the real numbers; `quote` shows a token
    (step mode passes one that escapes it as HTML code, the terminal one that hides control characters)."""
    k = event.kind
    if k in ("accepted", "rejected"):
        who = f"Draft token {quote(event.piece)}"
        if event.rule == "argmax":
            if k == "accepted":
                return f"{who} is also the target's most likely next token (p = {event.p:.3f}): accepted."
            return (f"{who} is not the target's most likely next token (it gives it p = {event.p:.3f}): rejected, "
                    f"and {_after(event.discarded, getattr(event, 'node', None) is not None)}.")
        if getattr(event, "weight", None) is not None:
            return (f"{who}: the target gives it p = {event.p:.3f}, the draft gave q = {event.q:.3f}, so the target "
                    f"mass its prefix keeps over the draft's is w = {_num(event.weight)}; the block rule passes the "
                    f"prefix ending here with probability h = {_num(event.accept_prob)}, and its draw is "
                    f"u = {_num(event.u)}: {block_reason(event)}"
                    + ("." if event.kind == "accepted" else
                       f", and {_after(event.discarded)}."))
        if event.rule not in ("ratio", "forced"):
            base = (f"{who}: the target gives it p = {event.p:.3f}, the draft gave q = {event.q:.3f}, and the "
                    f"{event.rule} rule keeps it with probability {event.accept_prob:.3f}; a uniform random draw "
                    f"u = {event.u:.3f} is ")
        else:
            base = (f"{who}: the target gives it p = {event.p:.3f}, the draft gave q = {event.q:.3f}, so it is kept "
                    f"with probability min(1, p/q) = {event.accept_prob:.3f}; a uniform random draw u = {event.u:.3f} is ")
        if k == "accepted":
            return base + "below that: accepted."
        return base + f"not below that: rejected, and {_after(event.discarded, getattr(event, 'node', None) is not None)}."
    if k == "resampled" and getattr(event, "weight", None) is not None:
        return (f"The target draws the next token {quote(event.piece)} from the block's residual "
                f"norm(max(0, w·p − q)) with the kept prefix's weight w = {_num(event.weight)}, where it has "
                f"probability {event.prob:.3f}: kept prefixes plus these corrections add up to exactly the target's "
                f"distribution.")
    if k == "resampled":
        if _target_top_choice(event):
            return f"The target puts its own top choice {quote(event.piece)} (p = {event.p:.3f}) in its place."
        return (f"The target replaces it with {quote(event.piece)}, drawn from the leftover distribution "
                f"norm(max(0, p − q)), the part of p the draft under-covers, where it has probability "
                f"{event.prob:.3f}: kept drafts plus corrections add up to exactly p.")
    if k == "bonus" and event.position == 0:
        return f"Nothing to check, so the target's pass gives its next token: {quote(event.piece)} (p = {event.p:.3f})."
    if k == "bonus":
        return (f"Every draft was accepted, so the same target pass yields one more token for free: "
                f"{quote(event.piece)} (p = {event.p:.3f}).")
    return ""


def tie_note(rejected, correction) -> str:
    """A greedy rejection and its correction whose p read the same at 3 decimals ("p = 0.412 … not the
    most likely" then "top choice … p = 0.412") look like a contradiction: say they are nearly tied,
    with the digits that separate them. Step mode's alone: only it shows the two side by side."""
    if (rejected is None or correction is None or rejected.rule != "argmax"
            or not _target_top_choice(correction) or f"{rejected.p:.3f}" != f"{correction.p:.3f}"):
        return ""
    if correction.p == rejected.p and correction.token_id < rejected.token_id:
        # Greedy's argmax (torch.argmax) returns the first of equal maxima: the lower token id.
        return (f" The two are exactly tied (p = {correction.p:.6f} each): greedy decoding takes the one with the "
                f"lower token id.")
    digits = next((d for d in range(4, 18) if f"{rejected.p:.{d}f}" != f"{correction.p:.{d}f}"), 17)
    return (f" The two are nearly tied: p = {correction.p:.{digits}f} against {rejected.p:.{digits}f}, "
            f"and greedy keeps the larger.")
