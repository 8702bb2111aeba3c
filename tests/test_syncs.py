"""Every place a round could stop the host for the device, counted in a whole run.

On the CPU nothing really waits, so the runtime's own crossings are instrumented instead: host reads
(`.tolist()`, `.item()`, `.cpu()`, `.numpy()` and any scalar read the dispatcher sees), host-to-device
copies made any other way than runtime/transfer.py's `to_device` (`torch.tensor(..., device=...)`,
a blocking copy from pageable memory on CUDA), and the copies `to_device` makes (pinned and
non-blocking on CUDA: no sync). A round must read the device once (the acceptance verdict) and copy
nothing blocking. Where CUDA exists, `torch.cuda.set_sync_debug_mode("warn")` counts what the
driver itself reports as synchronizing, on the graph path.
"""
from __future__ import annotations

import sys
import warnings

import pytest
import torch

from specviz import SpecConfig, decode_baseline, speculate
from specviz.runtime import cached_model, graph_model, transfer, tree_pass

from .helpers import PROMPTS, last
from .test_events import ScalarReads


class Crossings:
    """Counts host reads, blocking host-to-device tensor creations and to_device copies."""

    def __init__(self, monkeypatch):
        self.reads = self.blocking = self.runtime_blocking = self.copies = 0
        for name in ("tolist", "item", "cpu", "numpy"):
            original = getattr(torch.Tensor, name)

            def counted(tensor, *a, _original=original, **kw):
                self.reads += 1
                return _original(tensor, *a, **kw)
            monkeypatch.setattr(torch.Tensor, name, counted)
        original_tensor = torch.tensor

        def made(*a, **kw):
            tensor = original_tensor(*a, **kw)
            if kw.get("device") is not None and tensor.numel():
                self.blocking += 1          # host data straight onto a device: a blocking copy on CUDA
                self.runtime_blocking += "/specviz/runtime/" in sys._getframe(1).f_code.co_filename
            return tensor                   # (an empty one, as transformers' cache makes, copies nothing)
        monkeypatch.setattr(torch, "tensor", made)
        original_copy = transfer.to_device

        def copied(values, device):
            self.copies += 1
            return original_copy(values, device)
        for module in (cached_model, graph_model, tree_pass):
            monkeypatch.setattr(module, "to_device", copied)


@pytest.mark.parametrize("cfg", [SpecConfig(k=4, max_new_tokens=24), SpecConfig(k=3, max_new_tokens=24, temperature=1.0),
                                 SpecConfig(k=4, max_new_tokens=24, cuda_graphs=True),
                                 SpecConfig(tree=(2, 2), max_new_tokens=16, cuda_graphs=True)])
def test_one_read_and_no_blocking_copy_a_round(pair, cfg, monkeypatch):
    if cfg.cuda_graphs:           # captured and checked first (a replay's check reads its deltas, once a shape)
        last(speculate(pair, PROMPTS[0], cfg))
    gen = speculate(pair, PROMPTS[0], cfg)
    with ScalarReads() as scalars:
        count = Crossings(monkeypatch)
        events = list(gen)
        monkeypatch.undo()
    done = last(events)
    assert count.reads == done.stats.tally.rounds            # the verdict, once a round
    assert scalars.n == 0                                    # no other scalar read
    assert count.runtime_blocking == 0                       # no host data straight onto the device
    if cfg.tree is None:
        assert count.blocking == 0
    # A tree's round still makes small index tensors on the device in engine/loop (acceptance.py's tree
    # rows, model_drafter.py's grown rows): outside the runtime, left to their owners.
    # The committed tokens each model lacks go down once a feed, through to_device (a tree's feed also
    # sends its rotary positions and mask, and a kept path its slots).
    assert count.copies >= 1
    if cfg.tree is None:
        assert count.copies <= done.stats.target_forwards + done.stats.draft_forwards


def test_plain_lane_reads_once_a_token_and_copies_nothing_blocking(pair, monkeypatch):
    last(decode_baseline(pair, PROMPTS[1], SpecConfig(max_new_tokens=12, cuda_graphs=True)))
    gen = decode_baseline(pair, PROMPTS[1], SpecConfig(max_new_tokens=12, cuda_graphs=True))
    count = Crossings(monkeypatch)
    events = list(gen)
    monkeypatch.undo()
    assert count.reads == len(last(events).token_ids) and count.blocking == 0


def test_to_device_stages_pinned_non_blocking_copies_on_cuda(monkeypatch):
    calls = []
    values = torch.arange(4)
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda t: calls.append("pinned") or t)
    original_to = torch.Tensor.to

    def to(t, *a, **kw):
        calls.append(("to", str(a[0]) if a else None, kw.get("non_blocking", False)))
        return original_to(t, "cpu")
    monkeypatch.setattr(torch.Tensor, "to", to)
    transfer.to_device(values, torch.device("cuda", 0))
    assert calls == ["pinned", ("to", "cuda:0", True)]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_sync_debug_mode_sees_one_sync_a_round_on_cuda(tiny_dirs):
    from specviz.models.loading import load_pair
    pair = load_pair(tiny_dirs["target"], tiny_dirs["cut"], device="cuda")
    cfg = SpecConfig(k=4, max_new_tokens=24, cuda_graphs=True)
    last(speculate(pair, PROMPTS[0], cfg))                   # captures and checks first
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            done = last(speculate(pair, PROMPTS[0], cfg))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    syncs = [w for w in seen if "synchroniz" in str(w.message)]
    assert len(syncs) <= done.stats.tally.rounds + 1, [str(w.message)[:120] for w in syncs[:8]]
