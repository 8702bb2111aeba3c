"""A finished tree race's own box, under the ledger: did branching pay, and how often each choice was kept.

The sentence is engine/analysis/tree_price.against_model's: the tree as this race measured it (its
speedup is the headline's), against the chain of the same depth that the tree's own first choices
predict, priced from the pair's cost model (engine/analysis/cost_model.py: c(depth), v(depth + 1)).
Where a figure it needs is noise, or the pair has no cost model, there is no verdict, and the box says
why and what it still needs. The table is the lane's
`Done.stats.by_choice`: per depth, how often the draft's first, second, ... choice was kept where the
target judged it, read as app/run_records.py's ChoiceRow records. Every number comes from the engine;
every text is escaped.
"""
from __future__ import annotations

from ..app.run_records import ChoiceRow, as_dicts
from ..engine.analysis import tree_ledger, tree_price
from ..engine.metrics.measures import LaneTally
from .render import clean
from .tree_view import rank

VERDICT_CLASS = {"tree paid": "verdict-faster", "about even": "verdict-about-even", "chain paid": "verdict-slower",
                 "unmeasured": "verdict-unmeasured"}


def choice_table(by_choice: tuple[ChoiceRow, ...], widths) -> str:
    """Per depth (rows) and choice (columns): accepted / judged and the rate; '—' where never judged."""
    if not by_choice:
        return ""
    cells = {(r.depth, r.choice): r for r in by_choice}
    depth = max(len(widths or ()), max(r.depth for r in by_choice))
    width = max(max(widths or (1,)), max(r.choice for r in by_choice) + 1)
    head = "".join(f"<th>{rank(c)} choice</th>" for c in range(width))
    rows = []
    for d in range(1, depth + 1):
        tds = []
        for c in range(width):
            r = cells.get((d, c))
            if r is None:
                tds.append('<td class="none">—</td>')
            else:
                tip = (f"depth {d}, the draft's {rank(c)} choice: kept {r.accepted} of the {r.judged} "
                       f"times the target judged it")
                tds.append(f'<td tabindex="0" data-tip="{clean(tip)}" data-rate="{r.rate:.4f}">'
                           f'{r.rate:.0%} <small>{r.accepted}/{r.judged}</small></td>')
        rows.append(f"<tr><th>depth {d}</th>{''.join(tds)}</tr>")
    return (f'<table class="choice-table" id="tree-choices"><caption>Kept where judged, per depth: the draft\'s '
            f'first choice, and the later ones a chain never offers</caption><thead><tr><th></th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def tree_box_html(spec: LaneTally, plain: LaneTally, tree, by_choice: tuple[ChoiceRow, ...], model,
                  stopped: bool = False, speedup: float | None = None) -> str:
    """The box: the tree-vs-chain sentence (or why there is none), then the per-depth table. `model`: the
    pair's cost model (None where the pair has none: the chain is then not priced); `speedup`: the race's
    measured speedup (its ledger's: the headline's and the strip's figure)."""
    shape = ",".join(str(int(w)) for w in tree)
    cmp = tree_price.against_model(spec, plain, len(tree), as_dicts(by_choice), model, speedup)
    verdict, sentence = cmp.verdict, cmp.cause
    if model is None:
        sentence += " The table shows what the second choices bought."
    if stopped:
        sentence = "Stopped before the end: the figures cover the part that ran. " + sentence
    label = {"tree paid": "Tree paid", "about even": "About even", "chain paid": "Chain paid"}.get(verdict, "No verdict")
    return (f'<div class="tree-box ledger {VERDICT_CLASS.get(verdict, "verdict-unmeasured")}" id="tree-box" '
            f'data-verdict="{clean(verdict)}"><div class="verdict-line"><span class="verdict-badge">{clean(label)}'
            f'</span>The tree {clean(shape)} against a chain of the same depth</div>'
            f'<p class="cause" id="tree-why">{clean(sentence)}</p>{choice_table(by_choice, tree)}</div>')


def tree_why(spec: LaneTally, plain: LaneTally, depth: int) -> str | None:
    """The race's "Why:" for a token tree, from the lane's own figures (tree_ledger.side): tokens a pass
    against what a round cost, drafting (one draft pass a depth, each over that depth's nodes) and the one
    verify pass over every node. The chain's sentence priced "draft steps at c" one per draft, which a
    tree does not take. None where too little was measured (the ledger's own sentence then stands)."""
    t = tree_ledger.side(spec, plain)
    if None in (t.tau, t.pass_tokens, t.v, t.draft, t.round_cost):
        return None
    return (f"each target pass gave {t.tau:.2f} tokens, and a round cost {t.round_cost:.2f} plain steps: drafting "
            f"the tree took {t.draft:.2f} ({depth} draft passes, one a depth), then one verify pass over "
            f"{t.pass_tokens:.3g} tokens cost v = {t.v:.2f}; so the tree wrote {t.tau / t.round_cost:.2f} tokens "
            f"in the time plain decoding writes one.")
