"""Engine events -> HTML fragments for the token panes; every piece of text is escaped.

`gr.HTML` does not sanitize, and tokens are model output: every text goes through
`html.escape` (quotes too, for attributes), CSS classes and data-kind values come only
from the fixed tables below, and a token's details live in an escaped `data-tip` attribute
that assets/page.js shows in a popover (hover, click, tap, Enter/Space on the focused token).
Fragments are only ever appended, so a pane's HTML while streaming always extends the
previous value (Gradio then sends a small diff).

Whitespace is drawn by engine/detokenize.visible, the one mapping used everywhere: output
tokens keep their real characters (the pane's text is the output text, and copies as such)
with the visible glyph laid over them (`.ws` spans, data-show); rejected drafts and drafted
chips are not output, so they show the glyphs alone. A draft holding part of a multi-byte
character reads as its bytes (<0xE2>).
"""
from __future__ import annotations

import html
import json
import re

from ..engine.loop.detokenize import visible
from ..engine.analysis.explain import tooltip

KINDS = {  # event kind -> (data-kind, CSS class)
    "accepted": ("accepted", "tok tok-accepted"),
    "rejected": ("rejected", "tok tok-rejected"),
    "resampled": ("resampled", "tok tok-resampled"),
    "bonus": ("bonus", "tok tok-bonus"),
    "target_token": ("target", "tok tok-target"),
}
_INVISIBLE = re.compile(r"[^\S\n]+|\n|[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]+")


def clean(text: str) -> str:
    """Text safe to put in a page: lone surrogates become U+FFFD, then HTML-escaped."""
    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return html.escape(text, quote=True)


def marked(text: str) -> str:
    """Output text as pane HTML: the real characters, each whitespace or control run wrapped in a
    `.ws` span whose data-show holds its visible form (CSS draws it over them)."""
    out, at = [], 0
    for m in _INVISIBLE.finditer(text):
        out.append(clean(text[at:m.start()]))
        run = m.group()
        nl = " nl" if run == "\n" else ""
        out.append(f'<span class="ws{nl}" data-show="{clean(visible(run))}">{clean(run)}</span>')
        at = m.end()
    out.append(clean(text[at:]))
    return "".join(out)


def tip(event) -> str:
    """The popover's text: the token as drawn, its id, then engine/analysis/explain.py's explanation."""
    if not hasattr(event, "token_id"):
        head = ""
    elif event.piece or event.kind == "rejected":
        head = f"'{visible(event.piece)}'  id {int(event.token_id)}"
    else:   # an output token that ends inside a character: the character shows with the next token
        head = f"part of a character (shown whole with the next token)  id {int(event.token_id)}"
    return (head + "\n" if head else "") + tooltip(event)


PICTURE_ROWS = 8     # tokens drawn in a position's p-and-q picture


def picture(event) -> str:
    """The numbers of a judged token's p-and-q picture as JSON, for assets/page.js to draw in the popover
    ("" where the event has none). Token texts travel as data and are set as text, never as HTML:
        rows     [visible token, p, q or null, mark] for the most likely tokens under p or q, and always
                 the token this event is about; mark "draft" (the judged draft), "drawn" (a correction
                 or bonus drawn there) or ""
        overlap  sum over the vocabulary of min(p, q): the chance the exact rule keeps a draft from q
        accept, u  min(1, p/q) (or the rule's keep probability) and the uniform draw; null when greedy
        kind     the event's kind; rule the rule that judged it"""
    rows = getattr(event, "picture", None)
    if not rows:
        return ""
    mark = "draft" if event.kind in ("accepted", "rejected") else "drawn"
    chosen = [r for r in rows if r[0] == event.token_id]
    others = [r for r in rows if r[0] != event.token_id]
    # the most likely under p or under q first, then this event's own token wherever it falls
    keep = sorted(others, key=lambda r: -max(r[2], r[3] or 0.0))[:PICTURE_ROWS - len(chosen)] + chosen
    keep.sort(key=lambda r: (-r[2], -(r[3] or 0.0)))
    data = {"kind": event.kind, "rule": _rule(event), "overlap": event.overlap,
            "accept": getattr(event, "accept_prob", None), "u": getattr(event, "u", None),
            "rows": [[visible(piece) or f"id {int(tid)}", round(p, 5), None if q is None else round(q, 5),
                      mark if tid == event.token_id else ""] for tid, piece, p, q in keep]}
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _rule(event) -> str | None:
    """The rule that judged the position, for the picture's caption. A correction carries none: a greedy
    one is the target's own argmax (its probability is p itself, as engine/analysis/explain.py reads it),
    so its caption says greedy, as its details do, not the residual a sampled correction is drawn from."""
    rule = getattr(event, "rule", None)
    if rule is None and event.kind == "resampled" and event.top_residual and abs(event.prob - event.p) < 1e-9:
        return "argmax"
    return rule


