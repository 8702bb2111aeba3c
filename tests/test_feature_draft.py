"""The feature draft (EAGLE-style, models/feature_draft.py) and its drafter in the engine.

- Training and engine agree: the training forward's step s at position p (training-time test,
  one masked pass) equals what the engine's drafter computes for the s-th draft of a round.
- Exactness with a draft that reads target features: greedy output equals generate(); sampled
  output has the target's distribution (chi-square), with a head that cannot propose every token.
- It loads from a folder like any draft (its own tensors only) and refuses transformers'
  assisted generation with a message.
"""
import json

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from specviz import SpecConfig, speculate
from specviz.engine.loop.drafters import FeatureDrafter
from specviz.errors import ConfigError, LoadError
from specviz.engine.analysis.lossless import chi_square_pvalue
from specviz.training.distill import make_draft
from specviz.models.feature_draft import FeatureDraftForCausalLM
from specviz.training.feature_unroll import from_borrowed, unrolled_hidden
from specviz.models.loading import load_pair, make_pair

from .helpers import PROMPTS, N, V, bench, joint, reference


def feature_draft_of(target, head: list[int], seed: int) -> FeatureDraftForCausalLM:
    """A one-layer feature draft cut from target, with a random (nonzero) feature projection."""
    torch.manual_seed(seed)
    width = target.config.hidden_size
    # z's statistics as a trained draft has them (saved in its config): not the identity
    draft = from_borrowed(make_draft(target, [0], head, "test/target"), steps=2, feature_scale=0.5,
                          feature_mean=(torch.randn(width) * 0.1).tolist(), feature_std=(torch.rand(width) + 0.5).tolist())
    with torch.no_grad():
        draft.feature_proj.weight.normal_(0, 0.3)
    return draft.eval()


@pytest.fixture(scope="module")
def feature_dir(tiny_dirs, tmp_path_factory) -> str:
    """A feature draft for the tiny target, saved as it ships (its own tensors only)."""
    target = LlamaForCausalLM.from_pretrained(tiny_dirs["target"])
    draft = feature_draft_of(target, list(range(target.config.vocab_size)), seed=3)
    folder = tmp_path_factory.mktemp("feature-draft")
    draft.save_pretrained(folder, state_dict=draft.own_state_dict())
    PreTrainedTokenizerFast.from_pretrained(tiny_dirs["target"]).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def pair_feature(tiny_dirs, feature_dir):
    """The tiny target with its feature draft, loaded back from the folder by load_pair."""
    return load_pair(tiny_dirs["target"], feature_dir, device="cpu")


def test_loads_as_a_feature_draft(pair_feature):
    assert isinstance(pair_feature.draft, FeatureDraftForCausalLM)
    assert pair_feature.draft.config.feature_scale == 0.5 and len(pair_feature.draft.config.feature_std) == 48
    assert pair_feature.draft.feature_proj.weight.abs().sum() > 0      # the saved W came back
    assert pair_feature.draft.model.embed_tokens is pair_feature.target.get_input_embeddings()   # borrowed


