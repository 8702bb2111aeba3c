"""The lean GPU step (runtime/lean_step.py) against transformers' forward, in fp32 on the CPU.

Each model is fed the same chain of feeds (a prefill, single tokens, a verify pass's k + 1 tokens)
and a token tree's masked feed, both through transformers' forward (given the explicit 4-D mask and
positions the graph path gives it) and through the lean step over its own K/V buffers; the logits
and every K/V entry written are compared. What is to the bit and what is not:
- a one-token feed (a draft step, a plain step): to the bit, logits and K/V, in the unfused form;
- a feed of several tokens: within 1e-5 of the logits' scale: MKL may block the stacked q/k/v or
  gate/up matmul differently from its three or two parts for some row counts (one unit in the last
  place, seen on 4-row feeds);
- the fused (CUDA) form: within 1e-5 (residuals accumulated inside the matmul, heads folded).
Models: the bundled pair, SmolLM2-135M (when fetched), and 7B-shaped Qwen2 pairs at small width
(28 query heads over 4 key/value heads, q/k/v biases, tied and untied heads). Then the graph path
itself runs the lean step (SPECVIZ_GPU_STEP=lean) and greedy output equals generate().
"""
from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from specviz import SpecConfig, decode_baseline, speculate
from specviz.bench.runner import hf_generate
from specviz.models.loading import load_pair, load_tokenizer, make_pair
from specviz.paths import ROOT
from specviz.runtime import graph_model, lean_step
from specviz.runtime.graph_model import GraphCachedModel

from .helpers import PROMPTS, last

CHAIN = [(0, 11), (11, 12), (12, 13), (13, 17), (17, 18), (18, 24)]   # (start, end) of each feed
TOL = 1e-5


def qwen2_7b_shaped(tied: bool, seed: int = 0) -> Qwen2ForCausalLM:
    """Qwen2.5-7B's structure at small width: 28 query heads over 4 key/value heads (7 per group),
    biases on q/k/v, an intermediate width 5.3x the hidden one; weights perturbed off their init."""
    torch.manual_seed(seed)
    cfg = Qwen2Config(hidden_size=224, num_hidden_layers=3, num_attention_heads=28, num_key_value_heads=4,
                      head_dim=8, intermediate_size=1184, vocab_size=640, tie_word_embeddings=tied,
                      attn_implementation="sdpa", max_position_embeddings=512)
    model = Qwen2ForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model


def _mask(seen: torch.Tensor) -> torch.Tensor:
    return torch.zeros(seen.shape).masked_fill(~seen, torch.finfo(torch.float32).min)


