"""Every place a round could stop the host for the device, counted in a whole run.

On the CPU nothing really waits, so the runtime's own crossings are instrumented instead: host reads
(`.tolist()`, `.item()`, `.cpu()`, `.numpy()` and any scalar read the dispatcher sees), host-to-device
copies made any other way than runtime/transfer.py's `to_device` (`torch.tensor(..., device=...)`,
a blocking copy from pageable memory on CUDA), and the copies `to_device` makes (pinned and
non-blocking on CUDA: no sync). A round must read the device once (the acceptance verdict) and copy
nothing blocking. The lane clocks and phase marks run here on CPU stand-ins of CUDA's timing events
(`DeviceEvents`), which complete only when a later host read catches the device up: the clocks add no
sync to a round, and wait once a lane, at its end. Where CUDA exists, `torch.cuda.set_sync_debug_mode("warn")`
counts what the driver itself reports as synchronizing, on the graph path, and explicit waits are counted.
"""
from __future__ import annotations

import sys
import time
import warnings

import pytest
import torch

from specviz import SpecConfig, decode_baseline, speculate
from specviz.engine.loop import ahead
from specviz.runtime import cached_model, graph_model, timing, transfer, tree_pass

from .helpers import PROMPTS, last
from .test_events import ScalarReads


class Crossings:
    """Counts host reads, blocking host-to-device tensor creations and to_device copies."""

    def __init__(self, monkeypatch, on_read=None):
        self.reads = self.blocking = self.runtime_blocking = self.copies = 0
        for name in ("tolist", "item", "cpu", "numpy"):
            original = getattr(torch.Tensor, name)

            def counted(tensor, *a, _original=original, **kw):
                self.reads += 1
                if on_read is not None:
                    on_read()
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


class DeviceEvents:
    """A CPU stand-in for CUDA's timing events, with the device's rules: an event completes only when the
    device has caught up with it (a later host read, or a wait on it or on a later event), `query` says
    so without waiting, and reading the time between two events fails unless both have completed (as
    cudaEventElapsedTime does). Counts the waits. Device-wide synchronizes are counted too."""

    def __init__(self, monkeypatch):
        self.pending: list = []
        self.waits = self.device_syncs = 0
        outer = self

        class Event:
            def __init__(self, **_):
                self.at, self.done = None, False

            def record(self):
                self.at, self.done = time.perf_counter(), False
                outer.pending.append(self)

            def query(self):
                return self.done

            def synchronize(self):
                outer.waits += 1
                outer.catch_up(through=self)

            def elapsed_time(self, other):
                assert self.done and other.done, "an event read before the device reached it"
                return (other.at - self.at) * 1000.0

        def device_sync(device):
            self.device_syncs += 1
            self.catch_up()
        monkeypatch.setattr(timing, "device_events", lambda device: Event)
        monkeypatch.setattr(timing, "synchronize", device_sync)

    def catch_up(self, through=None):
        """The device ran everything queued (through one event: everything recorded up to it)."""
        while self.pending:
            event = self.pending.pop(0)
            event.done = True
            if event is through:
                return


@pytest.mark.parametrize("draft_ahead", ["off", "on"])
@pytest.mark.parametrize("cfg", [SpecConfig(k=4, max_new_tokens=24), SpecConfig(k=3, max_new_tokens=24, temperature=1.0),
                                 SpecConfig(k=4, max_new_tokens=24, cuda_graphs=True)])
