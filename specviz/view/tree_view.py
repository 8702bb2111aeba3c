"""A token tree round as HTML: step mode's drawing of the tree, and the race pane's compact note.

Built from one round's events only (Drafted with its parents, depths and ranks; the Accepted and
Rejected that name their node; the Resampled or Bonus that ends the round; events.py). Each drafted
node gets a fate:
    accepted   judged and kept: on the path the target took
    rejected   judged and thrown away (a tree may reject several siblings in turn)
    discarded  under a rejected node: never judged
    unjudged   never judged nor under a rejected node: siblings after the kept one, and their subtrees
and the round's last token (the target's correction, or the bonus after a leaf) hangs under the node
it follows. The path (accepted nodes, then that token) is marked `on-path`. Judged tokens reuse
render.token_span (its data-tip explanation and data-pic picture); every token text is escaped.
"""
from __future__ import annotations

from .render import clean, token_span
from ..engine.loop.detokenize import visible

FATES = ("accepted", "rejected", "discarded", "unjudged")
FATE_WORDS = {
    "discarded": "thrown away unjudged: it grew under a rejected node",
    "unjudged": "never judged: a sibling before it was kept, so the target's path went there",
}


def rank(choice: int) -> str:
    """0 -> '1st', 1 -> '2nd', ...: a node's rank among its siblings (the draft's first choice is 1st)."""
    n = choice + 1
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def node_fates(drafted, events) -> list[str]:
    """Each drafted node's fate (FATES) from the round's verdict events."""
    n = len(drafted.token_ids)
    fate = ["unjudged"] * n
    for e in events:
        if e.kind in ("accepted", "rejected") and getattr(e, "node", None) is not None:
            fate[e.node] = e.kind

    def under_rejected(i: int) -> bool:
        p = drafted.parents[i]
        while p >= 0:
            if fate[p] == "rejected":
                return True
            p = drafted.parents[p]
        return False

    return [("discarded" if f == "unjudged" and under_rejected(i) else f) for i, f in enumerate(fate)]


def _children(drafted) -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for i, p in enumerate(drafted.parents):
        kids.setdefault(p, []).append(i)
    for p in kids:
        kids[p].sort(key=lambda i: drafted.choices[i])
    return kids


def _chip(drafted, i: int, fate: str) -> str:
    piece, tid, q = drafted.pieces[i], drafted.token_ids[i], drafted.q[i]
    tip = (f"'{visible(piece)}'  id {int(tid)}\nthe draft's {rank(drafted.choices[i])} choice at depth "
           f"{drafted.depths[i]} (q = {q:.3f})\n{FATE_WORDS[fate]}")
    return (f'<span class="tok tok-pending tok-{fate}" data-kind="{fate}" tabindex="0" '
            f'data-tip="{clean(tip)}">{clean(visible(piece))}</span>')


def tree_html(drafted, events) -> str:
    """The round's tree as nested lists: each node coloured by its fate with its rank, the path marked."""
    fates = node_fates(drafted, events)
    judged = {e.node: e for e in events if e.kind in ("accepted", "rejected") and getattr(e, "node", None) is not None}
    last = next((e for e in events if e.kind in ("resampled", "bonus")), None)
    kids = _children(drafted)

    def item(i: int) -> str:
        fate = fates[i]
        token = token_span(judged[i]) if i in judged else _chip(drafted, i, fate)
        path = " on-path" if fate == "accepted" else ""
        return (f'<li class="tree-node fate-{fate}{path}" data-node="{i}" data-depth="{int(drafted.depths[i])}" '
                f'data-choice="{int(drafted.choices[i])}">{token}<span class="tree-rank">'
                f'{rank(drafted.choices[i])}</span>{level(i)}</li>')

    def level(parent: int) -> str:
        rows = [item(i) for i in kids.get(parent, [])]
        if last is not None and (getattr(last, "parent", None) if getattr(last, "parent", None) is not None
                                 else -1) == parent:
            rows.append(f'<li class="tree-node fate-{last.kind} on-path" data-node="{last.kind}">'
                        f'{token_span(last)}<span class="tree-rank">{"target" if last.kind == "resampled" else "bonus"}'
                        f'</span></li>')
        return f'<ul class="tree">{"".join(rows)}</ul>' if rows else ""

    return (f'<div class="tree-draw" data-round="{int(drafted.round)}"><span class="tree-root" tabindex="0" '
            f'data-tip="{clean("the text so far: every branch grows from its last token")}">▸ text so far</span>'
            f'{level(-1)}</div>')


def tree_counts(drafted, events) -> dict:
    """The round's nodes by fate, the path's length, and the depths where a later choice was kept."""
    fates = node_fates(drafted, events)
    counts = {f: fates.count(f) for f in FATES}
    kept_later = [(e.position + 1, e.choice) for e in events
                  if e.kind == "accepted" and getattr(e, "choice", None)]
    return {**counts, "nodes": len(fates), "kept_later": kept_later}


def round_note(drafted, events) -> str:
    """The race pane's compact tree of one round (shown in the Rounds view): the branches the path did
    not take, and where a choice other than the draft's first was kept."""
    c = tree_counts(drafted, events)
    if not c["nodes"]:
        return ""        # a round that drafted nothing (one token left to write) has no tree to sum up
    off = c["nodes"] - c["accepted"]
    words = [f"+{off} branch{'es' if off != 1 else ''}"]
    words += [f"{rank(choice)} choice kept at depth {depth}" for depth, choice in c["kept_later"]]
    tip = (f"round {drafted.round}: a tree of {c['nodes']} nodes; {c['accepted']} accepted (the path), "
           f"{c['rejected']} rejected, {c['discarded']} under a rejected node, {c['unjudged']} never judged")
    later = " tree-note-later" if c["kept_later"] else ""
    return (f'<span class="tree-note{later}" data-round="{int(drafted.round)}" tabindex="0" '
            f'data-tip="{clean(tip)}">{clean(", ".join(words))}</span>')


def tree_sentence(drafted, events) -> str:
    """Step mode's line under the drawing: what the round's tree held and what became of it (plain text)."""
    c = tree_counts(drafted, events)
    depth = max(drafted.depths) if drafted.depths else 0
    parts = [f"{c['accepted']} accepted (the path, outlined)", f"{c['rejected']} rejected"]
    if c["discarded"]:
        parts.append(f"{c['discarded']} under a rejected node")
    if c["unjudged"]:
        parts.append(f"{c['unjudged']} never judged")
    later = "".join(f" The draft's {rank(ch)} choice was kept at depth {d}: a chain of its first choices would have ended its round there."
                    for d, ch in c["kept_later"])
    return (f"A tree of {c['nodes']} nodes, {depth} deep: " + ", ".join(parts) + "." + later)


# Step mode's key for a tree round's drawing (fixed text, no model output).
TREE_LEGEND = ('<div class="legend tree-legend">A token tree round: '
               '<span class="tok tok-accepted tree-key-path">on the path</span> the target\'s path, outlined · '
               '<span class="tok tok-pending tok-unjudged">never judged</span> a sibling before it was kept · '
               '<span class="tok tok-pending tok-discarded">discarded</span> under a rejected node · '
               '1st, 2nd: the draft\'s rank of each guess among its siblings</div>')
