"""The graph path's remaining risks, closed and checked with injected failures on the CPU.

- A replay runs on the device's default stream only (graphs captured on one stream share its cuBLAS
  workspace; replays serialized on the default stream never use it at once): a replay elsewhere is
  refused in one line.
- A capture that fails (out of memory or otherwise) gives its pool back to the device at once.
- Out of memory in a replay check's eager step: the run goes on eagerly, its output the step's.
"""
from __future__ import annotations

import pytest
import torch

from specviz.runtime import graph_capture
from specviz.runtime.graph_capture import EagerCapturer, GraphSet, StreamError, _Graph


class _Replays:
    def __init__(self):
        self.n = 0

    def replay(self):
        self.n += 1


def test_a_replay_off_the_default_stream_is_refused(monkeypatch):
    streams = {"current": "side", "default": "default"}
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: streams["current"])
    monkeypatch.setattr(torch.cuda, "default_stream", lambda device=None: streams["default"])
    graph = _Replays()
    replay = _Graph(graph, torch.zeros(2), torch.device("cuda", 0))
    with pytest.raises(StreamError, match="default stream"):
        replay.run()
    assert graph.n == 0
    streams["current"] = "default"
    replay.run()
    assert graph.n == 1


@pytest.fixture
def given_back(monkeypatch):
    calls = []
    monkeypatch.setattr(graph_capture, "give_back_cached", lambda device: calls.append(device))
    return calls


@pytest.mark.parametrize("error, verdict", [(torch.OutOfMemoryError("CUDA out of memory"), "closed"),
                                            (RuntimeError("operation not permitted when stream is capturing"),
                                             "distrusted")])
def test_a_failed_capture_gives_its_pool_back(given_back, error, verdict):
    class Failing(EagerCapturer):
        def capture(self, step):
            raise error

    graphs = GraphSet(Failing(), torch.device("cpu"))
    graphs.capture({(1, 1): lambda: torch.ones(3)})
    assert given_back == [torch.device("cpu")]
    assert not graphs.replays
    assert getattr(graphs, verdict) is not None and graphs.eager_reason is not None
    assert torch.equal(graphs.run((1, 1), lambda: torch.ones(3), rebuild=lambda: None), torch.ones(3))


def test_out_of_memory_in_the_checks_eager_step_runs_the_round_eagerly(given_back):
    calls = {"n": 0}

    def step():
        calls["n"] += 1
        if calls["n"] == 2:                      # the first replay's check: its eager step
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 MiB")
        return torch.full((1, 4), float(calls["n"]))

    graphs = GraphSet(EagerCapturer(), torch.device("cpu"))
    out = graphs.run((1, 1), step, rebuild=lambda: pytest.fail("no rebuild: nothing stale was replayed"), at=7)
    assert torch.equal(out, torch.full((1, 4), 3.0))         # the step run again, eagerly
    assert "out of device memory" in graphs.eager_reason
    assert graphs.distrusted is None                         # not the model's fault: this run only
    assert not graphs.replays and given_back == [torch.device("cpu")]
    assert torch.equal(graphs.run((1, 1), step, rebuild=lambda: None, at=8), torch.full((1, 4), 4.0))


def test_other_errors_in_the_checks_eager_step_still_raise():
    def step():
        raise ValueError("a bug, not memory")

    graphs = GraphSet(EagerCapturer(), torch.device("cpu"))
    graphs.replays[(1, 1)] = graph_capture._Eager(lambda: torch.ones(1), torch.ones(1))
    with pytest.raises(ValueError):
        graphs.run((1, 1), step, rebuild=lambda: None, at=3)


def test_out_of_memory_cloning_the_checks_entries_runs_the_round_eagerly_and_gives_the_pool_back(given_back):
    """No room to keep the eager step's K/V entries for the comparison: that round's output is the eager
    step's (already run, its entries written), the set closes for this run, and its graphs' memory goes
    back at once."""
    calls = {"n": 0}

    def step():
        calls["n"] += 1
        return torch.full((1, 4), float(calls["n"]))

    def state():
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 MiB")

    graphs = GraphSet(EagerCapturer(), torch.device("cpu"))
    out = graphs.run((1, 1), step, rebuild=lambda: pytest.fail("nothing replayed"), at=5, state=state)
    assert torch.equal(out, torch.full((1, 4), 2.0))         # the capture's step, then the check's eager step
    assert graphs.eager_reason == "out of device memory for the replay check" and graphs.distrusted is None
    assert not graphs.replays and given_back == [torch.device("cpu")]
    assert torch.equal(graphs.run((1, 1), step, rebuild=lambda: None, at=6), torch.full((1, 4), 3.0))
