"""Sampled tree output has the target's distribution: its exact law at one node, enumerated over every
draw order and judgement outcome through the judge's own residuals (and shown to fail on a wrong
residual); and chi-square tests, as test_distribution.py runs for chains: end to end on the 8-token
Llama pair, and the recursive rejection rule at one node alone."""
import itertools

import numpy as np
import pytest
import torch

from specviz import SpecConfig, speculate
from specviz.engine.analysis.lossless import chi_square_pvalue
from specviz.engine.loop.rules import get_rule
from specviz.engine.loop.sampling import make_generator
from specviz.engine.loop.acceptance import judge, sibling_residuals
from specviz.engine.loop.proposal import Proposal
from specviz.engine.loop.shapes import candidates

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


@pytest.mark.slow    # chi-square over thousands of seeded runs
@pytest.mark.parametrize("setting", [dict(tree=(2, 1)), dict(tree=(3, 2), confidence_stop=0.3),
                                     dict(tree=(2, 2), rule="sample_match")], ids=str)
def test_lookup_branches_the_confidence_stop_and_sample_match_keep_the_law(small_vocab_pair, setting):  # noqa: F811
    """Trees on the paths a chain takes keep the target's law too: prompt lookup's branches (one-hot q,
    several continuations), a tree whose unsure nodes get no children, and a lossless rule's tree form."""
    pair, prompt = small_vocab_pair, [1, 2, 3, 1, 2, 4, 1, 2]
    drafter = "model" if setting.get("confidence_stop") or setting.get("rule") else "prompt_lookup"
    counts = np.zeros(V * V, dtype=int)
    for seed in range(2000):
        done = list(speculate(pair, prompt, SpecConfig(max_new_tokens=3, seed=seed, temperature=1.0,
                                                       drafter=drafter, **setting)))[-1]
        x1, x2 = done.token_ids[:2]
        counts[x1 * V + x2] += 1
    expected = joint(pair.target, prompt, temperature=1.0, top_k=0, top_p=1.0)
    assert chi_square_pvalue(counts.tolist(), expected.tolist()) > 1e-3


def one_node_tree(q_row: torch.Tensor, width: int, gen: torch.Generator) -> Proposal:
    """A depth-1 tree: `width` children of the root drawn from q_row without replacement (as the drafter
    draws them); a candidate q gave no mass stays in the tree and is never judged."""
    cfg = SpecConfig(temperature=1.0)
    tokens, rows = candidates(torch.log(q_row.clamp_min(1e-40)).view(1, -1), q_row.view(1, -1), width, cfg, gen)
    return Proposal(tokens[0], rows[0], [-1] * tokens.size(1))


@pytest.mark.slow    # chi-square over many draws
@pytest.mark.parametrize("case", ["dense", "narrow_draft", "disjoint_support"])
def test_recursive_rejection_at_one_node_emits_p(case):
    """the judge alone at the root, three siblings: the emitted token (a kept child or the
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
        v = judge(tree, logits, cfg, gen)
        counts[tree.tokens[v.path[0]].item() if v.path else v.next_token] += 1
    assert chi_square_pvalue(counts.tolist(), p_row.tolist()) > 1e-3
    assert chi_square_pvalue(counts.tolist(), (q_row + 1e-9).tolist()) < 1e-6


def test_candidates_are_a_draw_without_replacement():
    """The Gumbel-top-k candidates: distinct, first ~ q, second ~ q without the first (checked on the
    probability the second is each token, against the closed form sum_a q(a) q(b) / (1 - q(a)))."""
    q = torch.tensor([0.5, 0.3, 0.15, 0.05])
    cfg = SpecConfig(temperature=1.0)
    gen = make_generator(torch.device("cpu"), 2)
    tokens, rows = candidates(q.log().expand(4000, 4), q.expand(4000, 4), 2, cfg, gen)
    assert bool((tokens[:, 0] != tokens[:, 1]).all())
    torch.testing.assert_close(rows[:, 0], q.expand(4000, 4))
    first = torch.bincount(tokens[:, 0], minlength=4).tolist()
    second = torch.bincount(tokens[:, 1], minlength=4).tolist()
    closed = [sum(q[a] * q[b] / (1 - q[a]) for a in range(4) if a != b).item() for b in range(4)]
    assert chi_square_pvalue(first, q.tolist()) > 1e-3
    assert chi_square_pvalue(second, closed) > 1e-3


# --- the exact law at one node, enumerated ---------------------------------------------------------

def without(q: torch.Tensor, taken) -> torch.Tensor:
    """q with the tokens `taken` removed and renormalized (all zeros once no mass is left), as the
    drafter's candidates record it (shapes.candidates)."""
    row = q.clone()
    row[list(taken)] = 0
    return row / row.sum() if row.sum() > 0 else row


