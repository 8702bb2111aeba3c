"""The graph path's safety rules, on a CPU (graph_capture.py, graph_model.py): a replay that
reads host state frozen at capture is caught by the first-replay check and the model decodes
eagerly, still exactly; a correct path passes the check; captures hold the device gate, so a
synchronize in another thread waits for them; the pool holds models weakly, forgets an evicted
pair's graphs, keeps a bounded number of bundles, drops bundles whose weights moved, and gives a
lane back the bundle it captured into; an eager prefill's mask spans the filled positions only;
a forked worker replays what it captured."""
import gc
import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
import weakref

import pytest
import torch

from specviz import SpecConfig, decode_baseline, race, speculate
from specviz.app.pair_cache import PairCache
from specviz.bench.random_pair import random_pair
from specviz.bench.runner import hf_generate
from specviz.bench.stale_graphs import FrozenHostState
from specviz.runtime import graph_capture, graph_model
from specviz.runtime.cached_model import CachedModel, cached_model
from specviz.runtime.graph_capture import GATE, EagerCapturer, GraphSet
from specviz.runtime.timing import synchronize
from specviz.paths import ROOT

from .helpers import last

N = 16
GRAPHS = dict(cuda_graphs=True, max_new_tokens=N)
PROMPT = list(range(5, 25))


def seed_pool(model, vocab: int, capturer) -> None:
    """Put a bundle made with `capturer` in the pool, so that the next run of `model` gets it."""
    lm = graph_model.GraphCachedModel(model, vocab, positions=len(PROMPT) + N + 8, capturer=capturer)
    lm.release()


def test_the_check_catches_replays_of_frozen_host_state_and_the_run_stays_exact():
    pair = random_pair("tiny", "cpu")
    reference = hf_generate(pair, PROMPT, SpecConfig(max_new_tokens=N))
    seed_pool(pair.target, pair.vocab_size, FrozenHostState())
    done = last(decode_baseline(pair, PROMPT, SpecConfig(**GRAPHS)))
    assert done.stats.decode_path.startswith("eager (a replay differed from the eager step (")
    assert done.token_ids == reference                       # the cache was rebuilt eagerly: still exact
    assert graph_model.POOL.distrusted(pair.target)
    assert graph_model.POOL.bundles(pair.target) == []       # its bundle was not pooled again
    later = cached_model(pair.target, pair.vocab_size, positions=64, graphs=True)
    assert isinstance(later, CachedModel) and later.decode_path.startswith("eager (a replay differed")
    again = last(decode_baseline(pair, PROMPT, SpecConfig(**GRAPHS)))
    assert again.token_ids == reference and again.stats.decode_path == later.decode_path


def test_a_stale_verify_replay_is_caught_in_a_speculative_run():
    pair = random_pair("tiny", "cpu")
    reference = hf_generate(pair, PROMPT, SpecConfig(max_new_tokens=N))
    seed_pool(pair.target, pair.vocab_size, FrozenHostState())
    done = last(speculate(pair, PROMPT, SpecConfig(k=3, **GRAPHS)))
    assert done.token_ids == reference
    assert done.stats.decode_path.startswith("eager (a replay differed")


def test_the_check_passes_on_a_correct_path():
    pair = random_pair("tiny", "cpu")
    done = last(speculate(pair, PROMPT, SpecConfig(k=3, **GRAPHS)))
    assert done.stats.decode_path == "eager replay"
    assert done.token_ids == hf_generate(pair, PROMPT, SpecConfig(max_new_tokens=N))
    (target,) = graph_model.POOL.bundles(pair.target)
    assert target.graphs.checked and target.graphs.checked <= set(target.graphs.replays)
    assert (1, 1) in target.graphs.checked or (4, 4) in target.graphs.checked
    assert graph_model.POOL.distrusted(pair.target) is None


def test_a_synchronize_waits_for_a_capture_underway():
    """Captures hold the gate exclusively; synchronizes take it shared: none runs inside a capture."""
    inside, release, order = threading.Event(), threading.Event(), []

    def slow_step():
        inside.set()
        release.wait(5)
        return torch.zeros(1, 2)
    graphs = GraphSet(EagerCapturer(), torch.device("cpu"))
    capturing = threading.Thread(target=lambda: (graphs.capture({"a": slow_step}), order.append("captured")))
    capturing.start()
    assert inside.wait(5) and GATE.capturing
    syncing = threading.Thread(target=lambda: (synchronize(torch.device("cpu")), order.append("synchronized")))
    syncing.start()
    time.sleep(0.2)
    assert order == []                                 # the synchronize is waiting at the gate
    release.set()
    capturing.join(5)
    syncing.join(5)
    assert order == ["captured", "synchronized"] and not GATE.capturing