def token_span(event, thrown: int = 0) -> str:
    """One token's span; `thrown` > 0 on a correction: the drafts thrown away where it stands (the Text
    view shows that count beside the corrected word, and opens them from it: assets/page.js)."""
    data_kind, css = KINDS[event.kind]
    text = clean(visible(event.piece)) if event.kind == "rejected" else marked(event.piece)
    round_attr = f' data-round="{int(event.round)}"' if hasattr(event, "round") else ""
    thrown_attr = f' data-thrown="{int(thrown)}"' if thrown > 0 else ""
    pic = picture(event)
    pic_attr = f' data-pic="{clean(pic)}"' if pic else ""
    return (f'<span class="{css}" data-kind="{data_kind}"{round_attr}{thrown_attr} tabindex="0" '
            f'data-tip="{clean(tip(event))}"{pic_attr}>{text}</span>')


def fragment(event, thrown: int = 0) -> str:
    """The HTML one event appends to its lane's pane ("" for events that show nothing); `thrown` as
    token_span's."""
    if event.kind == "drafted":
        return f'<span class="round-mark" data-round="{int(event.round)}"></span>'
    if event.kind in KINDS:
        return token_span(event, thrown)
    return ""


def _chip_tip(piece: str, token_id: int, q: float) -> str:
    return f"'{visible(piece)}'  id {int(token_id)}\ndrafted, not judged yet\nq (draft) = {q:.3f}"


def draft_chips(event) -> str:
    """The drafted tokens of one round as pending chips (step mode), escaped."""
    chips = "".join(f'<span class="tok tok-pending" data-kind="drafted" tabindex="0" '
                    f'data-tip="{clean(_chip_tip(p, i, q))}">{clean(visible(p))}</span>'
                    for p, i, q in zip(event.pieces, event.token_ids, event.q))
    return f'<span class="round-mark" data-round="{int(event.round)}"></span>{chips}'


PANE_HINTS = {
    "spec": "Press “Run the race”: the speculative lane's tokens appear here, colored by verdict.",
    "base": "Plain decoding of the same prompt appears here, one target pass per token.",
    "step": "Click “Next round” to decode the prompt and reveal it one round at a time.",
}


def status_html(text: str, kind: str = "info") -> str:
    """A tab's status line (the race's, the checks'): `kind` is one of a fixed set of CSS classes."""
    return f'<div class="status status-{kind}">{clean(text)}</div>'


def figures_line(text: str) -> str:
    """A line of figures measured on this machine (the offered k's, the calculator's), escaped."""
    return f'<div class="figures-line">{clean(text)}</div>'


def hint(which: str) -> str:
    """What an empty pane says (fixed text, no model output)."""
    return f'<p class="pane-hint">{clean(PANE_HINTS[which])}</p>'


_VERDICT_KEYS = (
    '<span class="tok tok-accepted">accepted</span> draft token kept '
    '<span class="tok tok-rejected">rejected</span> draft token thrown away '
    '<span class="tok tok-resampled">resampled</span> the target\'s correction '
    '<span class="tok tok-bonus">bonus</span> extra target token after a full round '
)
_READING_KEYS = (
    '<span class="round-mark"></span> round boundary · '
    '<span class="ws-key">· space ⏎ newline → tab &lt;0xE2&gt; part of a character</span> · '
    'hover, <span class="say-click">click</span><span class="say-tap">tap</span> or focus a token for its numbers'
)
LEGEND = f'<div class="legend">{_VERDICT_KEYS}{_READING_KEYS}</div>'
# Step mode shows the round's drafts before their verdicts: the dashed chips get their key too.
STEP_LEGEND = ('<div class="legend"><span class="tok tok-pending">drafted</span> waiting for the target\'s verdict '
               f'{_VERDICT_KEYS}{_READING_KEYS}</div>')