def law_at_one_node(p, q, width, rule, rows_of=without) -> torch.Tensor:
    """The exact law of the token the root emits: every draw order of `width` candidates drawn without
    replacement from q (a candidate drawn once q has no mass left is any token left: a phantom), and
    every judgement outcome (each sibling kept with its acceptance probability, else the next; all
    rejected: the last residual), with the probabilities and residuals of the judge's own
    `sibling_residuals` (the width-one case is the chain's rule)."""
    vocab = p.numel()
    law = torch.zeros(vocab, dtype=torch.float64)
    for order in itertools.permutations(range(vocab), width):
        prob, rows = 1.0, []
        for j, x in enumerate(order):
            row = rows_of(q, order[:j])
            prob *= float(row[x]) if row.sum() > 0 else 1 / (vocab - j)
            rows.append(row)
        if prob == 0:
            continue
        tokens, q_rows = torch.tensor(order), torch.stack(rows)
        proposal = Proposal(tokens, q_rows, [-1] * width)
        at_root = None if width == 1 else torch.zeros(width, dtype=torch.long)     # None: the chain's rows
        accept, r = sibling_residuals(rule, p.expand(width + 1, vocab).clone(), q_rows, tokens, proposal, at_root)
        stay = 1.0
        for j, x in enumerate(order):
            law[x] += prob * stay * float(accept[j])
            stay *= 1 - float(accept[j])
        law += prob * stay * r[0]
    return law


def dists(case: str):
    g = torch.Generator().manual_seed(7)
    p = torch.softmax(torch.randn(5, generator=g, dtype=torch.float64) * 1.5, -1)
    q = torch.softmax(torch.randn(5, generator=g, dtype=torch.float64) * 1.5, -1)
    if case == "narrow_draft":                  # two tokens: the third candidate is a phantom
        q[2:] = 0
    if case == "disjoint_support":
        p[:3], q[3:] = 0, 0
    return p / p.sum(), q / q.sum()


@pytest.mark.parametrize("case", ["dense", "narrow_draft", "disjoint_support"])
@pytest.mark.parametrize("rule", ["exact", "sample_match"])
@pytest.mark.parametrize("width", [1, 2, 3])
def test_the_law_at_one_node_is_p_exactly(case, rule, width):
    p, q = dists(case)
    law = law_at_one_node(p, q, width, get_rule(rule))
    assert float((law - p).abs().max()) < 1e-12


def test_a_wrong_residual_fails_the_enumeration():
    """The same enumeration is sharp: a residual left at p after a rejected sibling, or updated with the
    draft's whole q instead of the q each sibling was drawn from, no longer sums to p."""
    from specviz.engine.loop.rules import Exact

    class Stale(Exact):
        def correction(self, p, q, x):
            return p

    p, q = dists("dense")
    assert float((law_at_one_node(p, q, 3, get_rule("exact")) - p).abs().max()) < 1e-12
    assert float((law_at_one_node(p, q, 3, Stale()) - p).abs().max()) > 1e-3
    assert float((law_at_one_node(p, q, 3, get_rule("exact"), rows_of=lambda q, taken: q) - p).abs().max()) > 1e-3


def test_the_judge_uses_those_probabilities():
    """judge() on a one-node tree reports the acceptance probabilities the enumeration sums over."""
    p, q = dists("dense")
    order = (3, 0, 4)
    rows = torch.stack([without(q, order[:j]) for j in range(3)]).float()
    proposal = Proposal(torch.tensor(order), rows, [-1, -1, -1])
    v = judge(proposal, torch.log(p.float()).expand(4, 5), SpecConfig(temperature=1.0), make_generator("cpu", 0))
    accept, _ = sibling_residuals(get_rule("exact"), p.expand(4, 5).clone(), rows.double(), torch.tensor(order),
                                  proposal, torch.zeros(3, dtype=torch.long))
    assert torch.allclose(torch.tensor(v.accept_prob, dtype=torch.float64), accept, atol=1e-5)
