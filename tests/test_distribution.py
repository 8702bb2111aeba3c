"""Sampled speculative output has the target's distribution (chi-square tests).

End to end: a Llama with an 8-token vocabulary and an unrelated random draft; thousands of
seeded runs; the joint distribution of the first two generated tokens is compared with the
exact target probabilities, computed here by an independent implementation of temperature,
top-k and top-p. A power check shows the same counts are rejected against the draft's
distribution. Every seed gives a fixed result, so these tests are deterministic.
"""
import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from specviz import SpecConfig, speculate
from specviz.engine.loop.acceptance import verify
from specviz.engine.loop.sampling import make_generator
from specviz.models.loading import make_pair
from specviz.engine.analysis.lossless import chi_square_pvalue

from .helpers import V, joint

@pytest.fixture(scope="module")
def small_vocab_pair():
    vocab = {chr(ord("a") + i): i for i in range(V)}
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="a")))
    def model(seed):
        torch.manual_seed(seed)
        cfg = LlamaConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                          num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                          initializer_range=0.8, eos_token_id=None, bos_token_id=None, pad_token_id=None)
        return LlamaForCausalLM(cfg).eval()
    return make_pair(model(10), model(11), tok, V)


SETTINGS = [
    dict(temperature=1.0, top_k=0, top_p=1.0, drafter="model", k=3),
    dict(temperature=0.7, top_k=4, top_p=1.0, drafter="model", k=2),
    dict(temperature=1.3, top_k=0, top_p=0.8, drafter="model", k=4),
    dict(temperature=1.0, top_k=0, top_p=1.0, drafter="prompt_lookup", k=3),
    dict(temperature=1.0, top_k=0, top_p=1.0, drafter="model", k=3, draft_temperature=2.0),   # a hot draft
    # Drafting stops after a draft the draft gave < 0.3 (first rounds of 1, 2 and 3 drafts):
    # whether x2 is drafted depends on x1.
    dict(temperature=1.0, top_k=0, top_p=1.0, drafter="model", k=3, confidence_stop=0.3),
]


@pytest.mark.slow    # chi-square over thousands of seeded runs
@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()))
def test_first_two_tokens_follow_target(small_vocab_pair, setting):
    pair = small_vocab_pair
    prompt = [1, 2, 3, 1, 2]   # repeats, so prompt lookup finds a continuation to propose
    cfg_args = {k: setting[k] for k in ("temperature", "top_k", "top_p")}
    counts = np.zeros(V * V, dtype=int)
    outcomes, first_drafts = set(), set()
    samples = 2000
    for seed in range(samples):
        cfg = SpecConfig(max_new_tokens=4, seed=seed, drafter=setting["drafter"], k=setting["k"],
                         draft_temperature=setting.get("draft_temperature"),
                         confidence_stop=setting.get("confidence_stop", 0.0), **cfg_args)
        events = list(speculate(pair, prompt, cfg))
        outcomes |= {e.kind for e in events}
        first_drafts.add(len(next(e for e in events if e.kind == "drafted").token_ids))
        x1, x2 = events[-1].token_ids[:2]
        counts[x1 * V + x2] += 1
    assert {"accepted", "rejected", "resampled"} <= outcomes   # both branches were exercised
    if setting.get("confidence_stop"):
        # The stop cut some first rounds short and let others draft all k.
        assert min(first_drafts) < setting["k"] and setting["k"] in first_drafts
    expected = joint(pair.target, prompt, **{k: setting[k] for k in ("temperature", "top_k", "top_p")})
    assert chi_square_pvalue(counts.tolist(), expected.tolist()) > 1e-3
    if setting["drafter"] == "model" and "draft_temperature" not in setting:
        # Power: the same counts clearly do not follow the draft's own distribution.
        draft_expected = joint(pair.draft, prompt, **{k: setting[k] for k in ("temperature", "top_k", "top_p")})
        assert chi_square_pvalue(counts.tolist(), draft_expected.tolist()) < 1e-6


@pytest.mark.slow    # chi-square over thousands of seeded runs
@pytest.mark.parametrize("case", ["dense", "one_hot_draft", "disjoint_support"])
def test_acceptance_rule_output_is_p(case):
    """verify() alone, many draws: the emitted token (accepted draft or resample) is ~ p."""
    g = torch.Generator().manual_seed(0)
    p_row = torch.softmax(torch.randn(V, generator=g) * 1.5, -1)
    q_row = torch.softmax(torch.randn(V, generator=g) * 1.5, -1)
    if case == "one_hot_draft":
        q_row = torch.nn.functional.one_hot(torch.tensor(2), V).float()
    if case == "disjoint_support":
        p_row[:4], q_row[4:] = 0, 0
        p_row, q_row = p_row / p_row.sum(), q_row / q_row.sum()
    cfg = SpecConfig(temperature=1.0)
    target_logits = torch.log(torch.stack([p_row, p_row]).clamp_min(1e-40))   # warp at T=1 gives p back
    gen = make_generator(torch.device("cpu"), 1)
    counts = np.zeros(V, dtype=int)
    for _ in range(20000):
        x = torch.multinomial(q_row, 1, generator=gen)
        v = verify(x, q_row.view(1, V), target_logits, cfg, gen)
        counts[x.item() if v.n_accepted == 1 else v.next_token] += 1
    assert chi_square_pvalue(counts.tolist(), p_row.tolist()) > 1e-3
    # Power: the same counts are far from the draft's distribution q.
    assert chi_square_pvalue(counts.tolist(), (q_row + 1e-9).tolist()) < 1e-6


def test_chi_square_pvalue_against_closed_forms():
    """The p-value the engine is judged with, checked independently: with 2 cells (1 degree of
    freedom) the chi-square tail is erfc(sqrt(x / 2)); with 3 cells (2 degrees) it is exp(-x / 2)."""
    import math
    for observed, probs in (([30, 70], [0.5, 0.5]), ([480, 520], [0.5, 0.5]), ([10, 40], [0.3, 0.7])):
        n = sum(observed)
        x = sum((o - n * p) ** 2 / (n * p) for o, p in zip(observed, probs))
        assert chi_square_pvalue(observed, probs) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-6, abs=1e-12)
    for observed, probs in (([20, 30, 50], [0.2, 0.3, 0.5]), ([50, 30, 20], [0.2, 0.3, 0.5])):
        n = sum(observed)
        x = sum((o - n * p) ** 2 / (n * p) for o, p in zip(observed, probs))
        assert chi_square_pvalue(observed, probs) == pytest.approx(math.exp(-x / 2), rel=1e-6, abs=1e-12)
