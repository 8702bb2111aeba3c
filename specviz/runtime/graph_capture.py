"""CUDA-graph bookkeeping, apart from the model: which step shapes have a graph, their static
input buffers, captures taken all at once under the device gate, a check of each shape's
replays against the eager step, and failures kept as narrow as their cause.

A CUDA graph records a step's kernels once and replays them with one launch: what a small
model's decode step costs is then its arithmetic and memory traffic, not hundreds of launches
(PyTorch's `torch.cuda.CUDAGraph`; gpt-fast's and vLLM's decoding does the same). A replay reads
its inputs from, and writes its output to, the addresses used at capture: each shape owns static
input buffers that the caller fills (`copy_`) before `run`, and the output must be read (copied)
before the next replay of any graph sharing the memory pool.

Rules kept here (PyTorch's CUDA-graph notes, the CUDA runtime's stream-capture rules):
- Only one capture is underway in the process, and no other device work that may synchronize or
  allocate runs while it is: `GATE` is a device-wide lock that captures take exclusively and
  lanes' steps (lane.py) and every device synchronize (`timing.synchronize`) take shared, so
  they wait for a capture to end and a capture waits for the running ones to finish.
- A capture runs on a stream of the model's device, under that device (`torch.cuda.device`).
- A failed capture ends its capture and restores the thread's stream in a `finally`; the device's
  default random generator never enters capture mode (a capture registers it, and a capture that
  fails would leave it there: every later random draw on the device would then raise), and the
  garbage collector is off while a capture runs (a finalizer could free device memory mid-capture).
- A failure is as narrow as its cause: out of device memory closes that one set for that one run
  (`closed`; its cache is not pooled again); any other capture error distrusts that set's model
  (`distrusted`, which the pool keeps); only a device that no longer answers after the failure
  turns graphs off for the whole process (`failure()`).
- A shape's replays are compared with the eager step on the same inputs, and the K/V entries each
  wrote (`check`, `check_state`), until one passes at a state (`at`: the feed's first position)
  other than the one it was captured at: a graph that froze a host value at capture replays
  correctly at that state only, so a check there proves nothing. A mismatch makes its set eager
  (`distrusted`) and the caller rebuilds its cache eagerly.

The CUDA calls sit behind a one-method `Capturer`: `CudaCapturer` and `EagerCapturer`, the CPU
stand-in, which calls the step at each "replay", writing into a fixed output tensor as a replay
does: on a CPU the tests run the very same buffers, gate, checks and bookkeeping (graph_model.py).
"""
from __future__ import annotations

import gc
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterator, Protocol

import torch

Step = Callable[[], torch.Tensor]      # reads only its shape's static buffers; returns the step's output
State = Callable[[], list[torch.Tensor]]   # the cache entries a step may write (its K/V over the filled span)
# A replay runs the very kernels the eager step launches on the same inputs, so the two agree to the
# bit when the kernels are deterministic: on an H100, 0.0 in fp32 and in bf16 over every step of
# gpu_check's part A. The bound, a share of the logits' largest magnitude, allows about one unit in
# the last place of the dtype there (bf16 keeps 8 significant bits, fp16 11: a reduction order that
# differs), while a value frozen at capture (a position, a length) moves logits by tenths or more.
TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-9, torch.bfloat16: 1e-2, torch.float16: 2e-3}


class Replay(Protocol):
    def run(self) -> torch.Tensor: ...  # the step's output (a static tensor: read it before the next run)


class Capturer(Protocol):
    name: str                           # what the stats call the path: "CUDA graphs" or "eager replay"

    def capture(self, step: Step) -> Replay: ...


