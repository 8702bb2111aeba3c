"""Greedy speculative output is token-identical to greedy target decoding (fp32)."""
import pytest

from specviz import SpecConfig, decode_baseline, speculate

from .helpers import N, PROMPTS, last, reference

@pytest.mark.parametrize("adaptive", [False, True])
@pytest.mark.parametrize("drafter", ["model", "prompt_lookup"])
@pytest.mark.parametrize("k", range(1, 9))
def test_matches_generate(pair, k, drafter, adaptive):
    for prompt in PROMPTS:
        done = last(speculate(pair, prompt, SpecConfig(k=k, max_new_tokens=N, drafter=drafter, adaptive_k=adaptive)))
        assert done.token_ids == reference(pair, prompt)


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
