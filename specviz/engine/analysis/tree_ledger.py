"""Did branching pay? A token tree set against the chain of the same depth, with one sentence saying why.

Both lanes are priced in plain target steps (the plain lane's seconds per token, measures.py), a
round at a time:
    round cost = draft seconds a round / plain step + v(n),   v(n) = a verify pass over n tokens
where n is depth + 1 for the chain and nodes + 1 for the tree, each v(n) measured in its own lane
(measures.verify_ratio; the bench may also show calibrate.measure_pass_v). A round yields
tau tokens (tokens per target pass), so a lane gains about tau / round cost over plain decoding, and
the tree pays when its extra tokens a pass outweigh what the wider pass (and the wider draft steps)
cost. On a GPU at batch 1 v(n) stays near 1 for small n, so the extra tokens come almost free; on a
CPU v grows with n and eats them (SpecInfer, Miao et al. 2024; Sequoia, Chen et al. 2024, picks the
shape for the hardware). The verdict is on the measured speedups, judged as a race's is (verdict.py): the
tree's speed over the chain's against 1.0, with an interval where the caller has one (the benchmark's runs,
race_spread.spread), else the even band alone; the cause names the bigger side.
Where only the tree raced plain decoding (the page), tree_price.py sets it against the chain the
tree's own first choices and the pair's cost model (cost_model.py) predict.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..metrics import measures as m
from ..metrics.theory import priced_v
from .verdict import EVEN_BAND, verdict

TREE_WORDS = {"faster": "tree paid", "slower": "chain paid", "about even": "about even"}   # verdict.py's, for a tree


@dataclass(frozen=True)
class Side:
    """One lane's round, in plain steps (None where unmeasured)."""
    tau: float | None          # tokens per target pass
    pass_tokens: float | None  # tokens a verify pass fed after the context: nodes (or drafts) + 1
    v: float | None            # that pass, with acceptance, in plain steps: v(n)
    draft: float | None        # a round's drafting, in plain steps
    round_cost: float | None   # draft + priced v(n)
    speedup: float | None      # measured, against the plain lane


@dataclass(frozen=True)
class TreeVsChain:
    depth: int
    tree: Side
    chain: Side
    second_choice_rate: float | None   # kept / judged over every later choice (choice > 0), all depths
    verdict: str                       # "tree paid", "about even", "chain paid" or "unmeasured"
    cause: str                         # one sentence
    interval: tuple | None = None      # (low, high) of the tree's speed over the chain's, where known

    def to_dict(self) -> dict:
        return asdict(self)


def side(spec: m.LaneTally, plain: m.LaneTally) -> Side:
    per_step = m.rate(plain.tokens, plain.elapsed_s)
    v = m.verify_ratio(spec, plain)
    draft = m.per_plain_step(spec.draft_s, spec.rounds, per_step)
    cost = draft + priced_v(v) if None not in (draft, v) else None
    return Side(tau=m.mean_acceptance_length(spec), pass_tokens=(spec.drafted / spec.rounds + 1) if spec.rounds else None,
                v=v, draft=draft, round_cost=cost, speedup=m.lane_speedup(spec, plain))


def second_choice_rate(by_choice: list[dict] | None) -> float | None:
    rows = [r for r in by_choice or [] if r["choice"] > 0]
    judged = sum(r["judged"] for r in rows)
    return sum(r["accepted"] for r in rows) / judged if judged else None


def compare(tree: m.LaneTally, chain: m.LaneTally, plain: m.LaneTally, depth: int,
            by_choice: list[dict] | None = None, interval: tuple | None = None) -> TreeVsChain:
    """The tree lane against the chain lane of the same depth (k = depth), both raced against plain;
    `interval`: (low, high) of the tree's speed over the chain's from the runs themselves."""
    return compare_sides(side(tree, plain), side(chain, plain), depth, second_choice_rate(by_choice), interval)


def first_choice_rates(by_choice: list[dict] | None, depth: int) -> list[float] | None:
    """a1(d) for d = 1..depth: how often the draft's first choice was kept where it was judged at depth d
    (None when some depth's first choice was never judged)."""
    rows = {r["depth"]: r for r in by_choice or [] if r["choice"] == 0}
    if any(d not in rows or not rows[d]["judged"] for d in range(1, depth + 1)):
        return None
    return [rows[d]["accepted"] / rows[d]["judged"] for d in range(1, depth + 1)]


