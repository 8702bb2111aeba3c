"""Block verification (engine/loop/block.py) is exact by law: enumerated over every drafted block at a
small vocabulary (temperatures 0.7-1.3, top-k, top-p, k = 2-4), the kept prefix and the token drawn
after it, completed by the target, give the target's joint law of k + 1 tokens within 1e-5; and the
same enumeration fails on mutants (the wrong port that kept the token-wise test and changed only the
resampling among them). It keeps at least as many drafts as the token-wise rule in expectation, and
exactly as many for a one-hot draft (prompt lookup). The judge's verdicts follow the joint test; a
chi-square on a run's first three tokens (slow) checks the engine end to end; greedy runs reproduce
the target's greedy output; trees refuse the rule in one line."""
import itertools

import numpy as np
import pytest
import torch

from specviz import SpecConfig, speculate
from specviz.engine.analysis.lossless import chi_square_pvalue
from specviz.engine.loop.acceptance import verify
from specviz.engine.loop.block import block_test
from specviz.engine.loop.rules import get_rule, residual
from specviz.engine.loop.sampling import make_generator, warp
from specviz.errors import ConfigError

from .helpers import V, last, reference_probs
from .test_distribution import small_vocab_pair  # noqa: F401  (the 8-token pair fixture)


# --- two toy autoregressive models: a distribution for every prefix ---------------------------------

class Toy:
    """A model over a tiny vocabulary whose next-token logits for each prefix are fixed random numbers,
    warped by the engine's own warp (temperature, top-k, top-p)."""

    def __init__(self, vocab: int, seed: int, cfg: SpecConfig, scale: float = 1.5, one_hot: bool = False):
        self.vocab, self.cfg, self.one_hot = vocab, cfg, one_hot
        self.gen, self.scale, self.table = torch.Generator().manual_seed(seed), scale, {}

    def __call__(self, prefix: tuple) -> torch.Tensor:
        if prefix not in self.table:
            logits = torch.randn(self.vocab, generator=self.gen) * self.scale
            if self.one_hot:      # a deterministic draft (prompt lookup): all its mass on one token
                row = torch.zeros(self.vocab, dtype=torch.float64)
                row[int(logits.argmax())] = 1.0
            else:
                row = warp(logits, self.cfg).double()
                row = row / row.sum()        # float32 rounding off: the law is checked to 1e-5
            self.table[prefix] = row
        return self.table[prefix]


def backwards(h: torch.Tensor) -> torch.Tensor:
    """P(tau = i), i = 0..k, when prefix i is kept with probability h_i given no longer prefix was
    (the judge's tau = max{i: u_i < h_i} with independent uniforms)."""
    k, law = h.numel(), torch.zeros(h.numel() + 1, dtype=torch.float64)
    for i in range(k + 1):
        law[i] = (1.0 if i == 0 else float(h[i - 1])) * float(torch.prod(1 - h[i:].double()))
    return law


def block_rule(p, q, x):
    """The engine's rule: (P(tau = i) for i = 0..k, the residual rows, from block.py)."""
    h, res, _ = block_test(p, q, x)
    return backwards(h), res


def token_wise(p, q, x):
    """The exact token-wise rule on a chain: P(tau >= i) = prod_{j <= i} min(1, p/q), residual p - q."""
    a = torch.clamp(p[:-1].gather(1, x.view(-1, 1)).view(-1) / q.gather(1, x.view(-1, 1)).view(-1), max=1.0)
    survive = torch.cat([torch.ones(1, dtype=a.dtype), torch.cumprod(a, 0)])
    law = survive - torch.cat([survive[1:], torch.zeros(1, dtype=a.dtype)])
    return law, torch.cat([residual(p[:-1], q), p[-1:]])


