"""One round for chains and trees: the tree (1, 1, 1, 1) is the chain of k = 4, event for event; trees
run on every path a chain runs on (CUDA graphs' CPU stand-in, the lean draft step, prompt lookup, the
confidence stop, the rules), greedy-identical to generate(); the round reads the device once for a tree
as for a chain; and the drafted events check that they describe a tree."""
import pytest
import torch

from specviz import SpecConfig, speculate
from specviz.engine.loop.events import Drafted
from specviz.runtime import graph_model

from .helpers import N, PROMPTS, last, reference

JUDGED = ("accepted", "rejected", "resampled", "bonus")
TREE_FIELDS = ("node", "choice", "parent")


def rounds_of(events) -> list[list[tuple]]:
    """Each round's judgements and emitted tokens, with everything but the tree's own fields (node, rank,
    parent: None on a chain) and the clock."""
    out: dict[int, list[tuple]] = {}
    for e in events:
        if e.kind in JUDGED:
            record = {k: v for k, v in vars(e).items() if k not in TREE_FIELDS + ("t",)}
            out.setdefault(e.round, []).append(tuple(sorted(record.items(), key=lambda kv: kv[0])))
    return [out[r] for r in sorted(out)]


def same_as_chain(pair, prompt, **settings):
    chain = list(speculate(pair, prompt, SpecConfig(k=4, **settings)))
    tree = list(speculate(pair, prompt, SpecConfig(tree=(1, 1, 1, 1), **settings)))
    assert last(tree).token_ids == last(chain).token_ids
    assert rounds_of(tree) == rounds_of(chain)
    assert [e.drafted for e in tree if e.kind == "round_end"] == [e.drafted for e in chain if e.kind == "round_end"]
    return chain


@pytest.mark.parametrize("settings", [dict(), dict(temperature=1.0, seed=3), dict(temperature=0.7, top_p=0.9, seed=1),
                                      dict(drafter="prompt_lookup"), dict(temperature=1.0, seed=2, rule="typical")],
                         ids=str)
def test_width_one_tree_is_the_chain_of_its_depth(pair, pair_random, settings):
    outcomes = set()
    for p in (pair, pair_random):
        for prompt in PROMPTS:
            outcomes |= {e.kind for e in same_as_chain(p, prompt, max_new_tokens=N, **settings)}
    assert {"accepted", "rejected", "resampled", "bonus"} <= outcomes or settings.get("drafter")


@pytest.mark.slow     # the bundled and the SmolLM2 pairs in fp32
@pytest.mark.parametrize("settings", [dict(), dict(temperature=1.0, seed=5)], ids=str)
def test_width_one_tree_is_the_chain_on_the_real_pairs(real_pair, settings):
    from specviz import load_pair
    bundled = load_pair(device="cpu", dtype="float32")             # the bundled pair
    for p in (bundled, real_pair):
        same_as_chain(p, "Write a haiku about the sea.", max_new_tokens=48, **settings)


@pytest.mark.parametrize("shape", [(2, 2, 1), (3, 1, 1, 1)], ids=str)
def test_trees_on_the_graph_path_equal_generate(pair, shape):
    """CUDA graphs' CPU stand-in: the verify pass of every planned node count is captured once and its
    first replay checked against the eager pass, as a chain's shapes are. The pair's pooled graphs are
    forgotten first: another test's race may have captured and checked these shapes already."""
    graph_model.POOL.forget(pair.target)
    graph_model.POOL.forget(pair.draft)
    for prompt in PROMPTS[:2]:
        done = last(speculate(pair, prompt, SpecConfig(tree=shape, cuda_graphs=True, max_new_tokens=N)))
        assert done.token_ids == reference(pair, prompt)
        assert done.stats.decode_path == "eager replay" and done.stats.graph_check_delta is not None
    checked = {key for bundle in graph_model.POOL.bundles(pair.target) for key in bundle.graphs.checked}
    assert any(key[0] == "tree" for key in checked)          # a tree's pass replayed, and matched the eager pass


def test_trees_on_the_lean_draft_step_equal_generate(pair):
    for prompt in PROMPTS:
        done = last(speculate(pair, prompt, SpecConfig(tree=(2, 2, 1, 1), max_new_tokens=N)))
        assert done.token_ids == reference(pair, prompt)
        assert done.stats.draft_path.startswith("lean eager")