def test_training_forward_matches_engine_steps(pair_feature):
    """unrolled_hidden's step s at p == the drafter's s-th draft of a round whose newest token is p - s + 1."""
    draft, target = pair_feature.draft, pair_feature.target
    ids = torch.tensor([pair_feature.tokenizer(PROMPTS[1])["input_ids"]])
    T = ids.shape[1]
    with torch.no_grad():
        feats = target.model(input_ids=ids).last_hidden_state
        trained = unrolled_hidden(draft, ids, feats, steps=3)[0]             # (3, T, d)
        for newest in (0, 3, T - 3):
            drafter = FeatureDrafter(draft, pair_feature.vocab_size, SpecConfig(), torch.Generator())
            prev = torch.cat([feats.new_zeros(1, feats.shape[-1]), feats[0, :newest]])   # g_{p-1}
            h = drafter._feed(ids[0, :newest + 1], prev)[-1:]
            torch.testing.assert_close(h[0], trained[0, newest], rtol=1e-4, atol=1e-4)
            for s in (1, 2):          # the next draft steps read the draft's own hidden state
                h = drafter._feed(ids[0, newest + s:newest + s + 1], h)
                torch.testing.assert_close(h[0], trained[s, newest + s], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_greedy_matches_generate(pair_feature, k):
    accepted = rejected = 0
    for prompt in PROMPTS:
        events = list(speculate(pair_feature, prompt, SpecConfig(k=k, max_new_tokens=N)))
        assert events[-1].token_ids == reference(pair_feature, prompt)
        accepted += sum(e.kind == "accepted" for e in events)
        rejected += sum(e.kind == "rejected" for e in events)
    assert accepted > 0 and rejected > 0       # both paths of the drafter's cache bookkeeping ran


@pytest.mark.parametrize("stop", [0.3, 0.7])
def test_confidence_stop_keeps_greedy_exact(pair_feature, stop):
    """The feature draft stops early too; its cache bookkeeping holds for rounds of any length."""
    lengths = set()
    for prompt in PROMPTS:
        events = list(speculate(pair_feature, prompt, SpecConfig(k=5, max_new_tokens=N, confidence_stop=stop)))
        assert events[-1].token_ids == reference(pair_feature, prompt)
        lengths |= {len(e.token_ids) for e in events if e.kind == "drafted"}
    assert len(lengths - {0}) > 1                 # rounds of more than one length were drafted


def test_first_round_drafts_nothing_then_drafts(pair_feature):
    """No target features exist before the first target pass: round 1 only prefills."""
    events = list(speculate(pair_feature, PROMPTS[0], SpecConfig(k=3, max_new_tokens=12)))
    drafted = [e for e in events if e.kind == "drafted"]
    assert drafted[0].token_ids == [] and all(len(d.token_ids) > 0 for d in drafted[1:-1])


def test_refuses_assisted_generation_and_the_fast_path(pair_feature):
    with pytest.raises(LoadError, match="hidden states"):
        pair_feature.draft(input_ids=torch.tensor([[1, 2]]))
    with pytest.raises(ConfigError, match="fast path"):
        speculate(pair_feature, PROMPTS[0], SpecConfig(fast=True))


@pytest.mark.slow    # a benchmark in a subprocess
def test_bench_times_assisted_generation_with_a_plain_draft(tiny_dirs, feature_dir, tmp_path):
    """transformers' assisted generation cannot run a feature draft: the benchmark leaves it out,
    or times it with the plain draft given by --hf-assistant."""
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps([{"kind": "code", "text": PROMPTS[0]}]))
    common = ["--target", tiny_dirs["target"], "--draft", feature_dir, "--max-new-tokens", "16", "--repeats", "1",
              "--prompts", str(prompts)]
    without = bench(*common)["rows"][0]["summary"]
    assert set(without["tokens_per_s"]) == {"specviz plain", "specviz speculative", "hf generate"}
    assert "specviz_plain_vs_hf_generate" in without and "specviz_vs_hf_assisted" not in without
    result = bench(*common, "--hf-assistant", tiny_dirs["cut"])
    assert "hf assisted" in result["rows"][0]["summary"]["tokens_per_s"]
    assert result["models"]["hf_assistant"].endswith("cut") and result["rows"][0]["summary"]["specviz_vs_hf_assisted"] > 0


@pytest.mark.slow    # chi-square over thousands of seeded runs
def test_sampled_tokens_follow_target():
    """Chi-square over the first two tokens (the second drafted from features), with a head that
    covers 6 of the 8 tokens (q = 0 for the others: only the residual can produce them)."""
    vocab = {chr(ord("a") + i): i for i in range(V)}
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="a")))
    torch.manual_seed(10)
    cfg = LlamaConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                      initializer_range=0.8, eos_token_id=None, bos_token_id=None, pad_token_id=None,
                      tie_word_embeddings=False)
    target = LlamaForCausalLM(cfg).eval()
    pair = make_pair(target, feature_draft_of(target, list(range(6)), seed=4), tok, V)
    prompt = [1, 2, 3, 1, 2]
    counts = np.zeros(V * V, dtype=int)
    outcomes = set()
    for seed in range(2000):
        events = list(speculate(pair, prompt, SpecConfig(max_new_tokens=3, seed=seed, k=2, temperature=1.0)))
        outcomes |= {e.kind for e in events}
        x1, x2 = events[-1].token_ids[:2]
        counts[x1 * V + x2] += 1
    assert {"accepted", "rejected", "resampled"} <= outcomes
    expected = joint(target, prompt, temperature=1.0, top_k=0, top_p=1.0)
    assert chi_square_pvalue(counts.tolist(), expected.tolist()) > 1e-3
    assert counts.reshape(V, V)[:, 6:].sum() > 0       # tokens outside the head still come out