def test_the_clocks_on_device_events_add_no_sync_to_a_round(pair, cfg, draft_ahead, monkeypatch):
    """The lane clock and the phase marks as they run on CUDA (events, stand-ins here): the round's
    verdict is its one sync; the lane's total waits once, at its end; every event read had completed.
    Drafting ahead as on CUDA (engine/loop/ahead.py) or not: the marks of a draft made ahead are read in
    its own round, after that round's read, and its draft time is charged to that round."""
    monkeypatch.setenv(ahead.ENV, draft_ahead)
    if cfg.cuda_graphs:
        last(speculate(pair, PROMPTS[0], cfg))
    gen = speculate(pair, PROMPTS[0], cfg)
    device = DeviceEvents(monkeypatch)
    count = Crossings(monkeypatch, on_read=device.catch_up)
    events = list(gen)
    monkeypatch.undo()
    done = last(events)
    rounds = done.stats.tally.rounds
    assert rounds > 1
    assert count.reads == rounds and device.device_syncs == 0 and device.waits == 1
    ends = [e for e in events if e.kind == "round_end"]
    assert all(min(e.draft_s, e.target_s, e.accept_s, e.bookkeeping_s) >= 0 for e in ends)
    assert all(e.draft_s > 0 for e in ends if e.drafted)
    phases = sum(e.draft_s + e.verify_s + e.bookkeeping_s for e in ends)
    assert 0 < phases <= done.stats.tally.elapsed_s == done.t       # the phases lie within the lane's segments
    stamps = [e.t for e in events]
    assert stamps == sorted(stamps[:-1]) + stamps[-1:]               # timestamps never go back within the lane


def test_the_plain_lane_on_device_events_syncs_once_a_token(pair, monkeypatch):
    gen = decode_baseline(pair, PROMPTS[1], SpecConfig(max_new_tokens=12))
    device = DeviceEvents(monkeypatch)
    count = Crossings(monkeypatch, on_read=device.catch_up)
    events = list(gen)
    monkeypatch.undo()
    tokens = [e for e in events if e.kind == "target_token"]
    assert count.reads == len(tokens) == len(last(events).token_ids) > 1
    assert device.device_syncs == 0 and device.waits == 1
    assert all(e.target_s >= 0 and e.sample_s >= 0 for e in tokens)
    assert 0 < sum(e.target_s + e.sample_s for e in tokens) <= last(events).stats.tally.elapsed_s


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_sync_debug_mode_sees_one_sync_a_round_on_cuda(tiny_dirs):
    from specviz.models.loading import load_pair
    pair = load_pair(tiny_dirs["target"], tiny_dirs["cut"], device="cuda")
    cfg = SpecConfig(k=4, max_new_tokens=24, cuda_graphs=True)
    last(speculate(pair, PROMPTS[0], cfg))                   # captures and checks first
    torch.cuda.synchronize()
    # The sync debug mode flags copies and reads; explicit waits (a device synchronize, an event's) it
    # does not see, so those are counted where they are called.
    waits = []
    original_sync, original_event_sync = torch.cuda.synchronize, torch.cuda.Event.synchronize
    torch.cuda.synchronize = lambda *a, **k: waits.append("device") or original_sync(*a, **k)
    torch.cuda.Event.synchronize = lambda self: waits.append("event") or original_event_sync(self)
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            done = last(speculate(pair, PROMPTS[0], cfg))
    finally:
        torch.cuda.set_sync_debug_mode("default")
        torch.cuda.synchronize, torch.cuda.Event.synchronize = original_sync, original_event_sync
    syncs = [w for w in seen if "synchroniz" in str(w.message)]
    assert len(syncs) <= done.stats.tally.rounds + 1, [str(w.message)[:120] for w in syncs[:8]]
    assert waits == ["event"], waits           # the lane's total, once at its end


def test_a_runs_events_decode_each_token_once(pair, monkeypatch):
    """The round's events are built from host data: each token's piece is decoded once a run, however
    often the drafts, residual tops and pictures name it."""
    from specviz.engine.loop import detokenize
    decoded = []
    original = detokenize.token_text
    monkeypatch.setattr(detokenize, "token_text", lambda tok, i: decoded.append(i) or original(tok, i))
    done = last(speculate(pair, PROMPTS[0], SpecConfig(k=4, max_new_tokens=24, temperature=1.0, seed=2)))
    assert done.stats.tally.rounds > 1 and decoded
    assert len(decoded) == len(set(decoded))
