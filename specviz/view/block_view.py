"""Step mode's picture of one block-rule round: the joint test drawn for the whole block.

Block verification (engine/loop/block.py) tests every prefix of the drafted block at once: prefix i
has weight w_i (the target mass it keeps over the draft's), its test h_i and its draw u_i, and the
round keeps the longest prefix whose test passed, read from the end backwards. This draws one row per
draft from the round's Drafted event and RoundEnd.block, marks the rows tested after the deciding one,
the deciding one and the kept prefix, and says in one sentence which prefix was kept. Text escaped.
"""
from __future__ import annotations

from ..engine.analysis.explain import plural, shown
from .render import clean

BLOCK_LEGEND = ("Block rule: every prefix of the drafted block gets a joint test h at once; reading from the "
                "last draft back, the first prefix whose draw u lands below its h is kept whole.")


def kept_prefix(block: list) -> int:
    """tau = max{i : u_i < h_i}, 0 if none: the prefix the joint test kept (engine/loop/block.py)."""
    return max((i + 1 for i, (_, h, u) in enumerate(block) if u < h), default=0)


def block_html(pieces: list[str], block: list) -> str:
    """The joint test as a table: draft, w, h, u, and what reading from the end made of it."""
    tau = kept_prefix(block)
    rows = []
    for i in reversed(range(len(block))):
        w, h, u = block[i]
        if i + 1 > tau:
            verdict, cls = "u ≥ h: not this prefix", "block-miss"
        elif i + 1 == tau:
            verdict, cls = f"u < h: keep the first {plural(tau, 'draft')}", "block-pass"
        else:
            verdict, cls = "kept with the prefix above (not tested further)", "block-kept"
        piece = pieces[i] if i < len(pieces) else ""
        rows.append(f'<tr class="{cls}"><td>{i + 1}</td><td><code class="tokcode">{clean(shown(piece))}</code></td>'
                    f"<td>{w:.3f}</td><td>{h:.3f}</td><td>{u:.3f}</td><td>{clean(verdict)}</td></tr>")
    if tau == 0:
        rows.append('<tr class="block-pass"><td>0</td><td>—</td><td>1.000</td><td>1</td><td>—</td>'
                    "<td>no prefix passed: keep none, correct the first position</td></tr>")
    return ('<table class="block-test" data-kept="{0}"><tr><th>prefix</th><th>draft</th><th>weight w</th>'
            '<th>joint test h</th><th>draw u</th><th>read from the end</th></tr>{1}</table>'
            ).format(tau, "".join(rows))


def block_sentence(block: list) -> str:
    """One sentence on the round's joint test."""
    tau, k = kept_prefix(block), len(block)
    if tau == 0:
        return (f"Block rule: no prefix of the {plural(k, 'draft')} passed its joint test (u ≥ h at every one): "
                f"none is kept, and the next token comes from norm(max(0, p − q)) at the first position.")
    if tau == k:
        return (f"The whole block of {plural(k, 'draft')} passed its joint test (u < h = w at the last draft): all "
                f"kept, and the target adds a bonus token.")
    return (f"Block rule: the joint tests of the {k - tau} longest prefixes failed (u ≥ h); the prefix of "
            f"{plural(tau, 'draft')} passed, so it is kept whole and the next token comes from the block's "
            f"residual norm(max(0, w·p − q)) there.")