class DeviceGate:
    """A readers-writer lock: `exclusive()` for captures, `shared()` for device work that may
    synchronize or allocate (a lane's whole step, any device synchronize). Writers go first (a
    waiting capture holds new readers back, so steady stepping cannot starve it). Shared holds nest
    within a thread, and the thread holding it exclusively passes through its own `shared()`; a
    thread holding it shared cannot capture (`holds_shared`: its caller decodes that feed eagerly),
    since two such threads would each wait for the other."""

    def __init__(self):
        self._cond = threading.Condition()
        self._readers = 0
        self._writer: int | None = None
        self._waiting = 0
        self._mine = threading.local()
        self._after: list[Callable[[], None]] = []

    def captured_by_me(self) -> bool:
        return self._writer == threading.get_ident()

    def after_capture(self, fn: Callable[[], None]) -> None:
        """Run `fn` once the capture this thread holds ends (device work that must not run inside it,
        such as freeing a dropped cache's graphs from a finalizer); at once when this thread holds none."""
        if self.captured_by_me():
            self._after.append(fn)
        else:
            fn()

    @property
    def capturing(self) -> bool:
        return self._writer is not None

    def holds_shared(self) -> bool:
        return getattr(self._mine, "depth", 0) > 0 and self._writer != threading.get_ident()

    @contextmanager
    def shared(self) -> Iterator[None]:
        depth = getattr(self._mine, "depth", 0)
        if depth > 0 or self._writer == threading.get_ident():
            self._mine.depth = depth + 1
            try:
                yield
            finally:
                self._mine.depth = depth
            return
        with self._cond:
            while self._writer is not None or self._waiting:
                self._cond.wait()
            self._readers += 1
        self._mine.depth = 1
        try:
            yield
        finally:
            self._mine.depth = 0
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        me = threading.get_ident()
        if self._writer == me:
            yield
            return
        if self.holds_shared():
            raise RuntimeError("a capture inside device work this thread holds shared would deadlock")
        with self._cond:
            self._waiting += 1
            try:
                while self._writer is not None or self._readers:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._writer = me
        try:
            yield
        finally:
            try:
                while self._after:          # still exclusive: nothing else touches the device meanwhile
                    fn = self._after.pop(0)     # (one queued while draining runs too)
                    try:
                        fn()
                    except Exception:       # noqa: BLE001 - one failed clean-up must not strand the rest
                        pass
            finally:
                with self._cond:
                    self._writer = None
                    self._cond.notify_all()


GATE = DeviceGate()
_failure: list[str] = []            # why a capture failed in this process ([] while none has)


def failure() -> str | None:
    """Why graphs are off in this process (a capture failed), or None."""
    return _failure[0] if _failure else None


def fail(exc: BaseException) -> str:
    if not _failure:
        _failure.append(f"{type(exc).__name__}: {str(exc)[:200]}")
    return _failure[0]


def clear_failure() -> None:
    """Turn graphs back on after a failure (tests; a process never does it itself)."""
    _failure.clear()


@dataclass
class _Graph:
    graph: object
    output: torch.Tensor
    device: torch.device | None = None

    def run(self) -> torch.Tensor:
        if self.device is not None:
            assert_default_stream(self.device)
        self.graph.replay()
        return self.output


class StreamError(RuntimeError):
    """A graph was about to replay off the device's default stream."""


def assert_default_stream(device: torch.device) -> None:
    """Replays run on the device's default stream only. Every graph here was captured on one capture
    stream and shares that stream's cuBLAS workspace; replays serialized on the default stream never
    overlap, so they never use the workspace at once. A replay on a side stream could run beside
    another graph's and corrupt both: refuse it, in one line."""
    current, default = torch.cuda.current_stream(device), torch.cuda.default_stream(device)
    if current != default:
        raise StreamError(f"a CUDA graph replay on stream {current} instead of the default stream {default}: "
                          "graphs share one cuBLAS workspace and replay on the default stream only")


_CAPTURE_STREAMS: dict[int, "torch.cuda.Stream"] = {}
_STREAMS_LOCK = threading.Lock()


