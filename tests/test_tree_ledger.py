"""Did the tree pay against the chain of its depth: the comparison's figures and its one sentence, from
tallies made up so each cause is the true one; and the CLI's --tree for run and bench."""
import json

import pytest

from specviz.engine.analysis.tree_ledger import compare, second_choice_rate, text_lines
from specviz.engine.metrics.measures import LaneTally

from .helpers import cli

PLAIN = LaneTally(tokens=100, elapsed_s=10.0, target_s=10.0)          # a plain step: 0.1 s


def lane(tokens, rounds, drafted, draft_s, verify_s) -> LaneTally:
    return LaneTally(rounds=rounds, drafted=drafted, tokens=tokens, draft_s=draft_s, verify_s=verify_s,
                     elapsed_s=draft_s + verify_s)


def test_tree_pays_when_its_extra_tokens_cost_little():
    # Chain k = 4: 25 rounds, 2.5 tokens a pass, pass v = 1.2, drafting 0.4 plain steps a round.
    chain = lane(100, 40, 160, 1.6, 4.8)
    # Tree (14 nodes): 3.5 tokens a pass; its pass over 15 tokens costs v = 1.3 (a GPU-like machine).
    tree = lane(100, 29, 29 * 14, 1.45, 29 * 0.13)
    cmp = compare(tree, chain, PLAIN, depth=4, by_choice=[{"depth": 1, "choice": 1, "judged": 10, "accepted": 4}])
    assert cmp.verdict == "tree paid"
    assert cmp.tree.tau == pytest.approx(100 / 29) and cmp.chain.tau == pytest.approx(2.5)
    assert cmp.tree.v == pytest.approx(1.3) and cmp.chain.v == pytest.approx(1.2)
    assert cmp.tree.pass_tokens == pytest.approx(15) and cmp.chain.pass_tokens == pytest.approx(5)
    assert cmp.tree.speedup > cmp.chain.speedup
    assert cmp.cause.startswith("The tree paid here") and "40%" in cmp.cause and "v = 1.30" in cmp.cause
    assert cmp.second_choice_rate == pytest.approx(0.4)


def test_tree_loses_when_the_wider_pass_costs_more_than_it_wins():
    chain = lane(100, 40, 160, 1.6, 4.8)
    tree = lane(100, 33, 33 * 14, 1.6, 33 * 0.3)           # 3.0 tokens a pass, but v = 3.0 (a CPU)
    cmp = compare(tree, chain, PLAIN, depth=4)
    assert cmp.verdict == "chain paid"
    assert "did not pay" in cmp.cause and "v = 3.00" in cmp.cause and "ate the gain" in cmp.cause


def test_tree_loses_when_second_choices_are_rarely_right():
    chain = lane(100, 40, 160, 1.6, 4.8)
    tree = lane(100, 40, 40 * 14, 2.0, 40 * 0.15)          # no more tokens a pass, a dearer pass
    cmp = compare(tree, chain, PLAIN, depth=4, by_choice=[{"depth": 1, "choice": 1, "judged": 20, "accepted": 1}])
    assert cmp.verdict == "chain paid" and "rarely the target's token" in cmp.cause and "5%" in cmp.cause
    assert len(text_lines(cmp)) == 3 and text_lines(cmp)[0].endswith(cmp.cause)


def test_unmeasured_and_second_choice_rate():
    cmp = compare(LaneTally(), lane(100, 40, 160, 1.6, 4.8), PLAIN, depth=4)
    assert cmp.verdict == "unmeasured"
    assert second_choice_rate(None) is None
    assert second_choice_rate([{"depth": 1, "choice": 0, "judged": 5, "accepted": 5},
                               {"depth": 2, "choice": 1, "judged": 4, "accepted": 1}]) == 0.25


@pytest.mark.slow    # a CLI subprocess
def test_run_takes_a_tree(tiny_dirs):
    pair = ["--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"]]
    r = cli("run", "--prompt", "def add(a, b):", *pair, "--tree", "2,2,1", "--max-new-tokens", "20", "--json")
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    drafted = next(e for e in events if e["kind"] == "drafted")
    assert drafted["parents"][:2] == [-1, -1] and drafted["depths"][:2] == [1, 1]
    assert events[-1]["stats"]["tree"] == [2, 2, 1] and events[-1]["stats"]["by_choice"]
    # The target as its own draft: every depth's first choice is judged, so the chain can be estimated.
    r = cli("run", "--prompt", "def add(a, b):", "--target", tiny_dirs["target"], "--draft", tiny_dirs["target"],
            "--tree", "2,2,1", "--max-new-tokens", "20", "--baseline", "--no-color")
    assert r.returncode == 0, r.stderr
    # Priced from the cost model, or (tiny models' timings on a busy machine) no verdict, saying why.
    assert ("tree vs chain: The tree" in r.stdout and "estimated chain" in r.stdout
            or "tree vs chain: No verdict" in r.stdout and "noise" in r.stdout) and "E/(k c + v)" not in r.stdout
    r = cli("run", "--prompt", "x", *pair, "--tree", "2,x")
    assert r.returncode != 0 and "tree must be whole numbers" in r.stderr and "Traceback" not in r.stderr
    r = cli("run", "--prompt", "x", *pair, "--tree", "2,2", "--fast")
    assert r.returncode != 0 and "token tree" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow    # a benchmark in a subprocess
