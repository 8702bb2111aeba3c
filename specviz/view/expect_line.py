"""The line above the race that tells a visitor what to expect from the pair chosen in the menu.

One calm line from the draft's expect.json (app/pair_expect.py words it): its acceptance on chat and on
code prompts it never saw, with the speedups when a quiet machine measured them, and a "source" fold that
names the file, the prompts, the machine, the date and the command (tap or click: nothing is hover-only).
The figures ride as data attributes too (`data-pair`, `data-chat`, `data-code`), which the browser test
reads. Everything that reaches the HTML is escaped; a pair without figures shows nothing.
"""
from __future__ import annotations

from ..app.pair_expect import expected, sentence, source
from .render import clean


def expect_html(preset) -> str:
    """The line for `preset` (a Preset or None), or "" when it has no current figures."""
    record = expected(preset)
    if record is None:
        return ""
    figures = "".join(f' data-{kind}="{clean(format(f["acceptance"], ".4f"))}"'
                      for kind, f in record["kinds"].items())
    origin = source(record, preset)
    lines = "".join(f"<span>{clean(line)}</span>" for line in origin)
    return (f'<div class="pair-expect" data-pair="{clean(preset.key)}"{figures}>'
            f'<span class="pe-line">{clean(sentence(record))}</span> '
            f'<details class="pe-source"><summary title="{clean(" ".join(origin))}">source</summary>'
            f'<div class="pe-origin">{lines}</div></details></div>')