def law_of(target: Toy, draft: Toy, k: int, rule) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Enumerate every drafted block d (probability prod q(d_i | d_<i)), every kept prefix tau and every
    token y drawn after it, and complete the emitted d_<=tau, y by the target to k + 1 tokens. Returns
    (that law, the target's own joint law of k + 1 tokens, E[tau])."""
    vocab = target.vocab
    law = torch.zeros((vocab,) * (k + 1), dtype=torch.float64)
    truth = torch.zeros_like(law)

    def completion(seq, start):
        prob = 1.0
        for j in range(start, k + 1):
            prob *= float(target(seq[:j])[seq[j]])
        return prob
    for seq in itertools.product(range(vocab), repeat=k + 1):
        truth[seq] = completion(seq, 0)
    kept = 0.0
    for d in itertools.product(range(vocab), repeat=k):
        drawn = float(np.prod([float(draft(d[:j])[d[j]]) for j in range(k)]))
        if drawn == 0:
            continue
        p = torch.stack([target(d[:j]) for j in range(k + 1)])
        q = torch.stack([draft(d[:j]) for j in range(k)])
        taus, rows = rule(p, q, torch.tensor(d))
        kept += drawn * float((taus * torch.arange(k + 1)).sum())
        for tau in range(k + 1):
            for y in range(vocab):
                mass = drawn * float(taus[tau]) * float(rows[tau, y])
                if mass == 0:
                    continue
                for rest in itertools.product(range(vocab), repeat=k - tau):
                    seq = d[:tau] + (y,) + rest
                    law[seq] += mass * completion(seq, tau + 1)
    return law, truth, kept


CASES = [   # (vocabulary, k, sampling): every draw order is enumerated
    (4, 2, dict(temperature=1.0)),
    (4, 3, dict(temperature=0.7)),
    (4, 3, dict(temperature=1.3, top_p=0.8)),
    (5, 2, dict(temperature=1.0, top_k=3)),
    (3, 4, dict(temperature=1.0)),
    (4, 2, dict(temperature=0.7, top_k=3, top_p=0.9)),
]


def pair_for(vocab, sampling, seed=0):
    cfg = SpecConfig(**sampling)
    return Toy(vocab, 100 + seed, cfg), Toy(vocab, 200 + seed, cfg)


@pytest.mark.parametrize("vocab,k,sampling", CASES, ids=str)
def test_the_block_law_is_the_target_law_exactly(vocab, k, sampling):
    target, draft = pair_for(vocab, sampling)
    law, truth, _ = law_of(target, draft, k, block_rule)
    assert abs(float(law.sum()) - 1) < 1e-9
    assert float((law - truth).abs().max()) < 1e-5


# --- mutants: each a plausible wrong version, each caught by the same enumeration -------------------

def wrong_port(p, q, x):
    """The wrong port: the token-wise acceptance test kept, only the resampling changed to the block's."""
    _, res, _ = block_test(p, q, x)
    return token_wise(p, q, x)[0], res


def forward_test(p, q, x):
    """The joint tests read forwards: stop at the first prefix whose test fails (tau = first miss - 1)."""
    h, res, _ = block_test(p, q, x)
    survive = torch.cat([torch.ones(1, dtype=h.dtype), torch.cumprod(h.double(), 0)])
    return survive - torch.cat([survive[1:], torch.zeros(1, dtype=survive.dtype)]), res


def plain_residual(p, q, x):
    """The block's test with the token-wise residual norm(max(0, p - q)) (the weight w dropped)."""
    h, _, _ = block_test(p, q, x)
    return backwards(h), torch.cat([residual(p[:-1], q), p[-1:]])


def unweighted_test(p, q, x):
    """h_i = S_i / (S_i + 1) (the 1 - w_i of the denominator taken as 1)."""
    h, res, w = block_test(p, q, x)
    s = torch.clamp(torch.cat([torch.ones(1, dtype=w.dtype), w[:-1]]).unsqueeze(-1) * p[:-1] - q, min=0).sum(-1)
    h = torch.cat([s[1:] / (s[1:] + 1), w[-1:]])
    return backwards(h), res


def unclamped_weights(p, q, x):
    """w_i = w_{i-1} p/q without the cap at 1 (the product of ratios)."""
    h, res, w = block_test(p, q, x)
    k = x.numel()
    ratio = p[:k].gather(1, x.view(-1, 1)).view(-1) / q.gather(1, x.view(-1, 1)).view(-1)
    w = torch.cumprod(ratio, 0)
    excess = torch.clamp(torch.cat([torch.ones(1, dtype=w.dtype), w[:-1]]).unsqueeze(-1) * p[:k] - q, min=0)
    s = excess.sum(-1)
    h = torch.cat([s[1:] / (s[1:] + torch.clamp(1 - w[:-1], min=0)), torch.clamp(w[-1:], max=1)]).clamp(max=1)
    res = torch.cat([excess / s.clamp_min(1e-30).unsqueeze(-1), p[k:]])
    return backwards(h), res


MUTANTS = [wrong_port, forward_test, plain_residual, unweighted_test, unclamped_weights]


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("vocab,k,sampling", [CASES[0], CASES[2]], ids=str)
def test_each_mutant_fails_the_law(mutant, vocab, k, sampling):
    target, draft = pair_for(vocab, sampling)
    law, truth, _ = law_of(target, draft, k, mutant)
    assert float((law - truth).abs().max()) > 1e-3, mutant.__name__


# --- what it keeps -----------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_it_keeps_at_least_as_many_drafts_as_token_wise(seed):
    """E[tau] enumerated on random small cases: block >= token-wise (the paper's theorem), and the law of
    both is the target's; the gain is strictly positive on these random pairs."""
    vocab, k = (4, 3) if seed % 2 else (3, 4)
    sampling = dict(temperature=[0.7, 1.0, 1.3][seed % 3], top_k=3 if seed == 4 else 0)
    target, draft = pair_for(vocab, sampling, seed)
    law_b, truth, kept_block = law_of(target, draft, k, block_rule)
    law_t, _, kept_token = law_of(target, draft, k, token_wise)
    assert float((law_t - truth).abs().max()) < 1e-5 and float((law_b - truth).abs().max()) < 1e-5
    assert kept_block > kept_token + 1e-4, (kept_block, kept_token)


def test_a_one_hot_draft_keeps_as_many_as_token_wise():
    """Prompt lookup drafts one token with q = 1: no rule keeps prefix x_<=i more often than the target
    writes it, prod p(x_j), which the token-wise rule already reaches; so tau has the same law."""
    cfg = SpecConfig(temperature=1.0)
    target, draft = Toy(4, 7, cfg), Toy(4, 8, cfg, one_hot=True)
    k = 3
    for d in itertools.product(range(4), repeat=k):
        if all(float(draft(d[:j])[d[j]]) == 1 for j in range(k)):
            p = torch.stack([target(d[:j]) for j in range(k + 1)])
            q = torch.stack([draft(d[:j]) for j in range(k)])
            block, _ = block_rule(p, q, torch.tensor(d))
            tokens, _ = token_wise(p, q, torch.tensor(d))
            torch.testing.assert_close(block, tokens, atol=1e-12, rtol=0)
    law, truth, _ = law_of(target, draft, k, block_rule)
    assert float((law - truth).abs().max()) < 1e-5


def test_greedy_limit_is_the_argmax_match():
    """One-hot p and q (temperature 0): w_i is 1 while the drafts match p's argmax and 0 after, so the
    joint test keeps exactly the longest matching prefix."""
    p = torch.eye(4, dtype=torch.float64)[[2, 1, 3, 0]]         # argmax 2, 1, 3, then the bonus row
    x = torch.tensor([2, 1, 0])                                  # matches twice, then misses
    q = torch.eye(4, dtype=torch.float64)[x]
    taus, _ = block_rule(p, q, x)
    assert taus.tolist() == [0.0, 0.0, 1.0, 0.0]


# --- the engine's judge and runs ---------------------------------------------------------------------

def test_the_judge_keeps_the_longest_prefix_that_passes():
    """verify() under rule="block": accept_prob is h_i, the path is max{i: u_i < h_i}, the weights are
    block.py's, and the next token has mass under the block residual at tau."""
    cfg = SpecConfig(temperature=1.0, rule="block")
    g = torch.Generator().manual_seed(3)
    seen = set()
    for seed in range(60):
        logits = torch.randn(5, 6, generator=g) * 1.5
        q = torch.softmax(torch.randn(4, 6, generator=g) * 1.5, -1)
        x = torch.multinomial(q, 1, generator=g).view(-1)
        v = verify(x, q, logits, cfg, make_generator(torch.device("cpu"), seed))
        h, res, w = block_test(warp(logits, cfg), q, x)
        torch.testing.assert_close(torch.tensor(v.accept_prob, dtype=torch.float64), h.double(), atol=1e-6, rtol=0)
        torch.testing.assert_close(torch.tensor(v.weights, dtype=torch.float64), w.double(), atol=1e-6, rtol=0)
        tau = max([i + 1 for i in range(4) if v.u[i] < v.accept_prob[i]], default=0)
        assert v.path == list(range(tau))
        assert float(res[tau, v.next_token]) > 0
        seen.add((tau, any(v.u[i] >= v.accept_prob[i] for i in range(tau))))
    assert any(kept_past_a_miss for _, kept_past_a_miss in seen)    # a draft kept though its own test failed
    assert {t for t, _ in seen} >= {0, 4}


def test_config_trees_and_greedy():
    with pytest.raises(ConfigError, match="chain's drafts jointly"):
        SpecConfig(temperature=1.0, rule="block", tree=(2, 1))
    assert get_rule("block").lossless and get_rule("block").joint
    assert SpecConfig(temperature=0.0, rule="block").rule == "block"


def test_events_say_which_prefix_was_kept(small_vocab_pair):  # noqa: F811
    events = list(speculate(small_vocab_pair, [1, 2, 3, 1, 2], SpecConfig(k=4, temperature=1.0, rule="block",
                                                                          max_new_tokens=24, seed=5)))
    ends = [e for e in events if e.kind == "round_end"]
    assert ends and all(len(e.block) == e.drafted for e in ends)
    for e in ends:
        tau = max([i + 1 for i, (_, h, u) in enumerate(e.block) if u < h], default=0)
        assert tau >= e.accepted           # a stop rule may cut a round, never lengthen it
    verdicts = [e for e in events if e.kind in ("accepted", "rejected")]
    assert verdicts and all(e.rule == "block" and e.weight is not None and e.kept is not None for e in verdicts)
    assert all(e.weight is not None for e in events if e.kind == "resampled")
    assert last(events).stats.rule == "block"


def test_greedy_block_runs_reproduce_greedy_target(small_vocab_pair):  # noqa: F811
    prompt = [1, 2, 3, 1, 2]
    plain = last(speculate(small_vocab_pair, prompt, SpecConfig(k=3, max_new_tokens=16))).token_ids
    block = last(speculate(small_vocab_pair, prompt, SpecConfig(k=3, max_new_tokens=16, rule="block")))
    assert block.token_ids == plain


@pytest.mark.slow    # chi-square over thousands of seeded runs
@pytest.mark.parametrize("sampling", [dict(temperature=1.0, k=3), dict(temperature=0.7, top_k=4, k=4),
                                      dict(temperature=1.3, top_p=0.8, k=2)], ids=str)
def test_the_first_three_tokens_follow_the_target(small_vocab_pair, sampling):  # noqa: F811
    """End to end through speculate(): the joint law of the first three tokens (512 cells) against the
    target's; the draft's own law is rejected. Block rounds that keep a draft past a failed test of
    its own occur."""
    pair, prompt = small_vocab_pair, [1, 2, 3, 1, 2]
    counts = np.zeros(V ** 3, dtype=int)
    for seed in range(4000):
        done = last(speculate(pair, prompt, SpecConfig(max_new_tokens=3, seed=seed, rule="block", **sampling)))
        a, b, c = done.token_ids[:3]
        counts[(a * V + b) * V + c] += 1
    warp_args = dict(temperature=sampling["temperature"], top_k=sampling.get("top_k", 0),
                     top_p=sampling.get("top_p", 1.0))
    assert chi_square_pvalue(counts.tolist(), joint3(pair.target, prompt, **warp_args).tolist()) > 1e-3
    assert chi_square_pvalue(counts.tolist(), joint3(pair.draft, prompt, **warp_args).tolist()) < 1e-6


def joint3(model, prompt, temperature, top_k, top_p) -> np.ndarray:
    """P(x1, x2, x3) under the model with the given settings, as a flat V**3 vector."""
    out = np.zeros(V ** 3)
    with torch.no_grad():
        p1 = reference_probs(model(torch.tensor([prompt])).logits[0, -1].numpy(), temperature, top_k, top_p)
        for a in range(V):
            p2 = reference_probs(model(torch.tensor([prompt + [a]])).logits[0, -1].numpy(), temperature, top_k, top_p)
            for b in range(V):
                p3 = reference_probs(model(torch.tensor([prompt + [a, b]])).logits[0, -1].numpy(),
                                     temperature, top_k, top_p)
                out[(a * V + b) * V: (a * V + b + 1) * V] = p1[a] * p2[b] * p3
    return out
