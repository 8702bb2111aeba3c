"""The graph path's check aimed both ways, and failures as narrow as their cause (graph_capture.py,
graph_model.py), on a CPU with the eager stand-in.

A correct model passes: a draft whose head covers part of the vocabulary (-inf elsewhere, by
design) keeps both models on graphs. A stale graph fails: one captured lazily, at the position of
its first feed, as the k advice's timing does, is checked again at another position before it is
trusted, so a later race still equals generate(). Out of device memory closes one cache for one run
(the run completes, graphs stay on); any other capture error distrusts that model, not the process.
Caches are allocated when made; a new cache that would not fit the room left drops free ones first,
or its run decodes eagerly; a cache dropped from inside a capture is given up after it.
"""
import gc

import pytest
import torch

from specviz import SpecConfig, decode_baseline, speculate
from specviz.bench.random_pair import random_pair
from specviz.bench.runner import hf_generate
from specviz.bench.stale_graphs import FrozenHostState, time_like_the_k_advice
from specviz.runtime import graph_capture, graph_model
from specviz.runtime.cached_model import CachedModel, cached_model
from specviz.runtime.graph_capture import GATE, EagerCapturer, GraphSet, check, check_state

from .helpers import last

N = 16
GRAPHS = dict(cuda_graphs=True, max_new_tokens=N)
PROMPT = list(range(5, 25))
HEAD = 300                  # the borrowed-style draft's head covers tokens 0..HEAD-1


@pytest.fixture
def pair():
    pair = random_pair("tiny", "cpu")
    yield pair
    for model in (pair.target, pair.draft):
        graph_model.POOL.forget(model)
        graph_model.POOL.clear_distrust(model)


def cut_head(model, covered: int) -> None:
    """Give `model` the logits of a draft whose output head covers the first `covered` tokens only:
    -inf elsewhere, as SmolLM2's shipped draft (FR-Spec) returns by design."""
    def hook(module, inputs, output):
        return output.masked_fill(torch.arange(output.shape[-1]) >= covered, float("-inf"))
    model.lm_head.register_forward_hook(hook)


def old_check(eager, replayed, dtype):
    """The check before it was aimed: any non-finite logit counted as a mismatch."""
    if not torch.isfinite(replayed.float()).all():
        return "non-finite logits", float("inf")
    return check(eager, replayed, dtype)


# The check itself ------------------------------------------------------------------------------

def test_the_check_compares_non_finite_entries_exactly_and_the_rest_within_tolerance():
    logits = torch.tensor([[3.0, 1.0, -2.0], [0.5, 2.5, 0.0]])
    assert check(logits, logits.clone(), torch.float32) == (None, 0.0)
    assert check(logits, logits + 1e-5, torch.float32)[0] is None            # a reduction order's worth
    assert "max |delta|" in check(logits, logits + 0.05, torch.float32)[0]   # a stale value's worth
    assert check(logits, logits + 0.02, torch.bfloat16)[0] is None           # bf16 keeps 8 bits
    swapped = logits.clone()
    swapped[0, 1] = 3.5
    assert "argmax" in check(logits, swapped, torch.bfloat16)[0]
    masked = logits.masked_fill(torch.tensor([[False, False, True], [False, True, False]]), float("-inf"))
    assert check(masked, masked.clone(), torch.float32) == (None, 0.0)        # -inf where the eager step has it
    why, delta = check(masked, masked + 1e-6, torch.float32)
    assert why is None and 0 < delta < 1e-5                                  # the delta over finite entries only
    assert "NaN" in check(logits, logits * float("nan"), torch.float32)[0]
    assert "NaN" in check(masked * float("nan"), masked * float("nan"), torch.float32)[0]   # NaN never passes
    assert "non-finite" in check(logits, masked, torch.float32)[0]           # -inf where the eager step is finite
    assert "non-finite" in check(masked, logits, torch.float32)[0]           # finite where it is -inf
    plus = masked.clone()
    plus[0, 2] = float("inf")
    assert "non-finite" in check(masked, plus, torch.float32)[0]             # +inf is not -inf


def test_the_state_check_catches_a_write_at_another_position():
    keys = torch.randn(1, 2, 6, 4)
    assert check_state([keys], [keys.clone()], torch.float32) == (None, 0.0)
    moved = keys.clone()
    moved[:, :, 2] = moved[:, :, 5]                  # a write that landed at a position frozen at capture
    assert "K/V" in check_state([keys], [moved], torch.float32)[0]