def capture_stream(device: torch.device) -> "torch.cuda.Stream":
    """The one stream every capture on `device` runs on (captures take turns under the gate). One
    per device, not one per cache: cuBLAS keeps a workspace for each stream it has run on (about
    40 MB each on an H100, seen in gpu_check's part F) that no cache drop or empty_cache frees."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    with _STREAMS_LOCK:
        if index not in _CAPTURE_STREAMS:
            with torch.cuda.device(index):
                _CAPTURE_STREAMS[index] = torch.cuda.Stream(index)
        return _CAPTURE_STREAMS[index]


class CudaCapturer:
    """torch.cuda.CUDAGraph over the step, on the device's capture stream; the graphs of one cache
    share one memory pool (they never run at the same time, and each output is copied out before
    the next replay), captured on that one stream, as PyTorch asks of a shared pool. Capture mode
    "thread_local", and the gate (GraphSet.capture) keeps lanes' steps and device synchronizes of
    every thread waiting while it captures."""
    name = "CUDA graphs"
    WARMUP = 2                          # eager runs on the capture stream first (lazy kernel and cuBLAS setup)

    def __init__(self, device: torch.device):
        self.device = device
        with torch.cuda.device(device):
            self.pool = torch.cuda.graph_pool_handle()
            self.stream = capture_stream(device)

    def capture(self, step: Step) -> Replay:
        with torch.cuda.device(self.device), _spare_generator(self.device):
            caller = torch.cuda.current_stream(self.device)
            self.stream.wait_stream(caller)
            graph = torch.cuda.CUDAGraph()
            # The `with` restores the thread's stream whatever happens inside (torch.cuda.graph's own
            # __exit__ ends the capture first and, when that raises, leaves the capture stream current).
            with torch.cuda.stream(self.stream):
                for _ in range(self.WARMUP):
                    step()
                torch.cuda.synchronize(self.device)         # the gate is ours: no capture is underway
                graph.capture_begin(self.pool, capture_error_mode="thread_local")
                try:
                    output = step()
                except BaseException:
                    _end_quietly(graph, self.device, self.pool)
                    raise
                try:
                    graph.capture_end()
                except BaseException:
                    _stop_pool_routing(self.device, self.pool)
                    raise
            caller.wait_stream(self.stream)
        return _Graph(graph, output, self.device)


@contextmanager
def _spare_generator(device: torch.device) -> Iterator[None]:
    """Hand the device's default random generator a spare state for the capture, and its own state
    back after it. A capture registers the default generator and puts its state in capture mode until
    the capture ends well; a capture that fails leaves it there, and every later random draw on the
    device (a model's initialisation, `torch.rand`) then raises "Offset increment outside graph
    capture". The steps captured here draw no random numbers (sampling runs outside the graphs, on
    each run's own generator), so the spare state is never advanced."""
    default = torch.cuda.default_generators[device.index if device.index is not None else torch.cuda.current_device()]
    own = default.graphsafe_get_state()
    spare = torch.Generator(device=device)
    spare.set_state(default.get_state())
    default.graphsafe_set_state(spare.graphsafe_get_state())
    try:
        yield
    finally:
        default.graphsafe_set_state(own)


@contextmanager
def _no_gc() -> Iterator[None]:
    """No garbage collection while a capture runs: a finalizer run by it (a model, a cache) could
    free or touch device memory in the middle of the capture."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _end_quietly(graph, device: torch.device, pool) -> None:
    """End a capture whose step raised (the step's error is the one worth reporting)."""
    try:
        graph.capture_end()
    except Exception:          # noqa: BLE001 - the capture was invalid anyway
        _stop_pool_routing(device, pool)


def _stop_pool_routing(device: torch.device, pool) -> None:
    """capture_end raises before it tells the allocator the capture is over when the CUDA call to end
    it fails: tell it here, so that nothing more is routed to the dead capture's pool."""
    end = getattr(torch._C, "_cuda_endAllocateToPool", None)
    if end is not None:
        try:
            end(device.index if device.index is not None else torch.cuda.current_device(), pool)
        except Exception:      # noqa: BLE001 - already ended
            pass


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


def check(eager: torch.Tensor, replayed: torch.Tensor, dtype: torch.dtype) -> tuple[str | None, float]:
    """Why a replay's output (keep, V) is not the eager step's on the same inputs (None: it is), and
    the largest difference over the entries finite in both. Non-finite entries must be the eager
    step's exactly (a draft whose head covers part of the vocabulary gives -inf elsewhere, by design,
    and its replay must give -inf there too); a NaN fails; every row's argmax must agree and the
    largest difference stay within TOLERANCE of the logits' largest finite magnitude."""
    eager, replayed = eager.float(), replayed.float()
    if eager.shape != replayed.shape:
        return f"shape {tuple(replayed.shape)} instead of {tuple(eager.shape)}", float("inf")
    if torch.isnan(replayed).any():
        return "NaN in the replayed logits", float("inf")
    finite = torch.isfinite(eager)
    if not torch.equal(finite, torch.isfinite(replayed)) or not torch.equal(eager[~finite], replayed[~finite]):
        return "non-finite logits where the eager step's differ", float("inf")
    if not finite.any():
        return None, 0.0
    delta = (eager[finite] - replayed[finite]).abs().max().item()
    bound = TOLERANCE.get(dtype, 1e-2) * max(1.0, eager[finite].abs().max().item())
    if not torch.equal(eager.argmax(-1), replayed.argmax(-1)):
        return f"a different argmax (max |delta| {delta:.3g})", delta
    if delta > bound:
        return f"max |delta| {delta:.3g} over {bound:.3g}", delta
    return None, delta


def check_state(eager: list[torch.Tensor], replayed: list[torch.Tensor], dtype: torch.dtype) -> tuple[str | None, float]:
    """Why the cache entries a replay left (keys and values over the filled span, per layer) are not
    the eager step's (None: they are), and the largest difference: a graph that writes at a position
    frozen at capture leaves an entry the eager step wrote untouched and overwrites another."""
    worst = 0.0
    for want, got in zip(eager, replayed):
        if want.shape != got.shape or torch.isnan(got).any():
            return "a different K/V cache", float("inf")
        if want.numel():
            delta = (want.float() - got.float()).abs().max().item()
            worst = max(worst, delta)
            if delta > TOLERANCE.get(dtype, 1e-2) * max(1.0, want.float().abs().max().item()):
                return f"K/V entries differ (max |delta| {delta:.3g})", delta
    return None, worst


@dataclass
class GraphSet:
    """The replays of one cache, one per step shape (key).

    `capture(plan, at)` captures every shape of `plan` (key -> step) it lacks, all at once under the
    gate; `run(key, step, rebuild, at, state)` replays key's graph, checking its replays until one
    passes at a state other than its capture's (`at`: the feed's first position; None for a capture
    made before any feed, at positions no feed replays). `buffers[key]` holds that shape's static
    inputs, made by `make_buffers(key)` once; `capture_s` sums the seconds of every capture (warm-up
    included, device-synchronized); `worst_delta`, the largest difference any check found. After
    `invalidate()` (the cache's memory is given up) nothing captured may run again."""
    capturer: Capturer
    device: torch.device
    dtype: torch.dtype = torch.float32
    replays: dict[Hashable, Replay] = field(default_factory=dict)
    buffers: dict[Hashable, object] = field(default_factory=dict)
    captured_at: dict[Hashable, Hashable] = field(default_factory=dict)   # the state each shape was captured at
    checked: set = field(default_factory=set)     # shapes whose replay matched the eager step at another state
    captures: int = 0
    capture_s: float = 0.0
    checks: int = 0
    last_delta: float = 0.0             # the largest difference the latest check found
    worst_delta: float | None = None
    valid: bool = True
    distrusted: str | None = None       # why this set's model must not replay (a check failed, a capture raised)
    closed: str | None = None           # why this set runs eagerly for now (out of device memory): not its model's fault

    def buffers_for(self, key: Hashable, make_buffers: Callable[[Hashable], object]):
        if not self.valid:
            raise RuntimeError("this cache's graphs were invalidated: its memory was given up")
        if key not in self.buffers:
            self.buffers[key] = make_buffers(key)
        return self.buffers[key]

    @property
    def eager_reason(self) -> str | None:
        """Why this set's steps run eagerly (None: they replay)."""
        if failure() is not None:
            return f"graph capture failed: {failure()}"
        return self.distrusted or self.closed

    def capture(self, plan: dict[Hashable, Step], at: Hashable = None) -> None:
        """Capture every shape of `plan` not captured yet, holding the gate exclusively: no device
        synchronize anywhere in the process meanwhile, and no garbage collection in this thread. Out
        of device memory closes this set (its run goes on eagerly); any other error distrusts it; a
        device that no longer answers after the error turns graphs off for the process."""
        if self.eager_reason is not None or all(key in self.replays for key in plan) or GATE.holds_shared():
            return
        with GATE.exclusive():
            if failure() is not None:           # another set's capture failed while this one waited
                return
            start = time.perf_counter()
            try:
                with _no_gc():
                    for key, step in plan.items():
                        if key not in self.replays:
                            self.replays[key] = self.capturer.capture(step)
                            self.captured_at[key] = at
                            self.captures += 1
                _sync(self.device)              # still inside the gate: no capture is underway
            except Exception as exc:            # noqa: BLE001 - out of memory: this run's; else this model's
                self._give_up()
                # The failed capture's graph pool (and what its warm-up cached) goes back to the device now,
                # under the gate, rather than staying reserved for this cache's life.
                give_back_cached(self.device)
                if out_of_memory(exc):
                    self.closed = f"out of device memory while capturing ({str(exc)[:80]})"
                    self.capture_s += time.perf_counter() - start
                    return
                self.distrusted = f"graph capture failed: {type(exc).__name__}: {str(exc)[:200]}"
                if not _device_answers(self.device):
                    fail(exc)
            self.capture_s += time.perf_counter() - start

    def _give_up(self) -> None:
        self.replays.clear()
        self.captured_at.clear()
        self.checked.clear()

    def _close(self, why: str) -> None:
        """Out of device memory while checking a replay: this run goes on eagerly (not the model's fault),
        and its graphs' memory goes back to the device at once rather than staying reserved."""
        self.closed = why
        self._give_up()
        with GATE.shared():                     # no capture underway meanwhile (a shared hold nests)
            give_back_cached(self.device)

    def run(self, key: Hashable, step: Step, rebuild: Callable[[], torch.Tensor], at: Hashable = None,
            state: State | None = None) -> torch.Tensor:
        """key's output for the buffers the caller filled, at state `at` (the feed's first position).
        A shape not captured yet is captured first, at `at` (unless this thread is inside shared
        device work, a lane's step: then that feed runs eagerly). Until a replay has matched the eager
        step at a state other than its capture's, each replay runs after the eager step on the same
        inputs and must match it, in its output (`check`) and in the cache entries `state()` returns
        (`check_state`); on a mismatch this set turns eager for good and `rebuild()` (the caller redoes
        its cache eagerly, as the replay may have written stale entries) gives the output. Eager sets
        call the step."""
        if self.eager_reason is None and key not in self.replays:
            self.capture({key: step}, at=at)
        if self.eager_reason is not None or key not in self.replays:   # closed, or no capture from here
            return step()
        replay = self.replays[key]
        if key in self.checked:
            return replay.run()
        try:
            expected = step().clone()           # eager first: it writes the right cache entries
        except Exception as exc:                # noqa: BLE001 - no room for the eager step beside the graphs
            if not out_of_memory(exc):
                raise
            # This run goes on eagerly (the set closed, its graphs' memory given back); the step writes
            # only at the fed positions, so running it again overwrites whatever the failed one left.
            self._close("out of device memory in the replay check's eager step")
            return step()
        try:
            written = [t.clone() for t in state()] if state is not None else []
        except Exception as exc:                # noqa: BLE001 - no room to check: this run goes on eagerly
            if not out_of_memory(exc):
                raise
            self._close("out of device memory for the replay check")
            return expected                     # the eager step's output, its entries written
        replayed = replay.run()
        why, delta = check(expected, replayed, self.dtype)
        if why is None and state is not None:
            why, kv_delta = check_state(written, state(), self.dtype)
            delta = max(delta, kv_delta)
        self.checks += 1
        self.last_delta = delta
        self.worst_delta = delta if self.worst_delta is None else max(self.worst_delta, delta)
        if why is None:
            if at != self.captured_at.get(key):  # a frozen host value would have shown here
                self.checked.add(key)
            return replayed
        self.distrusted = f"a replay differed from the eager step ({why})"
        return rebuild()

    @property
    def path(self) -> str:
        """The decode path's name for the stats."""
        why = self.eager_reason
        return self.capturer.name if why is None else f"eager ({why})"

    def invalidate(self) -> bool:
        """Give up the graphs (their memory pool is freed once its last graph is) and the buffers;
        True when there were graphs, whose pool the caller should return to the device (graph_model's
        BundlePool.drain does, once for every cache it drops)."""
        captured = bool(self.replays)
        self._give_up()
        self.buffers.clear()
        self.valid = False
        return captured


def out_of_memory(exc: BaseException) -> bool:
    """An error that says the device ran out of memory, as torch's allocator raises it or as CUDA and
    cuBLAS report it (a graph's instantiation, a workspace), not a fault of the model's step."""
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    text = str(exc)
    return "out of memory" in text or "CUBLAS_STATUS_ALLOC_FAILED" in text


def give_back_cached(device: torch.device) -> None:
    """Return the allocator's cached, unused blocks (a dropped graph pool among them) to the device.
    It synchronizes the device: call it only where no capture can be underway (under the gate). A device
    left in a failed state may refuse it: then nothing is given back, and the caller's own check of the
    device (`_device_answers`) says what follows."""
    if device.type == "cuda":
        try:
            torch.cuda.empty_cache()
        except Exception:      # noqa: BLE001 - a sticky CUDA error: reported by the caller's device check
            pass


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _device_answers(device: torch.device) -> bool:
    """Whether the device still runs work after a failed capture (a sticky error, such as an illegal
    address, leaves a CUDA context that fails every later call)."""
    if device.type != "cuda":
        return True
    try:
        torch.ones(1, device=device).add_(1).item()
        torch.cuda.synchronize(device)
        return True
    except Exception:          # noqa: BLE001
        return False