def test_prompt_lookup_proposes_branches_and_stays_exact(pair):
    prompt = "for i in range(10):\n    print(i)\nfor j in range(3):\n    print(j)\nfor i in"
    events = list(speculate(pair, prompt, SpecConfig(tree=(3, 1, 1), drafter="prompt_lookup", max_new_tokens=N)))
    assert last(events).token_ids == reference(pair, prompt)
    roots = [sum(p == -1 for p in e.parents) for e in events if e.kind == "drafted"]
    assert max(roots) > 1                                     # several continuations as branches
    budget = list(speculate(pair, prompt, SpecConfig(tree=(3, 2, 2), tree_budget=4, drafter="prompt_lookup",
                                                     max_new_tokens=N)))
    assert last(budget).token_ids == reference(pair, prompt)
    assert max(len(e.token_ids) for e in budget if e.kind == "drafted") == 4      # branches cut to the budget


@pytest.mark.parametrize("settings", [dict(confidence_stop=0.5), dict(tree_budget=5, confidence_stop=0.3)], ids=str)
def test_confidence_stop_leaves_unsure_nodes_childless_and_exact(pair, settings):
    sizes = []
    for prompt in PROMPTS:
        events = list(speculate(pair, prompt, SpecConfig(tree=(2, 2, 2), max_new_tokens=N, **settings)))
        assert last(events).token_ids == reference(pair, prompt)
        sizes += [len(e.token_ids) for e in events if e.kind == "drafted"]
    assert min(sizes) < max(sizes)                            # some node was left without children


def test_rules_run_on_trees_and_name_themselves(pair):
    for rule in ("typical", "sample_match", "ensemble(w=0.5)", "greedy_match"):
        events = list(speculate(pair, PROMPTS[0], SpecConfig(tree=(2, 2), temperature=1.0, seed=1, rule=rule,
                                                             max_new_tokens=24)))
        judged = [e for e in events if e.kind in ("accepted", "rejected")]
        assert judged and all(e.rule == events[-1].stats.rule for e in judged)


@pytest.mark.parametrize("cfg", [SpecConfig(tree=(2, 2, 1), max_new_tokens=30),
                                 SpecConfig(tree=(3, 2), max_new_tokens=30, temperature=1.0, seed=2),
                                 SpecConfig(tree=(2, 1, 1), max_new_tokens=30, cuda_graphs=True),
                                 SpecConfig(tree=(3, 1), drafter="prompt_lookup", max_new_tokens=30)], ids=str)
def test_a_tree_round_reads_the_device_once(pair, cfg, monkeypatch):
    """As a chain's (test_events.py): the judge's one packed read, and nothing else, every round. (On the
    graph path a shape's first replays are checked against the eager pass, reading both: those checks,
    a chain's as much as a tree's, are left out of the count.)"""
    from specviz.runtime import graph_capture
    gen = speculate(pair, PROMPTS[0], cfg)
    reads = {"n": 0, "paused": False}
    for name in ("tolist", "item", "cpu", "numpy"):
        original = getattr(torch.Tensor, name)

        def counted(self, *a, _original=original, **kw):
            reads["n"] += not reads["paused"]
            return _original(self, *a, **kw)
        monkeypatch.setattr(torch.Tensor, name, counted)
    for name in ("check", "check_state"):
        original = getattr(graph_capture, name)

        def unread(*a, _original=original, **kw):
            reads["paused"] = True
            try:
                return _original(*a, **kw)
            finally:
                reads["paused"] = False
        monkeypatch.setattr(graph_capture, name, unread)
    events = list(gen)
    monkeypatch.undo()
    assert reads["n"] == events[-1].stats.tally.rounds


def test_a_drafted_event_must_describe_a_tree():
    good = dict(round=1, token_ids=[5, 6, 7], pieces=["a", "b", "c"], q=[0.5, 0.4, 0.3])
    assert Drafted(**good, parents=[-1, -1, 0], depths=[1, 1, 2], choices=[0, 1, 0]).parents == [-1, -1, 0]
    tree = dict(parents=[-1, -1, 0], depths=[1, 1, 2], choices=[0, 1, 0])
    for bad in (dict(parents=[-1, 0]),                         # parents and tokens differ in length
                dict(choices=None),                            # half a tree
                dict(parents=[-1, 2, 0], depths=[1, 2, 2]),    # a child before its parent
                dict(depths=[1, 1, 3])):                       # a node two depths below its parent
        with pytest.raises(ValueError):
            Drafted(**good, **{**tree, **bad})
    with pytest.raises(ValueError):
        Drafted(**{**good, "pieces": ["a"]})