# A correct model passes ---------------------------------------------------------------------------

def test_a_draft_with_minus_inf_outside_its_head_stays_on_graphs(pair):
    cut_head(pair.draft, HEAD)
    eager = last(speculate(pair, PROMPT, SpecConfig(k=3, max_new_tokens=N, cuda_graphs=False)))
    done = last(speculate(pair, PROMPT, SpecConfig(k=3, **GRAPHS)))
    assert done.stats.decode_path == "eager replay"
    assert done.stats.draft_path == "eager replay"                    # not "eager (a replay differed ...)"
    assert done.token_ids == eager.token_ids
    assert done.stats.graph_check_delta == 0.0                        # the stand-in replays the very step
    assert graph_model.POOL.distrusted(pair.draft) is None


def test_the_same_draft_fails_under_the_check_that_counted_any_minus_inf_as_a_mismatch(pair, monkeypatch):
    """The test above has teeth: with the old masking the draft is distrusted."""
    cut_head(pair.draft, HEAD)
    monkeypatch.setattr(graph_capture, "check", old_check)
    done = last(speculate(pair, PROMPT, SpecConfig(k=3, **GRAPHS)))
    assert done.stats.draft_path.startswith("eager (a replay differed from the eager step (non-finite")


def test_a_greedy_and_a_seeded_run_with_the_cut_draft_equal_the_eager_path(pair):
    cut_head(pair.draft, HEAD)
    assert last(speculate(pair, PROMPT, SpecConfig(k=4, **GRAPHS))).token_ids == \
        hf_generate(pair, PROMPT, SpecConfig(max_new_tokens=N))
    sampled = dict(k=3, temperature=0.8, seed=7, max_new_tokens=N)
    assert last(speculate(pair, PROMPT, SpecConfig(cuda_graphs=True, **sampled))).token_ids == \
        last(speculate(pair, PROMPT, SpecConfig(cuda_graphs=False, **sampled))).token_ids


# A stale graph fails --------------------------------------------------------------------------------

def test_a_lazily_captured_shape_is_not_trusted_at_its_capture_position(pair):
    time_like_the_k_advice(pair.target, pair.vocab_size, PROMPT, FrozenHostState())
    (bundle,) = graph_model.POOL.bundles(pair.target)
    assert bundle.graphs.replays and not bundle.graphs.checked       # replays at the capture's state prove nothing


def test_a_stale_lazily_captured_graph_is_caught_in_a_later_race(pair):
    reference = hf_generate(pair, PROMPT, SpecConfig(max_new_tokens=N))
    time_like_the_k_advice(pair.target, pair.vocab_size, PROMPT, FrozenHostState())
    done = last(decode_baseline(pair, PROMPT, SpecConfig(**GRAPHS)))
    assert done.token_ids == reference
    assert done.stats.decode_path.startswith("eager (a replay differed from the eager step (")
    assert graph_model.POOL.distrusted(pair.target)


def test_a_stale_lazily_captured_verify_graph_is_caught_in_a_speculative_race(pair):
    reference = hf_generate(pair, PROMPT, SpecConfig(max_new_tokens=N))
    time_like_the_k_advice(pair.target, pair.vocab_size, PROMPT, FrozenHostState())
    done = last(speculate(pair, PROMPT, SpecConfig(k=3, **GRAPHS)))
    assert done.token_ids == reference
    assert done.stats.decode_path.startswith("eager (a replay differed")


def test_a_stale_graph_is_caught_in_step_mode_and_the_bench(pair):
    from specviz.bench.runner import specviz_run
    reference = hf_generate(pair, PROMPT, SpecConfig(max_new_tokens=N))
    time_like_the_k_advice(pair.target, pair.vocab_size, PROMPT, FrozenHostState())
    steps = list(speculate(pair, PROMPT, SpecConfig(k=2, **GRAPHS)))      # step mode reads these events
    assert steps[-1].token_ids == reference
    graph_model.POOL.clear_distrust(pair.target)
    time_like_the_k_advice(pair.target, pair.vocab_size, PROMPT, FrozenHostState())
    timing = specviz_run(pair, PROMPT, SpecConfig(k=2, **GRAPHS), speculative=True)   # what the bench times
    assert timing.stats.decode_path.startswith("eager (a replay differed")