def _feeds(vocab: int, seed: int = 0):
    """The chain's feeds, then a tree of 5 nodes under the last token: two children, each with a child,
    one with two: (tokens, slots, rotary positions, visible (n, cached + n))."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, vocab, (CHAIN[-1][1],), generator=gen)
    for a, b in CHAIN:
        slots = torch.arange(a, b)
        yield ids[a:b], slots, slots, torch.arange(b)[None, :] <= slots[:, None]
    start = CHAIN[-1][1]
    parents = [-1, -1, 0, 1, 1]
    depth = [0, 0, 1, 1, 1]
    within = torch.eye(5, dtype=torch.bool)
    for i, p in enumerate(parents):
        while p >= 0:
            within[i, p] = True
            p = parents[p]
    visible = torch.cat([torch.ones(5, start, dtype=torch.bool), within], dim=1)
    yield (torch.randint(3, vocab, (5,), generator=gen), torch.arange(start, start + 5),
           torch.tensor(depth) + start, visible)


def _compare(model, fused: bool = False) -> dict:
    """Run transformers and the lean step through _feeds; the largest differences, and per feed
    whether the logits and K/V were equal to the bit."""
    vocab = model.config.vocab_size
    w = lean_step.lean_step_weights(model)
    kv = lean_step.kv_buffers(w, 64, torch.float32, "cpu")
    cache = DynamicCache(config=model.config)
    worst, exact = 0.0, []
    with torch.inference_mode():
        for tokens, slots, rope, visible in _feeds(vocab):
            n, end = tokens.numel(), int(slots[-1]) + 1
            mask = _mask(visible)
            ref = model(input_ids=tokens[None], attention_mask=mask[None, None], position_ids=rope[None],
                        past_key_values=cache, use_cache=True, logits_to_keep=n).logits[0]
            got = lean_step.step(w, kv, tokens, slots, rope, mask, n, end, fused=fused)
            assert got.shape == ref.shape and got.dtype == ref.dtype
            scale = max(1.0, ref.abs().max().item())
            delta = (ref - got).abs().max().item()
            kv_equal = True
            for layer, buf in zip(cache.layers, kv):
                k_delta = (layer.keys[0] - buf[0, :, :end]).abs().max().item()
                v_delta = (layer.values[0] - buf[1, :, :end]).abs().max().item()
                assert max(k_delta, v_delta) <= TOL * max(1.0, layer.keys.abs().max().item())
                kv_equal &= k_delta == v_delta == 0.0
            assert delta <= TOL * scale, (n, delta)
            assert torch.equal(ref.argmax(-1), got.argmax(-1))
            worst = max(worst, delta / scale)
            exact.append((n, delta == 0.0 and kv_equal))
    return {"worst": worst, "exact": exact}


def _assert_exactness(model) -> None:
    plain = _compare(model)
    for n, equal in plain["exact"]:
        if n == 1:
            assert equal, "a one-token feed must equal transformers' to the bit"
    _compare(model, fused=True)             # within TOL: asserted inside


def test_bundled_pair_target_and_draft():
    # As transformers loads them (load_pair packs a CPU target's head for MKL, which this step refuses).
    for name in ("target", "draft"):
        model = LlamaForCausalLM.from_pretrained(ROOT / "assets" / "models" / name, dtype=torch.float32,
                                                 attn_implementation="sdpa").eval()
        assert lean_step.unsupported(model) is None
        _assert_exactness(model)
    assert "not a plain linear" in lean_step.unsupported(load_pair(device="cpu").target)


@pytest.mark.parametrize("tied", [True, False])
def test_7b_shaped_qwen2_gqa_biases_tied_and_untied(tied):
    model = qwen2_7b_shaped(tied)
    assert (model.lm_head.weight is model.model.embed_tokens.weight) == tied
    _assert_exactness(model)


def test_smollm2_real(smollm2_fetched):
    from specviz.models.fetch import SMOLLM2, fetched
    target = LlamaForCausalLM.from_pretrained(fetched(SMOLLM2.hub_id), dtype=torch.float32,
                                              attn_implementation="sdpa").eval()
    assert lean_step.unsupported(target) is None
    _assert_exactness(target)


def test_stacked_weights_are_the_models_own_and_leave_its_forward_unchanged():
    model = qwen2_7b_shaped(tied=False, seed=3)
    ids = torch.randint(0, 640, (1, 9))
    with torch.inference_mode():
        before = model(input_ids=ids).logits
    w = lean_step.lean_step_weights(model)
    att = model.model.layers[1].self_attn
    assert att.k_proj.weight.data_ptr() == w.layers[1].qkv[att.q_proj.weight.shape[0]:].data_ptr()
    assert att.v_proj.bias.data_ptr() == w.layers[1].qkv_bias[-att.v_proj.bias.shape[0]:].data_ptr()
    assert lean_step.lean_step_weights(model) is w                 # built once
    with torch.inference_mode():
        assert torch.equal(model(input_ids=ids).logits, before)


def test_off_by_default_on_the_cpu_on_for_cuda_and_set_by_the_environment(monkeypatch):
    monkeypatch.delenv(lean_step.ENV, raising=False)
    assert not lean_step.wanted(torch.device("cpu"))
    assert lean_step.wanted(torch.device("cuda"))
    monkeypatch.setenv(lean_step.ENV, "lean")
    assert lean_step.wanted(torch.device("cpu"))
    monkeypatch.setenv(lean_step.ENV, "transformers")
    assert not lean_step.wanted(torch.device("cuda"))


def test_the_fused_rotary_matrix_is_cos_plus_rolled_signed_sin():
    """The CUDA form's rotary, one batched matmul by each head's matrix, computes x cos + roll(x) sin±:
    two nonzeros a column, so every other product is an exact zero."""
    gen = torch.Generator().manual_seed(0)
    n, heads, hd = 3, 5, 8
    x, cos, sin = (torch.randn(n, heads, hd, generator=gen, dtype=torch.float64) for _ in range(3))
    turn = lean_step._rotation(cos, sin)
    assert turn.shape == (n, heads, hd, hd) and ((turn != 0).sum(-2) == 2).all()
    got = torch.matmul(x.unsqueeze(-2), turn).squeeze(-2)
    torch.testing.assert_close(got, x * cos + x.roll(hd // 2, dims=-1) * sin, rtol=1e-12, atol=1e-12)
    ones, zeros = torch.ones(1, 1, hd, dtype=torch.float64), torch.zeros(1, 1, hd, dtype=torch.float64)
    assert torch.equal(lean_step._rotation(ones, zeros)[0, 0], torch.eye(hd, dtype=torch.float64))  # a v head


def test_models_outside_the_family_or_with_their_own_forward_are_refused():
    from transformers import GPT2Config, GPT2LMHeadModel
    assert "Llama or Qwen2" in lean_step.unsupported(GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2)))
    model = qwen2_7b_shaped(tied=True)
    assert lean_step.unsupported(model) is None
    model.forward = lambda *a, **kw: None         # what gpu_check's parts E and M inject: that forward must run
    assert "not transformers' own" in lean_step.unsupported(model)


def _graph_runs(pair, ids):
    reference = hf_generate(pair, ids, SpecConfig(max_new_tokens=20))
    for cfg in (SpecConfig(k=3, cuda_graphs=True, max_new_tokens=20), SpecConfig(k=1, cuda_graphs=True, max_new_tokens=20)):
        assert last(speculate(pair, ids, cfg)).token_ids == reference
    assert last(decode_baseline(pair, ids, SpecConfig(cuda_graphs=True, max_new_tokens=20))).token_ids == reference


@pytest.fixture(scope="module")
def pair(tiny_dirs):
    """conftest's tiny pair as a GPU loads it: plain linears (load_pair packs fp32 CPU linears for MKL,
    which the lean step refuses; on CUDA nothing is packed)."""
    target, draft = (LlamaForCausalLM.from_pretrained(tiny_dirs[name], dtype=torch.float32, attn_implementation="sdpa")
                     .eval() for name in ("target", "cut"))
    tokenizer = load_tokenizer(tiny_dirs["target"])
    return make_pair(target, draft, tokenizer, target.config.vocab_size, "target", "cut")


def test_graph_path_steps_lean_and_stays_greedy_exact(pair, monkeypatch):
    monkeypatch.setenv(lean_step.ENV, "lean")
    ids = pair.tokenizer(PROMPTS[0])["input_ids"]
    _graph_runs(pair, ids)
    (target,) = graph_model.POOL.bundles(pair.target)[-1:]
    assert target.lean is not None and target.kv is not None
    assert target.cache.layers[0].keys.data_ptr() == target.kv[0].data_ptr()    # views of one tensor a layer
    lm = GraphCachedModel(pair.target, pair.vocab_size, positions=64)
    assert lm.lean_step
    lm.release()
    assert not GraphCachedModel(pair.target, pair.vocab_size, positions=64, lean=False).lean_step


def test_graph_path_lean_on_a_gqa_qwen2_pair(monkeypatch):
    from specviz.bench.random_pair import random_pair
    monkeypatch.setenv(lean_step.ENV, "lean")
    pair = random_pair("tiny", "cpu")
    _graph_runs(pair, list(range(5, 25)))
    assert graph_model.POOL.bundles(pair.target)[-1].lean is not None


def test_tree_verify_through_the_lean_graph_step(pair, monkeypatch):
    monkeypatch.setenv(lean_step.ENV, "lean")
    ids = pair.tokenizer(PROMPTS[1])["input_ids"]
    reference = hf_generate(pair, ids, SpecConfig(max_new_tokens=16))
    done = last(speculate(pair, ids, SpecConfig(tree=(2, 2), cuda_graphs=True, max_new_tokens=16)))
    assert done.token_ids == reference
