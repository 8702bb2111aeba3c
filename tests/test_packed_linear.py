"""The CPU linears: each kernel computes the same product as nn.Linear, the kernels kept are the ones
that timed fastest here for one row and for a verify pass's rows, and a race stays exact on them."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from specviz.models import packed_linear as pl
from specviz.models.packed_linear import Kernels, PackedLinear, choose_kernels, pack_linears

pytestmark = pytest.mark.skipif(not (pl.mkl_packing_available() and pl.onednn_available()),
                                reason="MKL and oneDNN x86 builds only")

PAIRS = [Kernels("gemv", "mkl"), Kernels("gemv", "onednn"), Kernels("onednn", "onednn")]


@pytest.mark.parametrize("kernels", PAIRS, ids=lambda k: f"{k.one_row}-{k.many_rows}")
@pytest.mark.parametrize("rows", [1, 2, 5, 40])
def test_every_kernel_pair_computes_the_linear(kernels, rows):
    torch.manual_seed(0)
    ref = nn.Linear(96, 320)
    packed = PackedLinear(ref.weight, ref.bias, kernels)
    x = torch.randn(2, rows, 96)[:1]                     # a (batch, rows, in) view, as a model passes it
    with torch.inference_mode():
        want = nn.functional.linear(x.double(), ref.weight.double(), ref.bias.double()).float()
        got = packed(x)
    assert got.shape == (1, rows, 320)
    assert torch.allclose(got, want, atol=1e-5, rtol=1e-5)
    assert dict(packed.state_dict()).keys() == {"weight", "bias"}        # the checkpoint's names, nothing added


def pair_of(kernels: Kernels) -> tuple[str, str]:
    return kernels.one_row, kernels.many_rows


def _timer(ms: dict, seen: list | None = None):
    def timer(weights, rows, kernel):
        if seen is not None:
            seen.append(sum(w.numel() * w.element_size() for w in weights))
        return ms[(kernel, rows)] / 1e3
    return timer


def test_the_fastest_kernel_is_kept_per_row_count():
    r = pl.TIMED_ROWS
    # An AMD EPYC's figures (module docstring, 2 threads): oneDNN wins both.
    amd = {("gemv", 1): 36.2, ("onednn", 1): 26.8, ("mkl", r): 65.5, ("onednn", r): 23.9}
    assert pair_of(choose_kernels([torch.zeros(8, 8)], _timer(amd))) == ("onednn", "onednn")
    # One thread there: GEMV for one row, oneDNN for more.
    one = {("gemv", 1): 36.0, ("onednn", 1): 39.4, ("mkl", r): 65.9, ("onednn", r): 32.1}
    assert pair_of(choose_kernels([torch.zeros(8, 8)], _timer(one))) == ("gemv", "onednn")
    # MKL's packed GEMM faster for more rows (the Xeon the first figures came from): the original pair.
    xeon = {("gemv", 1): 30.0, ("onednn", 1): 33.0, ("mkl", r): 38.0, ("onednn", r): 45.0}
    chosen = choose_kernels([torch.zeros(8, 8)], _timer(xeon))
    assert pair_of(chosen) == ("gemv", "mkl") and ("mkl", r, 38.0) in chosen.timed_ms
    # oneDNN best for one row but MKL for more needs two packed copies: the better pair by their sum.
    split = {("gemv", 1): 30.0, ("onednn", 1): 29.0, ("mkl", r): 38.0, ("onednn", r): 45.0}
    assert pair_of(choose_kernels([torch.zeros(8, 8)], _timer(split))) == ("gemv", "mkl")          # 68 < 74
    split[("onednn", r)] = 38.5
    assert pair_of(choose_kernels([torch.zeros(8, 8)], _timer(split))) == ("onednn", "onednn")     # 67.5 < 68


def test_the_timing_streams_a_bounded_share_of_the_weights(monkeypatch):
    monkeypatch.setattr(pl, "TIMED_BYTES", 3 * 4 * 64 * 64)        # three 64 x 64 fp32 matrices
    seen = []
    ms = {(k, r): 1.0 for k in ("gemv", "onednn", "mkl") for r in (1, pl.TIMED_ROWS)}
    choose_kernels([torch.zeros(64, 64)] * 10, _timer(ms, seen))
    assert seen and all(size == 3 * 4 * 64 * 64 for size in seen)
    seen.clear()
    choose_kernels([torch.zeros(64, 64)] * 2, _timer(ms, seen))          # a model smaller than that: all of it
    assert all(size == 2 * 4 * 64 * 64 for size in seen)


def test_without_onednn_or_when_it_fails_the_mkl_pair_stays(monkeypatch):
    def broken(weights, rows, kernel):
        raise RuntimeError("oneDNN refused")
    assert choose_kernels([torch.zeros(8, 8)], broken) == Kernels()
    monkeypatch.setattr(pl, "onednn_available", lambda: False)
    assert choose_kernels([torch.zeros(8, 8)]) == Kernels("gemv", "mkl")


def test_the_real_timer_runs_each_kernel():
    weights = [torch.randn(64, 32), torch.randn(32, 64)]
    for kernel, rows in [("gemv", 1), ("onednn", 1), ("mkl", 4), ("onednn", 4)]:
        assert pl.time_kernels(weights, rows, kernel, repeats=1) > 0


def test_pack_linears_keeps_its_choice_on_the_model(monkeypatch):
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    x = torch.randn(3, 16)
    with torch.inference_mode():
        want = model(x)
    monkeypatch.setattr(pl, "choose_kernels", lambda weights: Kernels("onednn", "onednn"))
    assert pack_linears(model) == 2
    assert model.linear_kernels == Kernels("onednn", "onednn")
    assert all(m.kernels == model.linear_kernels for m in model if isinstance(m, PackedLinear))
    with torch.inference_mode():
        assert torch.allclose(model(x), want, atol=1e-5)
    plain = nn.Sequential(nn.Linear(16, 32))
    pack_linears(plain, choose=False)              # batched data generation: MKL's pair, untimed
    assert plain.linear_kernels == Kernels()


@pytest.mark.parametrize("kernels", PAIRS, ids=lambda k: f"{k.one_row}-{k.many_rows}")
def test_a_greedy_race_is_exact_on_each_kernel_pair(tiny_dirs, monkeypatch, kernels):
    """Greedy speculative decoding gives plain decoding's tokens whichever kernels the machine chose
    (the verify pass runs the many-rows kernel, the plain lane the one-row kernel)."""
    from specviz.engine import race
    from specviz.engine.config import SpecConfig
    from specviz.models.loading import load_pair
    monkeypatch.setattr(pl, "choose_kernels", lambda weights: kernels)
    pair = load_pair(tiny_dirs["target"], tiny_dirs["cut"], device="cpu")
    assert pair.target.linear_kernels == kernels
    done = {e.lane: e for e in race(pair, "def add(a, b):\n    return", SpecConfig(k=4, max_new_tokens=40))
            if e.kind == "done"}
    assert done["spec"].token_ids == done["base"].token_ids and len(done["spec"].token_ids) > 0
    assert done["spec"].stats.tally.accepted > 0      # verify passes ran and kept drafts
