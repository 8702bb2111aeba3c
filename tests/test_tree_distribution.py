"""Sampled tree output has the target's distribution (chi-square tests), as test_distribution.py checks
for chains: end to end on the 8-token Llama pair, and the recursive rejection rule at one node alone."""
import numpy as np
import pytest
import torch

from specviz import SpecConfig, speculate
from specviz.engine.analysis.lossless import chi_square_pvalue
from specviz.engine.loop.sampling import make_generator
from specviz.engine.loop.tree_accept import verify_tree
from specviz.engine.loop.tree_drafter import TreeProposal, candidates

from .helpers import V, joint
from .test_distribution import small_vocab_pair  # noqa: F401  (the 8-token pair fixture)

SETTINGS = [
    dict(temperature=1.0, top_k=0, top_p=1.0, tree=(2, 2, 1)),
    dict(temperature=1.3, top_k=0, top_p=0.8, tree=(3, 2)),
    dict(temperature=0.7, top_k=4, top_p=1.0, tree=(2, 2)),
    # A dynamic tree: 5 nodes, the children going to the nodes the draft is surest of.
    dict(temperature=1.0, top_k=0, top_p=1.0, tree=(3, 3, 2), tree_budget=5),
]


@pytest.mark.slow    # chi-square over thousands of seeded runs
@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()))
def test_first_two_tokens_follow_target(small_vocab_pair, setting):  # noqa: F811
    pair = small_vocab_pair
    prompt = [1, 2, 3, 1, 2]
    sampling = {k: setting[k] for k in ("temperature", "top_k", "top_p")}
    counts = np.zeros(V * V, dtype=int)
    second_kept = 0
    outcomes = set()
    for seed in range(2000):
        events = list(speculate(pair, prompt, SpecConfig(max_new_tokens=4, seed=seed, tree=setting["tree"],
                                                   tree_budget=setting.get("tree_budget", 0), **sampling)))
        outcomes |= {e.kind for e in events}
        second_kept += any(e.kind == "accepted" and e.choice > 0 for e in events)
        x1, x2 = events[-1].token_ids[:2]
        counts[x1 * V + x2] += 1
    assert {"accepted", "rejected", "resampled", "bonus"} <= outcomes
    assert second_kept > 0          # a later sibling was kept after an earlier one was rejected
    expected = joint(pair.target, prompt, **sampling)
    assert chi_square_pvalue(counts.tolist(), expected.tolist()) > 1e-3
    draft_expected = joint(pair.draft, prompt, **sampling)
    assert chi_square_pvalue(counts.tolist(), draft_expected.tolist()) < 1e-6


def one_node_tree(q_row: torch.Tensor, width: int, gen: torch.Generator) -> TreeProposal:
    """A depth-1 tree: `width` children of the root drawn from q_row without replacement (as the drafter
    draws them), a candidate q gave no mass dropped."""
    cfg = SpecConfig(temperature=1.0)
    tokens, rows, ok = candidates(torch.log(q_row.clamp_min(1e-40)).view(1, -1), q_row.view(1, -1), width, cfg, gen)
    keep = ok[0]
    n = int(keep.sum())
    return TreeProposal(tokens[0][keep], rows[0][keep], [-1] * n, [1] * n, list(range(n)))


@pytest.mark.slow    # chi-square over many draws
@pytest.mark.parametrize("case", ["dense", "narrow_draft", "disjoint_support"])
def test_recursive_rejection_at_one_node_emits_p(case):
    """verify_tree alone at the root, three siblings: the emitted token (a kept child or the
    correction from the last residual) is distributed as p."""
    g = torch.Generator().manual_seed(0)
    p_row = torch.softmax(torch.randn(V, generator=g) * 1.5, -1)
    q_row = torch.softmax(torch.randn(V, generator=g) * 1.5, -1)
    if case == "narrow_draft":              # q has two tokens: the third candidate is dropped
        q_row[2:] = 0
        q_row = q_row / q_row.sum()
    if case == "disjoint_support":
        p_row[:4], q_row[4:] = 0, 0
        p_row, q_row = p_row / p_row.sum(), q_row / q_row.sum()
    cfg = SpecConfig(temperature=1.0)
    gen = make_generator(torch.device("cpu"), 1)
    counts = np.zeros(V, dtype=int)
    for _ in range(12000):
        tree = one_node_tree(q_row, 3, gen)
        logits = torch.log(p_row.clamp_min(1e-40)).expand(tree.size + 1, V)
        v = verify_tree(tree, logits, cfg, gen)
        counts[tree.tokens[v.path[0]].item() if v.path else v.next_token] += 1
    assert chi_square_pvalue(counts.tolist(), p_row.tolist()) > 1e-3
    assert chi_square_pvalue(counts.tolist(), (q_row + 1e-9).tolist()) < 1e-6


def test_candidates_are_a_draw_without_replacement():
    """The Gumbel-top-k candidates: distinct, first ~ q, second ~ q without the first (checked on the
    probability the second is each token, against the closed form sum_a q(a) q(b) / (1 - q(a)))."""
    q = torch.tensor([0.5, 0.3, 0.15, 0.05])
    cfg = SpecConfig(temperature=1.0)
    gen = make_generator(torch.device("cpu"), 2)
    tokens, rows, ok = candidates(q.log().expand(4000, 4), q.expand(4000, 4), 2, cfg, gen)
    assert bool(ok.all()) and bool((tokens[:, 0] != tokens[:, 1]).all())
    torch.testing.assert_close(rows[:, 0], q.expand(4000, 4))
    first = torch.bincount(tokens[:, 0], minlength=4).tolist()
    second = torch.bincount(tokens[:, 1], minlength=4).tolist()
    closed = [sum(q[a] * q[b] / (1 - q[a]) for a in range(4) if a != b).item() for b in range(4)]
    assert chi_square_pvalue(first, q.tolist()) > 1e-3
    assert chi_square_pvalue(second, closed) > 1e-3
