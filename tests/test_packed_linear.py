"""The CPU linears: each kernel computes the same product as nn.Linear, the kernels kept are the ones
that timed fastest here for one row and for a verify pass's rows, and a race stays exact on them."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from specviz.runtime import packed_linear as pl
from specviz.runtime.packed_linear import Kernels, PackedLinear, decide, pack_linears

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


def test_the_fastest_kernel_is_kept_per_row_count():
    r = pl.TIMED_ROWS
    # SmolLM2 on an AMD EPYC, 2 threads (module docstring): oneDNN wins both.
    amd = {("gemv", 1): 46.3, ("onednn", 1): 38.4, ("mkl", r): 80.6, ("onednn", r): 39.2}
    assert pair_of(decide(amd)) == ("onednn", "onednn")
    # One thread there: GEMV for one row, oneDNN for more.
    one = {("gemv", 1): 45.5, ("onednn", 1): 50.2, ("mkl", r): 77.4, ("onednn", r): 46.4}
    assert pair_of(decide(one)) == ("gemv", "onednn")
    # MKL's packed GEMM faster for more rows (the Xeon the first figures came from): the original pair.
    xeon = {("gemv", 1): 30.0, ("onednn", 1): 33.0, ("mkl", r): 38.0, ("onednn", r): 45.0}
    chosen = decide(xeon)
    assert pair_of(chosen) == ("gemv", "mkl") and ("mkl", r, 38.0) in chosen.timed_ms
    assert "MKL packed GEMM 4 rows 38.0 ms" in chosen.describe()
    # oneDNN best for one row but MKL for more needs two packed copies: the better pair by their sum.
    split = {("gemv", 1): 30.0, ("onednn", 1): 29.0, ("mkl", r): 38.0, ("onednn", r): 45.0}
    assert pair_of(decide(split)) == ("gemv", "mkl")          # 68 < 74
    split[("onednn", r)] = 38.5
    assert pair_of(decide(split)) == ("onednn", "onednn")     # 67.5 < 68


class TinyLM(nn.Module):
    """Token ids in, logits out, like a causal LM's forward."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.up, self.down = nn.Linear(16, 32), nn.Linear(32, 50)

    def forward(self, input_ids, use_cache=False):
        return self.down(torch.relu(self.up(self.embed(input_ids))))


def test_each_kernel_is_timed_through_the_models_forward_one_packed_copy_at_a_time():
    model = TinyLM()
    pack_linears(model, choose=False)
    modules = [m for m in model.modules() if isinstance(m, PackedLinear)]
    mkl_type = type(modules[0].packed)
    seen = []

    def forward(m, rows):
        assert m is model
        kernels = {x.kernels for x in modules}
        assert len(kernels) == 1                                   # every linear runs the same pair
        k = kernels.pop()
        seen.append((k.one_row if rows == 1 else k.many_rows, rows))
        for x in modules:                                          # the packed copy is the one in use
            assert (x.packed.is_mkldnn if k.many_rows == "onednn" else type(x.packed) is mkl_type)
        return {("gemv", 1): 3e-3, ("onednn", 1): 2e-3, ("mkl", pl.TIMED_ROWS): 5e-3,
                ("onednn", pl.TIMED_ROWS): 4e-3}[seen[-1]]
    ms = pl.measure_kernels(model, modules, forward)
    assert sorted(seen) == sorted(ms) == sorted([("gemv", 1), ("mkl", pl.TIMED_ROWS), ("onednn", 1),
                                                 ("onednn", pl.TIMED_ROWS)])
    assert ms[("onednn", 1)] == pytest.approx(2.0) and pair_of(decide(ms)) == ("onednn", "onednn")


def test_the_real_timer_runs_the_models_forward():
    model = TinyLM()
    pack_linears(model, choose=False)
    modules = [m for m in model.modules() if isinstance(m, PackedLinear)]
    ms = pl.measure_kernels(model, modules)
    assert set(ms) == {("gemv", 1), ("onednn", 1), ("mkl", pl.TIMED_ROWS), ("onednn", pl.TIMED_ROWS)}
    assert all(t > 0 for t in ms.values())


