"""Engine events -> HTML fragments for the token panes; every piece of text is escaped.

`gr.HTML` does not sanitize, and tokens are model output: every text goes through
`html.escape` (quotes too, for attributes), CSS classes and data-kind values come only
from the fixed tables below, and tooltips live in escaped `title` attributes. Fragments
are only ever appended, so a pane's HTML while streaming always extends the previous
value (Gradio then sends a small diff). Rejected drafts are not output: they are shown
struck through, with their whitespace made visible, followed by the target's correction.
"""
from __future__ import annotations

import html

from ..engine.explain import tooltip

KINDS = {  # event kind -> (data-kind, CSS class)
    "accepted": ("accepted", "tok tok-accepted"),
    "rejected": ("rejected", "tok tok-rejected"),
    "resampled": ("resampled", "tok tok-resampled"),
    "bonus": ("bonus", "tok tok-bonus"),
    "target_token": ("target", "tok tok-target"),
}
VISIBLE_WHITESPACE = str.maketrans({" ": "·", "\n": "↵", "\t": "→"})


def clean(text: str) -> str:
    """Text safe to put in a page: lone surrogates become U+FFFD, then HTML-escaped."""
    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return html.escape(text, quote=True)


def token_span(event) -> str:
    data_kind, css = KINDS[event.kind]
    text = event.piece.translate(VISIBLE_WHITESPACE) if event.kind == "rejected" else event.piece
    round_attr = f' data-round="{int(event.round)}"' if hasattr(event, "round") else ""
    return (f'<span class="{css}" data-kind="{data_kind}"{round_attr} '
            f'title="{clean(tooltip(event))}">{clean(text)}</span>')


def fragment(event) -> str:
    """The HTML one event appends to its lane's pane ("" for events that show nothing)."""
    if event.kind == "drafted":
        return f'<span class="round-mark" data-round="{int(event.round)}" title="round {int(event.round)}"></span>'
    if event.kind in KINDS:
        return token_span(event)
    return ""


def draft_chips(event) -> str:
    """The drafted tokens of one round as pending chips (step mode), escaped."""
    chips = "".join(f'<span class="tok tok-pending" data-kind="drafted" title="q = {q:.3f}">'
                    f"{clean(p.translate(VISIBLE_WHITESPACE))}</span>" for p, q in zip(event.pieces, event.q))
    return f'<span class="round-mark" data-round="{int(event.round)}"></span>{chips}'


LEGEND = (
    '<div class="legend">'
    '<span class="tok tok-accepted">accepted</span> draft token kept '
    '<span class="tok tok-rejected">rejected</span> draft token thrown away '
    '<span class="tok tok-resampled">resampled</span> the target\'s correction '
    '<span class="tok tok-bonus">bonus</span> extra target token after a full round '
    '<span class="round-mark"></span> round boundary · hover a token for its numbers'
    "</div>"
)