def test_bench_races_chain_against_tree(tiny_dirs, tmp_path):
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps([{"kind": "code", "text": "def add(a, b):\n    return"}]))
    r = cli("bench", "--target", tiny_dirs["target"], "--draft", tiny_dirs["cut"], "--tree", "2,2,1",
            "--max-new-tokens", "16", "--repeats", "1", "--prompts", str(prompts), "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    cmp = result["comparison"]
    assert result["tree"] == [2, 2, 1] and result["depth"] == 3 and result["nodes"] == 10
    for side in ("tree", "chain"):
        assert cmp[side]["tau"] >= 1 and cmp[side]["v"] > 0 and cmp[side]["speedup"] > 0
    assert cmp["tree"]["pass_tokens"] > cmp["chain"]["pass_tokens"]
    assert cmp["verdict"] in ("tree paid", "about even", "chain paid") and cmp["cause"]
    assert set(result["v_alone"]) == {"4", "11"}


ROWS = [{"depth": 1, "choice": 0, "judged": 10, "accepted": 8}, {"depth": 2, "choice": 0, "judged": 8, "accepted": 4},
        {"depth": 1, "choice": 1, "judged": 2, "accepted": 1}]


def model_with(c: list[float], v: list[float], depth: int = 2):
    """A cost model holding these samples of c(depth) and v(depth + 1)."""
    from specviz.engine.analysis.cost_model import CostModel
    model = CostModel(("p", "cpu", "eager", "m"))
    model.c_samples[depth], model.v_samples[depth + 1] = list(c), list(v)
    return model


def test_chain_estimated_from_the_trees_first_choices():
    from specviz.engine.analysis.tree_ledger import estimate_chain
    from specviz.engine.analysis.tree_price import against_model
    from specviz.engine.metrics.measures import lane_speedup
    chain = estimate_chain(ROWS, 2, c=0.1, v=1.2)
    assert chain.tau == pytest.approx(1 + 0.8 + 0.8 * 0.5)            # keeps going while first choices are right
    assert chain.round_cost == pytest.approx(2 * 0.1 + 1.2) and chain.speedup == pytest.approx(2.2 / 1.4)
    assert estimate_chain(ROWS, 3, c=0.1, v=1.2).tau is None           # depth 3 never judged: no estimate
    steady = model_with([0.1] * 3, [1.2] * 3, depth=3)
    short = against_model(lane(100, 40, 40 * 6, 0.8, 40 * 0.13), PLAIN, 3, ROWS, steady)
    assert short.verdict == "unmeasured" and "never judged" in short.cause
    tree = lane(100, 40, 40 * 6, 0.8, 40 * 0.13)                      # 2.5 tokens a pass, v = 1.3, drafting 0.2
    cmp = against_model(tree, PLAIN, 2, ROWS, model_with([0.1] * 3, [1.2] * 3))
    assert cmp.tree.speedup == lane_speedup(tree, PLAIN)               # the race's own: the headline's figure
    assert cmp.verdict == "tree paid" and "estimated chain" in cmp.cause and "cost model at depth 2" in cmp.cause


def test_the_tree_is_this_races_own_and_the_chain_pays_its_share_of_time_outside():
    """The tree keeps the v and speedup its lane measured (a pass timed alone once read v = 0.87 under a
    race whose why said 1.73); the chain's formula is charged the tree lane's time outside the passes."""
    from specviz.engine.analysis.tree_price import against_model
    tree = LaneTally(rounds=40, drafted=240, tokens=100, draft_s=0.8, verify_s=40 * 0.13, elapsed_s=7.5)
    cmp = against_model(tree, PLAIN, 2, ROWS, model_with([0.1] * 3, [1.2] * 3))
    outside = (100 / 7.5 / 10) / (2.5 / 1.5)                          # measured / formula, the tree lane's
    assert cmp.tree.v == pytest.approx(1.3) and cmp.chain.speedup == pytest.approx(2.2 / 1.4 * outside)


def test_no_verdict_when_the_trees_pass_was_timed_as_noise():
    from specviz.engine.analysis.tree_price import against_model
    noisy_tree = lane(100, 40, 40 * 6, 0.8, 40 * 0.05)                # its pass: v = 0.5 plain steps
    cmp = against_model(noisy_tree, PLAIN, 2, ROWS, model_with([0.1] * 3, [1.2] * 3))
    assert cmp.verdict == "unmeasured" and "timing noise" in cmp.cause and "0.50" in cmp.cause


def test_no_verdict_while_the_chains_costs_are_unsettled_or_noise():
    from specviz.engine.analysis.tree_price import against_model
    tree = lane(100, 40, 40 * 6, 0.8, 40 * 0.13)
    once = against_model(tree, PLAIN, 2, ROWS, model_with([0.1], [1.2]))
    assert once.verdict == "unmeasured" and "2 more races at k = 2 to say" in once.cause
    noisy = against_model(tree, PLAIN, 2, ROWS, model_with([0.1] * 3, [0.5, 1.9, 1.2]))
    assert noisy.verdict == "unmeasured" and "timing noise" in noisy.cause and "quieter machine" in noisy.cause
    assert against_model(tree, PLAIN, 2, ROWS, None).verdict == "unmeasured"
