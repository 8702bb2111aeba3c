"""CUDA-graph bookkeeping, apart from the CUDA calls: which step shapes have a graph, their
static input buffers, one capture per shape, the seconds capturing took, and invalidation.

A CUDA graph records a step's kernels once and replays them with one launch: what a small
model's decode step costs is then its arithmetic and memory traffic, not hundreds of launches
(PyTorch's `torch.cuda.CUDAGraph`; transformers' and gpt-fast's `torch.compile(mode=
"reduce-overhead")` make the same graphs, after minutes of compiling). A replay reads its
inputs from, and writes its output to, the addresses used at capture: so each shape owns
static input buffers that the caller fills (`copy_`) before `run`, and the output must be
read (copied) before the next replay of any graph sharing the memory pool.

The CUDA calls sit behind a two-method `Capturer`: `CudaCapturer` (warm-up on a side stream,
capture into one memory pool per cache, replay) and `EagerCapturer`, which records the
"captures" and calls the step eagerly, writing into a fixed output tensor as a replay does:
on a CPU the tests run the very same buffers and bookkeeping (graph_model.py).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Hashable, Protocol

import torch

Step = Callable[[], torch.Tensor]      # reads only its shape's static buffers; returns the step's output


class Replay(Protocol):
    def run(self) -> torch.Tensor: ...  # the step's output (a static tensor: read it before the next run)


class Capturer(Protocol):
    name: str                           # what the stats call the path: "CUDA graphs" or "eager replay"

    def capture(self, step: Step) -> Replay: ...


@dataclass
class _Graph:
    graph: object
    output: torch.Tensor

    def run(self) -> torch.Tensor:
        self.graph.replay()
        return self.output


class CudaCapturer:
    """torch.cuda.CUDAGraph over the step; the graphs of one cache share one memory pool (they
    never run at the same time, and each output is copied out before the next replay).
    Capture mode "thread_local": another visitor's lane decoding (and synchronizing) in another
    thread meanwhile does not invalidate the capture; captures themselves take turns (a lock)."""
    name = "CUDA graphs"
    WARMUP = 2                          # eager runs on a side stream first (lazy kernel and cuBLAS setup)
    LOCK = threading.Lock()

    def __init__(self, device: torch.device):
        self.device = device
        self.pool = torch.cuda.graph_pool_handle()

    def capture(self, step: Step) -> Replay:
        with self.LOCK:
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                for _ in range(self.WARMUP):
                    step()
            torch.cuda.current_stream(self.device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self.pool, capture_error_mode="thread_local"):
                output = step()
        return _Graph(graph, output)


@dataclass
class _Eager:
    step: Step
    output: torch.Tensor

    def run(self) -> torch.Tensor:
        self.output.copy_(self.step())   # into the same tensor every time, as a replay writes it
        return self.output


class EagerCapturer:
    """No device graphs: each run calls the step. Counts captures, so tests can check the bookkeeping."""
    name = "eager replay"

    def __init__(self):
        self.captures = 0

    def capture(self, step: Step) -> Replay:
        self.captures += 1
        return _Eager(step, step().clone())


def capturer_for(device: torch.device) -> Capturer:
    return CudaCapturer(device) if device.type == "cuda" else EagerCapturer()


@dataclass
class GraphSet:
    """The replays of one cache, one per step shape (key), captured on first use.

    `buffers[key]` holds that shape's static inputs, made by `make_buffers(key)` once;
    `capture_s` sums the seconds of every capture (warm-up included, device-synchronized).
    After `invalidate()` (the cache's memory is given up) nothing captured may run again."""
    capturer: Capturer
    device: torch.device
    replays: dict[Hashable, Replay] = field(default_factory=dict)
    buffers: dict[Hashable, object] = field(default_factory=dict)
    captures: int = 0
    capture_s: float = 0.0
    valid: bool = True
    failed: str | None = None           # why a capture failed (then every step runs eagerly)

    def buffers_for(self, key: Hashable, make_buffers: Callable[[Hashable], object]):
        if not self.valid:
            raise RuntimeError("this cache's graphs were invalidated: its memory was given up")
        if key not in self.buffers:
            self.buffers[key] = make_buffers(key)
        return self.buffers[key]

    def run(self, key: Hashable, step: Step) -> torch.Tensor:
        """Replay key's graph, capturing it from `step` first if it has none. The caller has
        filled key's buffers already (a capture computes the step too: warm-up is a real run).
        If a capture fails, this set runs every step eagerly from then on (same buffers, same
        results, launch-bound again) and `path` says why."""
        if self.failed is not None:
            return step()
        replay = self.replays.get(key)
        if replay is None:
            start = time.perf_counter()
            try:
                replay = self.capturer.capture(step)
            except Exception as exc:           # noqa: BLE001 - any capture failure: decode on, eagerly
                self.failed = f"{type(exc).__name__}: {str(exc)[:200]}"
                return step()
            finally:
                _sync(self.device)
                self.capture_s += time.perf_counter() - start
            self.replays[key] = replay
            self.captures += 1
        return replay.run()

    @property
    def path(self) -> str:
        """The decode path's name for the stats."""
        return self.capturer.name if self.failed is None else f"eager (graph capture failed: {self.failed})"

    def invalidate(self) -> None:
        self.replays.clear()
        self.buffers.clear()
        self.valid = False


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
