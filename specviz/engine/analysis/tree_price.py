"""A tree race against the chain it did not race: the tree as measured, the chain from the cost model.

Where only the tree raced plain decoding (the page, `run --tree`), the chain of the same depth is
estimated: its tokens a pass from the tree's own first choices (tree_ledger.estimate_chain), its round
from the pair's cost model at that depth (cost_model.py: c(depth), v(depth + 1), the medians of the
load-time timing and every race). The tree is this race's own: its tokens a pass, its pass's v and its
measured speedup, which is the headline's, so the box never prints a tree speed the race did not run.
The chain's formula speedup is charged the same share of time outside the passes the tree's lane
spent (measured speedup / formula speedup of the tree), so both sides are priced alike.

No verdict where a figure it needs is noise: the tree's own pass timed cheaper than one plain step, or
the chain's c and v not yet settled in the cost model (the sentence says what is still needed).
"""
from __future__ import annotations

from dataclasses import replace

from ..metrics import measures as m
from ..metrics.theory import MIN_V
from . import tree_ledger
from .tree_ledger import TreeVsChain


def against_model(tree: m.LaneTally, plain: m.LaneTally, depth: int, by_choice: list[dict] | None,
                  model, speedup: float | None = None) -> TreeVsChain:
    """The tree lane against the chain of its depth that `model` (a CostModel, or None) prices. `speedup`:
    the race's measured speedup as its ledger and headline give it (like for like where the lanes wrote
    different lengths, measures.compared_speedup); without it, the whole lanes' rate ratio."""
    t = tree_ledger.side(tree, plain)
    if speedup is not None:
        t = replace(t, speedup=speedup)
    second = tree_ledger.second_choice_rate(by_choice)
    chain = tree_ledger.Side(None, depth + 1, None, None, None, None)

    def none(why: str) -> TreeVsChain:
        return TreeVsChain(depth, t, chain, second, "unmeasured", why)

    if None in (t.tau, t.v, t.round_cost, t.speedup):
        return none("Not enough of a race to tell: a lane made no tokens or measured no time.")
    if t.v < MIN_V:
        return none(f"No verdict: this race timed the tree's pass over {t.pass_tokens:.3g} tokens at v = {t.v:.2f}, "
                    f"less than one plain step, which no pass over more than one token costs: timing noise. "
                    f"Repeat the race on a quieter machine to say.")
    if model is None:
        return none(f"Against a chain of depth {depth}: not priced here, because this machine's costs were not "
                    f"measured for this pair.")
    c_fig, v_fig = model.chain(depth)
    if c_fig.value is None or v_fig.value is None:
        return none(f"No verdict against a chain of depth {depth}: this machine has not timed a chain that deep "
                    f"for this pair yet (a host that times its pairs at load does; three chain races at k = {depth} "
                    f"do too). The table shows what the second choices bought.")
    if not (c_fig.settled and v_fig.settled):
        unsettled = [f for f in (c_fig, v_fig) if not f.settled]
        more = max(f.needs() for f in unsettled)
        need = (f"{more} more race{'s' if more != 1 else ''} at k = {depth} to say" if more and
                not any(f.noise for f in unsettled) else "repeat on a quieter machine to say")
        return none(f"No verdict against a chain of depth {depth}: its costs here are still inside their noise "
                    f"({'; '.join(f.words() for f in (c_fig, v_fig))}): {need}.")
    est = tree_ledger.estimate_chain(by_choice, depth, c_fig.value, v_fig.value)
    if est.tau is None:
        return none(f"No chain to estimate: the draft's first choice was never judged at some depth up to "
                    f"{depth} (a short run, or a draft wrong early in every round).")
    outside = t.speedup / (t.tau / t.round_cost)        # the tree lane's measured share of its formula
    chain = replace(est, speedup=est.speedup * outside)
    cmp = tree_ledger.compare_sides(t, chain, depth, second)
    if cmp.verdict == "unmeasured":
        return cmp
    return replace(cmp, cause=cmp.cause.replace("the chain's", "an estimated chain's", 1)
                   + f" (The tree is this race's own; the chain is estimated from the tree's first choices and this "
                     f"machine's cost model at depth {depth} (across races: {c_fig.words()}, {v_fig.words()}), and charged "
                     f"the same share of time outside the passes as the tree's lane.)")
