"""Token trees: greedy tree output is token-identical to generate(), the tree pass equals one pass per
path, the caches keep exactly the accepted path, and a tree round's events add up."""
import pytest
import torch

from specviz import SpecConfig, speculate
from specviz.engine.loop.config import parse_tree, tree_nodes
from specviz.engine.loop.events import from_dict, to_dict
from specviz.runtime.cached_model import CachedModel
from specviz.runtime.tree_pass import ancestry, keep_path, visibility
from specviz.errors import ConfigError

from .helpers import N, PROMPTS, last, reference

SHAPES = [(2, 2, 1, 1), (3, 1, 1), (2, 2, 2), (4,), (1, 1, 1, 1, 1, 1), (2, 1, 1, 1, 1, 1), (3, 2, 1, 1, 1)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: ",".join(map(str, s)))
def test_tree_matches_generate(pair, shape):
    for prompt in PROMPTS:
        done = last(speculate(pair, prompt, SpecConfig(tree=shape, max_new_tokens=N)))
        assert done.token_ids == reference(pair, prompt)
        assert done.stats.tree == list(shape)


@pytest.mark.parametrize("shape", [(2, 2, 1, 1), (3, 3)], ids=str)
def test_tree_with_random_draft_still_exact(pair_random, shape):
    for prompt in PROMPTS:
        done = last(speculate(pair_random, prompt, SpecConfig(tree=shape, max_new_tokens=N)))
        assert done.token_ids == reference(pair_random, prompt)