def test_the_choice_is_timed_once_per_shape_and_thread_count(monkeypatch):
    """A second load of the same shapes takes the first's kernels, even where a second timing would
    have chosen the others (a busy moment): both copies then round their logits alike."""
    monkeypatch.setattr(pl, "_chosen", {})
    answers = iter([Kernels("onednn", "onednn"), Kernels("gemv", "mkl"), Kernels("gemv", "onednn")])
    monkeypatch.setattr(pl, "decide", lambda ms: next(answers))
    monkeypatch.setattr(pl, "measure_kernels", lambda model, modules: {})
    packings = []
    real_pack = pl._pack
    monkeypatch.setattr(pl, "_pack", lambda weight, kernel: (packings.append(kernel), real_pack(weight, kernel))[1])
    first, again = TinyLM(), TinyLM()
    pack_linears(first)
    assert packings == ["mkl", "mkl", "onednn", "onednn"]          # built, then packed for the choice
    packings.clear()
    pack_linears(again)
    assert first.linear_kernels == again.linear_kernels == Kernels("onednn", "onednn")     # timed once
    assert packings == ["onednn", "onednn"]                          # packed once, for the kept kernels
    other = nn.Sequential(nn.Linear(16, 8))
    pack_linears(other)
    assert other.linear_kernels == Kernels("gemv", "mkl")                                  # other shapes
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(threads + 1)
        third = TinyLM()
        pack_linears(third)
        assert third.linear_kernels == Kernels("gemv", "onednn")                           # other threads
    finally:
        torch.set_num_threads(threads)


def test_two_loads_of_the_same_shapes_at_once_time_once_and_agree(monkeypatch):
    """Pairs load in visitors' threads: two loads of the same shapes at the same moment must not both time
    (each slowing the other) and keep different kernels."""
    import threading
    import time
    monkeypatch.setattr(pl, "_chosen", {})
    answers = iter([Kernels("onednn", "onednn"), Kernels("gemv", "mkl")])
    monkeypatch.setattr(pl, "decide", lambda ms: next(answers))
    timings = []

    def slow_timing(model, modules):
        timings.append(model)
        time.sleep(0.3)                                  # long enough for the other load to arrive meanwhile
        return {}
    monkeypatch.setattr(pl, "measure_kernels", slow_timing)
    models = [TinyLM(), TinyLM()]
    loads = [threading.Thread(target=pack_linears, args=(m,)) for m in models]
    for t in loads:
        t.start()
    for t in loads:
        t.join(10)
    assert len(timings) == 1
    assert models[0].linear_kernels == models[1].linear_kernels == Kernels("onednn", "onednn")


def test_without_onednn_or_when_timing_fails_the_mkl_pair_stays(monkeypatch):
    monkeypatch.setattr(pl, "_chosen", {})
    needs_more = nn.Sequential(nn.Linear(16, 32))          # its forward takes floats, not token ids
    pack_linears(needs_more)
    assert needs_more.linear_kernels == Kernels()
    monkeypatch.setattr(pl, "_chosen", {})
    monkeypatch.setattr(pl, "onednn_available", lambda: False)
    model = TinyLM()
    pack_linears(model)
    assert model.linear_kernels == Kernels("gemv", "mkl")


def test_pack_linears_keeps_its_choice_on_the_model(monkeypatch):
    model = TinyLM()
    x = torch.tensor([[3, 1, 4, 1, 5]])
    with torch.inference_mode():
        want = model(x)
    monkeypatch.setattr(pl, "_chosen", {})
    monkeypatch.setattr(pl, "measure_kernels", lambda model, modules: {})
    monkeypatch.setattr(pl, "decide", lambda ms: Kernels("onednn", "onednn"))
    assert pack_linears(model) == 2
    assert model.linear_kernels == Kernels("onednn", "onednn")
    assert all(m.kernels == model.linear_kernels for m in model.modules() if isinstance(m, PackedLinear))
    with torch.inference_mode():
        assert torch.allclose(model(x), want, atol=1e-5)
    plain = TinyLM()
    pack_linears(plain, choose=False)              # batched data generation: MKL's pair, untimed
    assert plain.linear_kernels == Kernels()


@pytest.mark.parametrize("kernels", PAIRS, ids=lambda k: f"{k.one_row}-{k.many_rows}")
def test_a_greedy_race_is_exact_on_each_kernel_pair(tiny_dirs, monkeypatch, kernels):
    """Greedy speculative decoding gives plain decoding's tokens whichever kernels the machine chose
    (the verify pass runs the many-rows kernel, the plain lane the one-row kernel)."""
    from specviz.engine import race
    from specviz.engine.loop.config import SpecConfig
    from specviz.models.loading import load_pair
    monkeypatch.setattr(pl, "_chosen", {})
    monkeypatch.setattr(pl, "measure_kernels", lambda model, modules: {})
    monkeypatch.setattr(pl, "decide", lambda ms: kernels)
    pair = load_pair(tiny_dirs["target"], tiny_dirs["cut"], device="cpu")
    assert pair.target.linear_kernels == kernels
    done = {e.lane: e for e in race(pair, "def add(a, b):\n    return", SpecConfig(k=4, max_new_tokens=40))
            if e.kind == "done"}
    assert done["spec"].token_ids == done["base"].token_ids and len(done["spec"].token_ids) > 0
    assert done["spec"].stats.tally.accepted > 0      # verify passes ran and kept drafts