def test_a_capture_waits_for_a_synchronize_underway():
    entered, leave = threading.Event(), threading.Event()

    def hold_shared():
        with GATE.shared():
            entered.set()
            leave.wait(5)
    holder = threading.Thread(target=hold_shared)
    holder.start()
    assert entered.wait(5)
    graphs, done = GraphSet(EagerCapturer(), torch.device("cpu")), threading.Event()
    capturing = threading.Thread(target=lambda: (graphs.capture({"a": lambda: torch.zeros(1, 2)}), done.set()))
    capturing.start()
    assert not done.wait(0.2) and graphs.captures == 0
    leave.set()
    assert done.wait(5) and graphs.captures == 1
    holder.join(5)
    capturing.join(5)


def test_a_capture_waits_for_a_lane_step_underway():
    """A lane's whole step holds the gate shared: another thread's capture starts only between steps."""
    pair = random_pair("tiny", "cpu")
    in_step, leave = threading.Event(), threading.Event()
    forward = pair.target.forward

    def blocking(*args, **kwargs):
        if kwargs["input_ids"].shape[1] == 1:          # a decode step, not the prefill
            in_step.set()
            leave.wait(5)
        return forward(*args, **kwargs)
    pair.target.forward = blocking
    lane = threading.Thread(target=lambda: last(decode_baseline(pair, PROMPT, SpecConfig(max_new_tokens=3))))
    lane.start()
    assert in_step.wait(10)
    graphs, done = GraphSet(EagerCapturer(), torch.device("cpu")), threading.Event()
    capturing = threading.Thread(target=lambda: (graphs.capture({"a": lambda: torch.zeros(1, 2)}), done.set()))
    capturing.start()
    assert not done.wait(0.3) and graphs.captures == 0     # waiting for the step to end
    leave.set()
    assert done.wait(10) and graphs.captures == 1
    lane.join(10)
    capturing.join(10)
    del pair.target.forward


def test_inside_a_step_an_unplanned_shape_runs_eagerly_instead_of_capturing():
    pair = random_pair("tiny", "cpu")
    lm = graph_model.GraphCachedModel(pair.target, pair.vocab_size, positions=64, capturer=EagerCapturer())
    eager = CachedModel(pair.target, pair.vocab_size)
    try:
        with GATE.shared():
            for tokens, keep in ((torch.tensor(PROMPT), 1), (torch.tensor([9]), 1), (torch.tensor([3, 4]), 2)):
                assert torch.allclose(lm.feed(tokens, keep), eager.feed(tokens, keep), atol=1e-5)
        assert lm.captures == 0 and lm.decode_path == "eager replay"
        lm.feed(torch.tensor([5]), keep=1)                 # outside a step: captured on first use
        assert lm.captures == 1
    finally:
        lm.release()


def test_a_capture_that_raises_mid_step_distrusts_its_set_and_ends_the_capture():
    graphs = GraphSet(EagerCapturer(), torch.device("cpu"))

    def broken():
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")
    graphs.capture({"a": lambda: torch.zeros(1, 2), "b": broken})
    assert graphs.path.startswith("eager (graph capture failed: RuntimeError: CUDA error")
    assert graphs.replays == {} and not GATE.capturing
    assert graph_capture.failure() is None              # the device still answers: not the whole process
    assert torch.equal(graphs.run("c", lambda: torch.ones(1, 2), rebuild=None), torch.ones(1, 2))
    other = GraphSet(EagerCapturer(), torch.device("cpu"))
    assert other.path == "eager replay"
    other.run("c", lambda: torch.ones(1, 2), rebuild=None)
    assert other.captures == 1


def test_dropping_a_pair_frees_its_model_and_its_bundles():
    pair = random_pair("tiny", "cpu")
    last(speculate(pair, PROMPT, SpecConfig(k=2, **GRAPHS)))
    held = graph_model.POOL.bundles(pair.target) + graph_model.POOL.bundles(pair.draft)
    assert held and all(b.graphs.valid for b in held)
    target, draft = weakref.ref(pair.target), weakref.ref(pair.draft)
    del pair
    gc.collect()
    assert target() is None and draft() is None            # the pool held them weakly
    assert not any(b in [e[1] for e in graph_model.POOL._free] for b in held)
    graph_model.POOL.drain()          # a finalizer only queues them; the next caller of the pool gives them up
    assert all(not b.graphs.valid for b in held)
    assert not any(b in [e[1] for e in graph_model.POOL._free] for b in held)


def test_an_evicted_pair_forgets_its_graphs_even_those_lent_at_the_time():
    first, second = random_pair("tiny", "cpu"), random_pair("tiny", "cpu")
    cache = PairCache(max_pairs=1)
    cache.get("a", lambda: first)
    last(decode_baseline(first, PROMPT, SpecConfig(**GRAPHS)))
    (pooled,) = graph_model.POOL.bundles(first.target)
    lent = graph_model.GraphCachedModel(first.target, first.vocab_size, positions=600)   # another capacity
    cache.get("b", lambda: second)                          # evicts "a"
    assert not pooled.graphs.valid and graph_model.POOL.bundles(first.target) == []
    lent.release()                                          # a run still going when it was evicted
    assert graph_model.POOL.bundles(first.target) == []