class WritesElsewhere(EagerCapturer):
    """A stand-in whose replays give the right logits but also write a key at position 0, as a graph
    that froze a write position would: only the K/V comparison can see it."""

    def capture(self, step):
        bundle = step.func.__self__
        replay = super().capture(step)

        def run():
            out = replay.run()
            layer = bundle.cache.layers[0]
            layer.keys[:, :, 0] = layer.keys[:, :, 1]
            return out
        return type("Elsewhere", (), {"run": staticmethod(run), "output": replay.output})


def test_a_replay_that_writes_at_another_position_is_caught_by_the_kv_comparison(pair):
    reference = hf_generate(pair, PROMPT, SpecConfig(max_new_tokens=N))
    seed(pair.target, pair.vocab_size, WritesElsewhere())
    done = last(decode_baseline(pair, PROMPT, SpecConfig(**GRAPHS)))
    assert done.stats.decode_path.startswith("eager (a replay differed from the eager step (K/V entries differ")
    assert done.token_ids == reference                       # its cache rebuilt eagerly


def test_a_stale_tree_graph_is_caught_and_its_cache_rebuilt(pair):
    """The check is aimed at the tree's graphs too: a replay frozen at its capture's host state (the
    positions it writes) differs from the eager pass at its first later feed, the model turns eager for
    good, and the cache is rebuilt (the context causally, then the tree): the run still equals generate()."""
    reference = hf_generate(pair, PROMPT, SpecConfig(max_new_tokens=N))
    seed(pair.target, pair.vocab_size, FrozenHostState())
    done = last(speculate(pair, PROMPT, SpecConfig(tree=(2, 1), **GRAPHS)))
    assert done.token_ids == reference
    assert done.stats.decode_path.startswith("eager (a replay differed")


# Failures as narrow as their cause ------------------------------------------------------------------

class OutOfMemory(EagerCapturer):
    def capture(self, step):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (stand-in)")


class Broken(EagerCapturer):
    def capture(self, step):
        raise RuntimeError("operation not supported by this model (stand-in)")


def seed(model, vocab: int, capturer) -> None:
    lm = graph_model.GraphCachedModel(model, vocab, positions=len(PROMPT) + N + 8, capturer=capturer)
    lm.release()


def test_out_of_memory_in_a_capture_runs_that_run_eagerly_and_leaves_graphs_on(pair):
    reference = hf_generate(pair, PROMPT, SpecConfig(max_new_tokens=N))
    seed(pair.target, pair.vocab_size, OutOfMemory())
    done = last(decode_baseline(pair, PROMPT, SpecConfig(**GRAPHS)))
    assert done.token_ids == reference                                  # the run completes
    assert done.stats.decode_path.startswith("eager (out of device memory while capturing")
    assert graph_capture.failure() is None and graph_model.POOL.distrusted(pair.target) is None
    assert graph_model.POOL.bundles(pair.target) == []                  # that cache was dropped
    again = last(decode_baseline(pair, PROMPT, SpecConfig(**GRAPHS)))
    assert again.stats.decode_path == "eager replay" and again.token_ids == reference


class OutOfMemoryAsCudaError(EagerCapturer):
    def capture(self, step):
        raise RuntimeError("CUDA error: out of memory (stand-in for cudaGraphInstantiate's report)")


def test_out_of_memory_reported_as_a_cuda_error_is_still_out_of_memory(pair):
    seed(pair.target, pair.vocab_size, OutOfMemoryAsCudaError())
    done = last(decode_baseline(pair, PROMPT, SpecConfig(**GRAPHS)))
    assert done.stats.decode_path.startswith("eager (out of device memory while capturing")
    assert graph_model.POOL.distrusted(pair.target) is None


def test_another_capture_error_distrusts_that_model_not_the_process(pair):
    reference = hf_generate(pair, PROMPT, SpecConfig(max_new_tokens=N))
    seed(pair.target, pair.vocab_size, Broken())
    done = last(decode_baseline(pair, PROMPT, SpecConfig(**GRAPHS)))
    assert done.token_ids == reference
    assert done.stats.decode_path.startswith("eager (graph capture failed: RuntimeError: operation not supported")
    assert graph_capture.failure() is None
    assert graph_model.POOL.distrusted(pair.target).startswith("graph capture failed")
    later = cached_model(pair.target, pair.vocab_size, positions=64, graphs=True)
    assert isinstance(later, CachedModel) and later.decode_path.startswith("eager (graph capture failed")
    other = random_pair("tiny", "cpu")                                  # another model still replays
    try:
        assert last(decode_baseline(other, PROMPT, SpecConfig(**GRAPHS))).stats.decode_path == "eager replay"
    finally:
        graph_model.POOL.forget(other.target)