def estimate_chain(by_choice: list[dict] | None, depth: int, c: float | None, v: float | None) -> Side:
    """The chain of the same depth on the same positions, when no chain lane ran (a race of the tree
    against plain decoding): its tokens a pass from the tree's own first choices, where a chain keeps
    going while each depth's first choice is right, tau = 1 + sum_d prod_{i <= d} a1(i); its round from
    the machine's costs (calibrate.py: c a draft step, v = v(depth + 1)); its speedup the formula's
    tau / round (no time outside the passes: an estimate, labelled so)."""
    rates = first_choice_rates(by_choice, depth)
    if rates is None or None in (c, v):
        return Side(None, depth + 1, v, None, None, None)
    tau, run = 1.0, 1.0
    for a in rates:
        run *= a
        tau += run
    cost = depth * c + priced_v(v)
    return Side(tau=tau, pass_tokens=depth + 1, v=v, draft=depth * c, round_cost=cost, speedup=tau / cost)


def compare_sides(t: Side, c: Side, depth: int, second: float | None, interval: tuple | None = None) -> TreeVsChain:
    if None in (t.speedup, c.speedup, t.tau, c.tau, t.round_cost, c.round_cost):
        return TreeVsChain(depth, t, c, second, "unmeasured", "Not enough of a race to tell: a lane made no tokens "
                           "or measured no time.")
    # The tree's speed over the chain's, judged as a race's speedup is: "tree paid" only where the whole
    # interval lies above 1.0, "about even" where it holds 1.0.
    word = TREE_WORDS[verdict(t.speedup / c.speedup, interval)[0]]
    return TreeVsChain(depth, t, c, second, word, _cause(word, depth, t, c, second),
                       tuple(interval) if interval is not None else None)


def _cause(verdict: str, depth: int, t: Side, c: Side, second: float | None) -> str:
    gave = f"its passes gave {t.tau:.2f} tokens against the chain's {c.tau:.2f} at depth {depth}"
    # "v" is the tree's own pass (this race's, as in its why); the chain's pass is given by its figure alone.
    pass_price = (f"a pass over {t.pass_tokens:.3g} tokens cost v = {t.v:.2f} plain steps against "
                  f"{c.v:.2f} for the chain's over {c.pass_tokens:.3g}")
    rounds = f"a round {t.round_cost:.2f} plain steps against {c.round_cost:.2f}"
    speeds = f"{t.speedup:.2f}x against {c.speedup:.2f}x"
    seconds = ("" if second is None else
               f" (the draft's later choices were the target's token {100 * second:.0f}% of the times they were judged)")
    if verdict == "tree paid":
        return f"The tree paid here: {gave}{seconds}, more than its wider pass took back ({pass_price}; {rounds}), so {speeds}."
    head = "The tree and the chain came out about even" if verdict == "about even" else "The tree did not pay here"
    if t.tau <= c.tau * (1 + EVEN_BAND):
        return (f"{head}: the draft's other choices were rarely the target's token{seconds}, so {gave}, "
                f"while {pass_price}; {speeds}.")
    # More tokens a pass, but the round cost more: the width's price (the wider verify pass) and the
    # drafting's (the tree's draft passes against the chain's steps), each with its own figure, bigger first.
    extra_pass, extra_draft = priced_v(t.v) - priced_v(c.v), t.draft - c.draft
    width = f"the wider pass cost {extra_pass:.2f} plain steps more a round ({pass_price})"
    drafting = (f"drafting the tree cost {extra_draft:.2f} more ({t.draft:.2f} plain steps a round against "
                f"{c.draft:.2f}: its draft passes feed each depth's nodes, a slower path than the chain's steps)"
                if extra_draft > 0 else "")
    why = " and ".join(x for x in ((width, drafting) if extra_pass >= extra_draft else (drafting, width)) if x)
    return f"{head}: {gave}{seconds}, but {why}, so {rounds} ate the gain; {speeds}."


def text_lines(cmp: TreeVsChain) -> list[str]:
    """The comparison as plain lines (CLI, bench): the sentence, then each lane's figures."""
    def fmt(x, spec=".2f"):
        return "-" if x is None else format(x, spec)

    def row(name: str, s: Side) -> str:
        return (f"  {name:<6} tokens a pass {fmt(s.tau)}, pass over {fmt(s.pass_tokens, '.3g')} tokens: v = {fmt(s.v)}, "
                f"drafting {fmt(s.draft)} plain steps a round, round {fmt(s.round_cost)}, speedup {fmt(s.speedup)}x")
    return [f"tree vs chain: {cmp.cause}", row("tree", cmp.tree), row("chain", cmp.chain)]