def test_the_pool_is_bounded():
    pool = graph_model.BundlePool(cap=3, per_shape=2)
    pair = random_pair("tiny", "cpu")
    make = lambda: graph_model._Bundle(pair.target, pair.vocab_size, 256, EagerCapturer())   # noqa: E731
    bundles = [pool.acquire(pair.target, (256, pair.vocab_size), make) for _ in range(3)]
    for b in bundles:
        pool.release(pair.target, (256, pair.vocab_size), b)
    assert pool.bundles(pair.target) == bundles[1:] and not bundles[0].graphs.valid    # two per shape
    others = [pool.acquire(pair.target, (512, pair.vocab_size), make) for _ in range(2)]
    for b in others:
        pool.release(pair.target, (512, pair.vocab_size), b)
    assert len(pool.bundles(pair.target)) == 3 and not bundles[1].graphs.valid         # three in all


def test_a_finalizer_under_the_pool_lock_does_not_deadlock():
    pair = random_pair("tiny", "cpu")
    last(decode_baseline(pair, PROMPT, SpecConfig(**GRAPHS)))
    target = weakref.ref(pair.target)
    done = threading.Event()

    def collect_while_locked():
        with graph_model.POOL._lock:          # a model collected while the lock is held (GC runs anywhere)
            nonlocal pair
            pair = None
            gc.collect()
        done.set()
    threading.Thread(target=collect_while_locked, daemon=True).start()
    assert done.wait(10) and target() is None


def test_moved_weights_drop_the_bundle_captured_over_the_old_addresses():
    pair = random_pair("tiny", "cpu")
    first = last(decode_baseline(pair, PROMPT, SpecConfig(**GRAPHS)))
    (old,) = graph_model.POOL.bundles(pair.target)
    with torch.no_grad():
        for p in pair.target.parameters():
            p.data = p.data.clone()            # the same values at new addresses (as a ZeroGPU worker may)
    again = last(decode_baseline(pair, PROMPT, SpecConfig(**GRAPHS)))
    assert not old.graphs.valid and again.stats.capture_s > 0
    assert again.token_ids == first.token_ids
    (new,) = graph_model.POOL.bundles(pair.target)
    assert new is not old and new.weights == graph_model.weights_of(pair.target)


def test_each_lane_gets_back_the_bundle_it_captured_into():
    pair = random_pair("tiny", "cpu")
    cfg = SpecConfig(k=3, drafter="model", **GRAPHS)
    for _ in range(3):
        dones = {e.lane: e for e in race(pair, PROMPT, cfg) if e.kind == "done"}
    assert {lane: d.stats.capture_s for lane, d in dones.items()} == {"spec": 0.0, "base": 0.0}


def test_an_eager_prefill_masks_the_filled_positions_only():
    pair = random_pair("tiny", "cpu")
    shapes = []
    forward = pair.target.forward

    def spy(*args, **kwargs):
        shapes.append(tuple(kwargs["attention_mask"].shape))
        return forward(*args, **kwargs)
    pair.target.forward = spy
    lm = graph_model.GraphCachedModel(pair.target, pair.vocab_size, positions=1000, capturer=EagerCapturer())
    try:
        lm.feed(torch.tensor(PROMPT), keep=1)
        assert lm.capacity == 1024 and shapes[-1] == (1, 1, len(PROMPT), len(PROMPT))
        lm.feed(torch.tensor([7]), keep=1)
        assert shapes[-1] == (1, 1, 1, 1024)                   # a graph step spans the capacity
    finally:
        lm.release()
        del pair.target.forward


def _child(pair, queue):
    torch.set_num_threads(1)
    cfg = SpecConfig(k=3, **GRAPHS)
    runs = [last(speculate(pair, PROMPT, cfg)) for _ in range(2)]
    queue.put([(r.token_ids, r.stats.capture_s, r.stats.decode_path) for r in runs])


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_a_forked_worker_captures_once_and_replays():
    """As a ZeroGPU worker: loaded in the parent, forked, two runs in the child (the second replays)."""
    pair = random_pair("tiny", "cpu")
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(pair, queue))
    child.start()
    (first, second) = queue.get(timeout=120)
    child.join(30)
    assert child.exitcode == 0
    assert first[1] > 0 and second[1] == 0
    assert first[0] == second[0] == hf_generate(pair, PROMPT, SpecConfig(max_new_tokens=N))
    assert first[2] == second[2] == "eager replay"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_forked_worker_captures_once_and_replays_on_cuda():
    """The same on a GPU: a process that never touched CUDA loads on the CPU and forks; the child moves
    the pair to the GPU and runs two races (scripts/gpu_check.py's part H)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--fork-worker", "cuda"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    first, second = json.loads(run.stdout.strip().splitlines()[-1])
    assert first[0] == second[0] and first[1] > 0 and second[1] == 0
    assert first[2] == second[2] == "CUDA graphs"