def test_target_as_its_own_tree_draft_keeps_every_first_choice(pair_self):
    """The target drafting for itself: every first choice is the target's argmax, so each round walks
    the first-choice path to the bottom; second choices are never judged."""
    shape = (2, 2, 1)
    for prompt in PROMPTS:
        done = last(speculate(pair_self, prompt, SpecConfig(tree=shape, max_new_tokens=N)))
        assert done.token_ids == reference(pair_self, prompt)
        assert done.stats.tally.rounds == -(-N // (len(shape) + 1))
        assert {(row["choice"], row["rate"]) for row in done.stats.by_choice} == {(0, 1.0)}


def test_tree_beats_the_chain_of_its_depth_in_tokens_a_pass(pair):
    """Second choices recover positions where the first was wrong: a tree never yields fewer tokens a
    target pass than the chain of its depth, and here some second choice is kept."""
    tree_tau, chain_tau, second = [], [], 0
    for prompt in PROMPTS:
        tree = last(speculate(pair, prompt, SpecConfig(tree=(3, 2, 1, 1), max_new_tokens=N)))
        chain = last(speculate(pair, prompt, SpecConfig(k=4, max_new_tokens=N)))
        tree_tau.append(tree.stats.mean_acceptance_length)
        chain_tau.append(chain.stats.mean_acceptance_length)
        second += sum(row["accepted"] for row in tree.stats.by_choice if row["choice"] > 0)
    assert sum(tree_tau) > sum(chain_tau)
    assert second > 0


def test_tree_pass_equals_one_pass_per_path(pair):
    """The tree mask and positions: each node's logits equal those of a plain causal pass over the
    context followed by that node's path, and keep_path leaves the cache a plain pass would."""
    ids = pair.tokenizer(PROMPTS[0])["input_ids"]
    parents, tokens = [-1, -1, 0, 0, 1, 2], [5, 9, 17, 23, 42, 7]
    depths = [1, 1, 2, 2, 2, 3]
    lm = CachedModel(pair.target, pair.vocab_size)
    lm.feed(torch.tensor(ids[:-2]), keep=1)                    # two context tokens left uncached
    base = lm.length
    fresh = torch.tensor(ids[base:])
    positions = torch.cat([torch.arange(base, len(ids)), torch.tensor([len(ids) - 1 + d for d in depths])])
    logits = lm.feed_masked(torch.cat([fresh, torch.tensor(tokens)]), positions,
                            visibility(base, fresh.numel(), ancestry(parents)), keep=len(tokens) + 1)
    for node in range(-1, len(tokens)):
        path, at = [], node
        while at >= 0:
            path.insert(0, at)
            at = parents[at]
        plain = pair.target(torch.tensor([ids + [tokens[i] for i in path]])).logits[0, -1, : pair.vocab_size]
        torch.testing.assert_close(logits[node + 1], plain.float(), atol=1e-4, rtol=1e-4)
    keep_path(lm, len(ids), [0, 2, 5])
    assert lm.length == len(ids) + 3
    after = lm.feed(torch.tensor([11]), keep=1)[0]
    plain = pair.target(torch.tensor([ids + [tokens[0], tokens[2], tokens[5], 11]])).logits[0, -1, : pair.vocab_size]
    torch.testing.assert_close(after, plain.float(), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("cfg", [SpecConfig(tree=(2, 2, 1, 1), max_new_tokens=60),
                                 SpecConfig(tree=(3, 2), max_new_tokens=60, temperature=1.0, seed=3),
                                 SpecConfig(tree=(2, 2, 2), max_new_tokens=60, temperature=0.8, top_p=0.9, seed=1),
                                 SpecConfig(tree=(2, 2, 1, 1, 1, 1), max_new_tokens=7)], ids=str)
def test_tree_round_events_add_up(pair_random, pair, cfg):
    for p, prompt in ((pair, PROMPTS[0]), (pair_random, PROMPTS[1])):
        events = list(speculate(p, prompt, cfg))
        done = events[-1]
        rounds = {}
        for e in events[:-1]:
            rounds.setdefault(e.round, []).append(e)
        for evs in rounds.values():
            drafted, end = evs[0], evs[-1]
            n = len(drafted.token_ids)
            assert len(drafted.parents) == len(drafted.depths) == len(drafted.choices) == len(drafted.q) == n
            judged = [e for e in evs if e.kind in ("accepted", "rejected")]
            rejected = [e for e in judged if e.kind == "rejected"]
            accepted = [e for e in judged if e.kind == "accepted"]
            # drafted = accepted + rejected + discarded (under rejected nodes) + unjudged
            assert end.drafted == n == len(accepted) + len(rejected) + sum(e.discarded for e in rejected) + end.unjudged
            for e in judged:     # each verdict names its node, with that node's token, depth and rank
                assert e.token_id == drafted.token_ids[e.node] and e.position == drafted.depths[e.node] - 1
                assert e.choice == drafted.choices[e.node]
            # The accepted nodes form a path from the root, one a depth.
            nodes = [e.node for e in accepted]
            assert [drafted.parents[x] for x in nodes] == ([-1] + nodes)[: len(nodes)]
            last_event = [e for e in evs if e.kind in ("resampled", "bonus")]
            if last_event:
                assert last_event[0].parent == (nodes[-1] if nodes else -1)
        pieces = "".join(e.piece for e in events if e.kind in ("accepted", "resampled", "bonus"))
        assert pieces == done.text and done.stats.tally.tokens == len(done.token_ids)
        assert [from_dict(to_dict(e)) for e in events[:-1]] == events[:-1]
        counted = sum(row["judged"] for row in done.stats.by_choice)
        assert counted == sum(e.kind in ("accepted", "rejected") for e in events)
        assert to_dict(done)["stats"]["by_choice"] == done.stats.by_choice


def test_tree_config():
    assert SpecConfig(tree=[2, 2, 1, 1]).tree == (2, 2, 1, 1) and SpecConfig().tree is None
    assert tree_nodes((2, 2, 1, 1)) == 2 + 4 + 4 + 4 and parse_tree("2,2,1,1") == (2, 2, 1, 1)
    assert SpecConfig(tree=(3, 1)).to_dict()["tree"] == [3, 1]
    for bad in [(), (0, 1), (9,), "2,2", (2,) * 40, (8, 8, 8)]:
        with pytest.raises(ConfigError):
            SpecConfig(tree=bad)
    for other in [dict(fast=True), dict(adaptive_k=True)]:          # config.TREE_REFUSES, each with its reason
        with pytest.raises(ConfigError, match=f"cannot run with {next(iter(other))}: "):
            SpecConfig(tree=(2, 1), **other)
    for fine in [dict(cuda_graphs=True), dict(drafter="prompt_lookup"), dict(confidence_stop=0.5),
                 dict(forced_acceptance=0.5), dict(temperature=1.0, rule="typical")]:
        assert SpecConfig(tree=(2, 1), **fine).tree == (2, 1)
    with pytest.raises(ConfigError):
        parse_tree("2,x")


@pytest.mark.parametrize("shape,budget", [((4, 4, 4, 4, 2, 2), 10), ((3, 3, 3), 6), ((2, 2, 2, 2), 5)], ids=str)
def test_dynamic_tree_matches_generate_within_its_budget(pair, shape, budget):
    for prompt in PROMPTS:
        events = list(speculate(pair, prompt, SpecConfig(tree=shape, tree_budget=budget, max_new_tokens=N)))
        assert last(events).token_ids == reference(pair, prompt)
        sizes = [len(e.token_ids) for e in events if e.kind == "drafted"]
        assert max(sizes) <= budget and budget in sizes
        assert last(events).stats.tree_budget == budget


def test_allot_gives_the_surest_nodes_their_children_first():
    from specviz.engine.loop.shapes import allot
    assert allot([0.5, 0.2], 3, None) == [3, 3]
    assert allot([0.1, 0.6, 0.3], 2, 3) == [0, 2, 1]
    assert allot([0.1, 0.6], 2, 0) == [0, 0]
    with pytest.raises(ConfigError):
        SpecConfig(tree_budget=4)                  # a budget needs a tree


def test_a_prompt_lookup_tree_has_full_rounds_and_a_tokens_per_round(pair):
    """Prompt lookup drafts a tree as branches only (the first width's chains, each as deep as the tree),
    never every node of the shape: a round that found them all is full, so its tokens per round exist."""
    from specviz.engine.loop.config import planned_nodes
    cfg = SpecConfig(tree=(2, 2, 1), drafter="prompt_lookup", max_new_tokens=N)
    assert planned_nodes(cfg) == 2 * 3 and planned_nodes(SpecConfig(tree=(2, 2, 1))) == tree_nodes((2, 2, 1))
    assert planned_nodes(SpecConfig(tree=(2, 2, 1), tree_budget=4, drafter="prompt_lookup")) == 4
    prompt = "for i in range(10):\n    print(i)\nfor j in range(3):\n    print(j)\nfor i in"   # two pasts to look up
    events = list(speculate(pair, prompt, cfg))
    ends = [e for e in events if e.kind == "round_end"]
    drafted = {e.round: len(e.token_ids) for e in events if e.kind == "drafted"}
    assert any(drafted[e.round] == 6 for e in ends), "no round found both branches: the prompt no longer tests it"
    full = [e for e in ends if e.full]
    assert full and all(drafted[e.round] == 6 and e.emitted == e.accepted + 1 for e in full)
    assert last(events).stats.tokens_per_round == sum(e.emitted for e in full) / len(full)
    assert last(events).token_ids == reference(pair, prompt)
