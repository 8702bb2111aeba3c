"""Chain against tree on the same prompts (`python -m specviz bench --tree 2,2,1,1`).

For every prompt three methods run in rotating order after a warm-up each, as the suite's
(runner.py): plain decoding, the chain of the tree's depth (k = depth) and the tree. Their tallies are
pooled over prompts and repeats, and each speculative lane is reported with its tokens per target
pass, its measured v (a verify pass over drafts + 1 or nodes + 1 tokens, in plain steps), its
drafting cost a round and its speedup; the tree ledger (engine/analysis/tree_ledger.py) says in one
sentence whether the tree paid against the chain here, and why. Its verdict judges the tree's speed over
the chain's with an interval from these runs (race_spread.spread): the range of that ratio over every
rotation of every prompt, or with a single one, the spread of the two runs' own rounds. v(n) is also
timed alone (calibrate.measure_pass_v) for the two pass sizes, as a check on the lanes' own figures.
"""
from __future__ import annotations

from dataclasses import replace

from ..app.run_records import choice_rows
from ..engine import SpecConfig
from ..engine.analysis import calibrate, race_spread, tree_ledger
from ..engine.loop.config import planned_nodes
from ..engine.metrics import measures
from ..runtime.pair import ModelPair
from .prompts import prompt_ids
from .runner import specviz_run
from .suite import machine


def run_tree_bench(pair: ModelPair, prompts: list[dict], cfg: SpecConfig, tree: tuple[int, ...], repeats: int,
                   log=print) -> dict:
    depth = len(tree)
    chain = replace(cfg, k=depth, tree=None, tree_budget=0)
    configs = {"plain": chain, "chain": chain, "tree": replace(cfg, k=depth, tree=tree)}
    names = list(configs)
    tallies = {name: [] for name in names}
    ratios, first = [], None       # the tree's speed over the chain's, each rotation; the first rotation's runs
    choices = measures.ChoiceTally()
    for i, prompt in enumerate(prompts):
        ids = prompt_ids(pair, prompt)
        for name in names:                                         # warm-up
            specviz_run(pair, ids, configs[name], speculative=name != "plain")
        for r in range(repeats):
            order = names[r % len(names):] + names[: r % len(names)]
            timed = {}
            for name in order:
                timing = timed[name] = specviz_run(pair, ids, configs[name], speculative=name != "plain")
                tallies[name].append(timing.stats.tally)
                if name == "tree":
                    for row in choice_rows(timing.stats.by_choice):
                        choices.judged[(row.depth, row.choice)] += row.judged
                        choices.accepted[(row.depth, row.choice)] += row.accepted
            if timed["tree"].rate and timed["chain"].rate:
                ratios.append(timed["tree"].rate / timed["chain"].rate)
            first = first or timed
        log(f"prompt {i + 1}/{len(prompts)} done")
    pooled = {name: measures.pool(ts) for name, ts in tallies.items()}
    cmp = tree_ledger.compare(pooled["tree"], pooled["chain"], pooled["plain"], depth, choices.rows(),
                              interval=tree_interval(pooled, ratios, first))
    alone = calibrate.measure_pass_v(pair, [depth + 1, planned_nodes(configs["tree"]) + 1])
    nodes = planned_nodes(configs["tree"])
    return {"machine": machine(), "tree": list(tree), "tree_budget": cfg.tree_budget, "depth": depth, "nodes": nodes,
            "prompts": len(prompts), "repeats": repeats, "temperature": cfg.temperature,
            "max_new_tokens": cfg.max_new_tokens, "comparison": cmp.to_dict(), "by_choice": choices.rows(),
            "v_alone": {str(n): v for n, v in alone.items()},
            "plain_tokens_per_s": measures.rate(pooled["plain"].tokens, pooled["plain"].elapsed_s)}


def tree_interval(pooled: dict, ratios: list[float], first: dict | None) -> tuple[float, float] | None:
    """The interval of the tree's speed over the chain's (race_spread.spread): the rotations' range, or with
    one rotation its two runs' rounds (the tree's and the chain's, each a unit of work)."""
    tree, chain = (measures.lane_speedup(pooled[name], pooled["plain"]) for name in ("tree", "chain"))
    ratio = tree / chain if tree and chain else None
    units = (first["tree"].units, first["chain"].units) if first else None
    return race_spread.spread(ratio, ratios, units if units and None not in units else None)


def tree_table(result: dict) -> str:
    """The result as a small table and the ledger's sentence."""
    cmp = tree_ledger.TreeVsChain(**{**result["comparison"],
                                     "tree": tree_ledger.Side(**result["comparison"]["tree"]),
                                     "chain": tree_ledger.Side(**result["comparison"]["chain"])})

    def f(x, spec=".2f"):
        return "-" if x is None else format(x, spec)

    shape = ",".join(map(str, result["tree"]))
    budget = f", budget {result['tree_budget']}" if result.get("tree_budget") else ""
    lines = [f"tree {shape}{budget} ({result['nodes']} nodes) against the chain k = {result['depth']}, "
             f"{result['prompts']} prompts x {result['repeats']} repeats, temperature {result['temperature']:g}",
             f"{'lane':<8}{'tokens/pass':>12}{'pass tokens':>12}{'v':>7}{'v alone':>9}{'draft/round':>12}{'speedup':>9}"]
    for name, s, n in (("chain", cmp.chain, result["depth"] + 1), ("tree", cmp.tree, result["nodes"] + 1)):
        lines.append(f"{name:<8}{f(s.tau):>12}{f(s.pass_tokens, '.3g'):>12}{f(s.v):>7}"
                     f"{f(result['v_alone'].get(str(n))):>9}{f(s.draft):>12}{f(s.speedup):>8}x")
    lines.append("per depth (tree): " + "; ".join(f"d{r['depth']} choice {r['choice'] + 1}: {r['accepted']}/{r['judged']}"
                                                  for r in result["by_choice"]))
    ratio = cmp.tree.speedup / cmp.chain.speedup if cmp.tree.speedup and cmp.chain.speedup else None
    spread = (f", the runs' range {cmp.interval[0]:.2f}-{cmp.interval[1]:.2f}x" if cmp.interval else "")
    lines.append(f"verdict: {cmp.verdict} (the tree at {f(ratio)}x the chain's speed{spread})")
    lines.append(cmp.cause)
    return "\n".join(lines)
