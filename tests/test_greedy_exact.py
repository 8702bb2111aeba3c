"""Greedy speculative output is token-identical to greedy target decoding (fp32)."""
import pytest

import torch

from specviz import SpecConfig, decode_baseline, speculate
from specviz.app.run_setup import settings_text
from specviz.engine.loop.drafters import DEFAULT_DRAFTER, DRAFTERS, make_drafter

from .helpers import N, PROMPTS, last, reference

@pytest.mark.parametrize("adaptive", [False, True])
@pytest.mark.parametrize("drafter", list(DRAFTERS))
@pytest.mark.parametrize("k", range(1, 9))
def test_matches_generate(pair, k, drafter, adaptive):
    for prompt in PROMPTS:
        done = last(speculate(pair, prompt, SpecConfig(k=k, max_new_tokens=N, drafter=drafter, adaptive_k=adaptive)))
        assert done.token_ids == reference(pair, prompt)


@pytest.mark.parametrize("name", list(DRAFTERS))
def test_every_registered_drafter_builds_and_is_named(pair, name):
    """A registered drafter is built from its entry, proposes at most k tokens with a q row each, and a
    run's text names it by its label (the default drafter goes unnamed)."""
    kind = DRAFTERS[name]
    cfg = SpecConfig(k=3, drafter=name)
    drafter = make_drafter(pair, cfg, torch.Generator().manual_seed(0), 64)
    ids = pair.tokenizer("def f(x): return x + 1\ndef f(x):")["input_ids"]
    proposal = drafter.propose(list(ids), (1,) * 3)
    drafter.release()
    assert len(proposal.tokens) <= 3 and proposal.q.shape == (len(proposal.tokens), pair.vocab_size)
    assert kind.label and (kind.label in settings_text(cfg)) == (name != DEFAULT_DRAFTER)


def test_baseline_matches_generate(pair):
    for prompt in PROMPTS:
        assert last(decode_baseline(pair, prompt, SpecConfig(max_new_tokens=N))).token_ids == reference(pair, prompt)


def test_hot_draft_still_exact_and_accepts_less(pair):
    """A draft sampling at temperature 2 guesses worse: fewer drafts pass, the output is unchanged."""
    for prompt in PROMPTS:
        cold = last(speculate(pair, prompt, SpecConfig(k=4, max_new_tokens=N)))
        hot = last(speculate(pair, prompt, SpecConfig(k=4, max_new_tokens=N, draft_temperature=2.0, seed=1)))
        assert hot.token_ids == cold.token_ids == reference(pair, prompt)
        assert hot.stats.acceptance_rate < cold.stats.acceptance_rate


@pytest.mark.parametrize("k", [1, 4, 8])
def test_random_draft_still_exact(pair_random, k):
    """A draft unrelated to the target is rejected almost always; the output is unchanged."""
    for prompt in PROMPTS:
        done = last(speculate(pair_random, prompt, SpecConfig(k=k, max_new_tokens=N)))
        assert done.token_ids == reference(pair_random, prompt)
        assert done.stats.acceptance_rate < 0.5


@pytest.mark.parametrize("k", [1, 4, 8])
def test_target_as_its_own_draft_accepts_everything(pair_self, k):
    for prompt in PROMPTS:
        done = last(speculate(pair_self, prompt, SpecConfig(k=k, max_new_tokens=N)))
        assert done.token_ids == reference(pair_self, prompt)
        assert done.stats.acceptance_rate == 1.0
        # Every full round emits k + 1 tokens; only the last may be cut by max_new_tokens.
        assert done.stats.tally.rounds == -(-N // (k + 1))


def test_partial_draft_has_both_outcomes(pair):
    """The fixture pair exercises both branches of verification."""
    kinds = {e.kind for p in PROMPTS for e in speculate(pair, p, SpecConfig(k=4, max_new_tokens=N))}
    assert {"accepted", "rejected", "resampled", "bonus"} <= kinds


@pytest.mark.parametrize("stop", [0.3, 0.6, 0.95])
@pytest.mark.parametrize("k", [2, 5, 8])
def test_confidence_stop_matches_generate(pair, k, stop):
    """Drafting stops early once the draft doubts its own token: rounds draft fewer than k,
    and the output is still greedy decoding's."""
    short = 0
    for prompt in PROMPTS:
        events = list(speculate(pair, prompt, SpecConfig(k=k, max_new_tokens=N, confidence_stop=stop)))
        assert events[-1].token_ids == reference(pair, prompt)
        # Rounds that had room for k drafts (the budget cuts the last ones anyway) yet drafted fewer.
        short += sum(e.kind == "round_end" and e.drafted < k and e.total_tokens - e.emitted + k + 1 <= N
                     for e in events)
    assert short > 0


def test_confidence_stop_cuts_after_a_doubted_draft(pair):
    """Each proposal drafts until (and including) the first draft the draft model gave < the threshold:
    a proposal cut short ends on a doubted draft, and every draft before it was confident."""
    import torch
    from specviz.runtime.cached_model import cached_model
    from specviz.engine.loop.drafters import ModelDrafter
    from specviz.engine.loop.sampling import make_generator

    cfg = SpecConfig(k=6, confidence_stop=0.3)
    prompt = pair.tokenizer(PROMPTS[1])["input_ids"]
    sequence = prompt + reference(pair, PROMPTS[1])
    cut = long_confident = 0
    for end in range(len(prompt), len(sequence)):           # proposals from many contexts
        ids = sequence[:end]
        proposal = ModelDrafter(pair.draft, pair.vocab_size, cfg, make_generator(pair.device, 0)).propose(ids, (1,) * cfg.k)
        m = proposal.tokens.numel()
        # The draft's own probabilities of its drafts, recomputed in one pass over ids + drafts
        # (the way the drafter steps it: on a CPU, the lean step, lean_draft.py).
        logits = cached_model(pair.draft, pair.vocab_size, draft=True).feed(torch.tensor(ids + proposal.tokens.tolist()), keep=m + 1)
        own = torch.softmax(logits[:-1], -1)[torch.arange(m), proposal.tokens].tolist()
        assert all(p >= 0.3 for p in own[:-1])
        assert m == cfg.k or own[-1] < 0.3
        cut += m < cfg.k
        long_confident += 1 < m < cfg.k
    assert cut > 0 and long_confident > 0          # both shapes of a cut round occurred


def test_adaptive_k_leaves_k_alone_after_a_round_the_stop_cut(pair):
    """Under adaptive k with a confidence stop: a round that drafted fewer than its k (the stop cut it,
    with room for all k) leaves the next k as it was; a round that drafted all k moves it by one;
    and the output is still greedy decoding's."""
    cut = moved = 0
    for prompt in PROMPTS:
        cfg = SpecConfig(k=4, k_min=1, k_max=8, adaptive_k=True, max_new_tokens=N, confidence_stop=0.3)
        events = list(speculate(pair, prompt, cfg))
        assert events[-1].token_ids == reference(pair, prompt)
        k = cfg.k
        for e in (e for e in events if e.kind == "round_end"):
            room = e.total_tokens - e.emitted + k + 1 <= N            # the budget allowed all k drafts
            if room and e.drafted < k:
                assert e.k_next == k, e
                cut += 1
            elif e.drafted == k:                                       # one up after all accepted, else one down
                assert e.k_next == (min(k + 1, cfg.k_max) if e.accepted == k else max(k - 1, cfg.k_min)), e
                moved += e.k_next != k
            k = e.k_next
    assert cut > 0 and moved > 0