def test_a_cache_is_allocated_when_its_bundle_is_made(pair):
    lm = graph_model.GraphCachedModel(pair.target, pair.vocab_size, positions=40)
    try:
        layer = lm.bundle.cache.layers[0]
        assert layer.is_initialized and layer.keys.shape[2] == lm.capacity     # before any feed or capture
        assert lm.bundle.nbytes == graph_model.cache_bytes(pair.target, lm.capacity)
    finally:
        lm.release()


def test_a_cache_that_does_not_fit_drops_free_ones_first_then_decodes_eagerly(pair, monkeypatch):
    reference = hf_generate(pair, PROMPT, SpecConfig(max_new_tokens=N))
    size = graph_model.cache_bytes(pair.target, graph_model.capacity_for(len(PROMPT) + N + 1))
    graph_model.POOL.clear()                              # only this test's caches in the pool
    small = graph_model.GraphCachedModel(pair.target, pair.vocab_size, positions=300)   # another capacity, pooled free
    small.release()
    assert len(graph_model.POOL.bundles(pair.target)) == 1
    monkeypatch.setattr(graph_model.POOL, "room", lambda device: size - 1)       # fits once the free one is gone
    done = last(decode_baseline(pair, PROMPT, SpecConfig(**GRAPHS)))
    assert done.stats.decode_path == "eager replay" and done.token_ids == reference
    assert all(b.capacity != small.capacity for b in graph_model.POOL.bundles(pair.target))
    graph_model.POOL.forget(pair.target)
    monkeypatch.setattr(graph_model.POOL, "room", lambda device: 0)               # nothing fits
    done = last(decode_baseline(pair, PROMPT, SpecConfig(**GRAPHS)))
    assert done.token_ids == reference
    assert done.stats.decode_path.startswith("eager (no device memory for another graph cache")
    assert graph_model.POOL.distrusted(pair.target) is None


def test_a_cache_dropped_from_inside_a_capture_is_given_up_after_it(pair):
    seed(pair.draft, pair.vocab_size, EagerCapturer())
    (free,) = graph_model.POOL.bundles(pair.draft)
    free.graphs.replays["x"] = object()
    seen = {}

    def step():
        graph_model.POOL.forget(pair.draft)            # as a finalizer run inside the capture would
        seen["valid inside"] = free.graphs.valid
        seen["gc inside"] = gc.isenabled()
        return torch.zeros(1, 2)
    graphs = GraphSet(EagerCapturer(), torch.device("cpu"))
    graphs.capture({"a": step})
    assert seen == {"valid inside": True, "gc inside": False}
    assert not free.graphs.valid and not GATE.capturing and gc.isenabled()


def test_clearing_the_pool_drops_free_caches_and_keeps_lent_ones_from_coming_back(pair):
    seed(pair.target, pair.vocab_size, EagerCapturer())
    lent = graph_model.GraphCachedModel(pair.target, pair.vocab_size, positions=300)   # another capacity
    (free,) = graph_model.POOL.bundles(pair.target)
    graph_model.POOL.clear()
    assert graph_model.POOL.bundles(pair.target) == [] and not free.graphs.valid
    lent.release()
    assert graph_model.POOL.bundles(pair.target) == []


def test_a_zerogpu_call_starts_with_an_empty_pool(tiny_dirs, monkeypatch):
    from specviz.app import gpu_calls
    from .helpers import tiny_app
    app = tiny_app(tiny_dirs)
    pair = app.pairs.pair(app.pairs.known("tiny"))
    seed(pair.target, pair.vocab_size, EagerCapturer())
    (free,) = graph_model.POOL.bundles(pair.target)
    monkeypatch.setattr(gpu_calls, "ON_ZEROGPU", True)
    gpu_calls._pair(gpu_calls.handle(app), "tiny")
    assert graph_model.POOL.bundles(pair.target) == [] and not free.graphs.valid
