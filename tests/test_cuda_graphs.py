"""The GPU path (static caches, decode steps replayed as graphs: graph_model.py) on a CPU.

Off CUDA the path runs with the eager capturer: the same static buffers, positions, masks,
pooled caches and capture bookkeeping, each "replay" calling the captured step and writing
into one fixed output tensor as a CUDA graph does. Checked here, through the real `speculate`
and `decode_baseline`: greedy identity with generate() (fp32), static-cache rollback under a
random draft, seeded sampling equal to the eager path's, one capture per step shape, capture
time in Done.stats, invalidation. The CUDA-only tests at the end run where a GPU exists;
scripts/gpu_check.py measures the rest (chi-square on CUDA, speed).
"""
import json
import os
import subprocess
import sys

import pytest
import torch

from specviz import SpecConfig, decode_baseline, speculate
from specviz.bench.random_pair import random_pair
from specviz.bench.runner import hf_generate
from specviz.runtime import graph_model
from specviz.runtime.cached_model import CachedModel, cached_model
from specviz.runtime import graph_capture
from specviz.runtime.graph_capture import EagerCapturer, GraphSet
from specviz.errors import ConfigError
from specviz.paths import ROOT

from .helpers import PROMPTS, last

N = 24
GRAPHS = dict(cuda_graphs=True, max_new_tokens=N)


def ids_of(pair, prompt):
    return pair.tokenizer(prompt)["input_ids"]


def bundles(model) -> list:
    return graph_model.POOL.bundles(model)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_graph_path_greedy_equals_generate(pair, k):
    for prompt in PROMPTS[:2]:
        ids = ids_of(pair, prompt)
        reference = hf_generate(pair, ids, SpecConfig(max_new_tokens=N))
        spec = last(speculate(pair, ids, SpecConfig(k=k, **GRAPHS)))
        plain = last(decode_baseline(pair, ids, SpecConfig(**GRAPHS)))
        assert spec.token_ids == reference
        assert plain.token_ids == reference
        assert spec.stats.decode_path == plain.stats.decode_path == "eager replay"


def test_static_cache_rollback_after_many_rejections(pair_random):
    """A random draft is rejected nearly every round: each round moves both caches' lengths back."""
    rejected = 0
    for prompt in PROMPTS:
        ids = ids_of(pair_random, prompt)
        done = last(speculate(pair_random, ids, SpecConfig(k=4, **GRAPHS)))
        assert done.token_ids == hf_generate(pair_random, ids, SpecConfig(max_new_tokens=N))
        rejected += done.stats.tally.rejected
    assert rejected >= 2 * N // 2


def test_gqa_model_greedy_equals_generate():
    """Grouped-query attention (2 key/value heads for 4 query heads) takes other sdpa branches with a mask."""
    pair = random_pair("tiny", "cpu")
    ids = list(range(5, 25))
    reference = hf_generate(pair, ids, SpecConfig(max_new_tokens=N))
    assert last(decode_baseline(pair, ids, SpecConfig(**GRAPHS))).token_ids == reference
    assert last(speculate(pair, ids, SpecConfig(k=3, **GRAPHS))).token_ids == reference


@pytest.fixture
def fp32_draft_step(monkeypatch):
    """The eager path's CPU draft on the lean step's fp32 weights, whatever this machine's timing would
    pick: the lean step keeps int8 weights where they time faster, which a busy machine decides either way,
    and int8's q is another draft's (its draws then keep other drafts; the output is still the target's
    law, but not the graph path's tokens)."""
    from specviz.runtime import lean_draft
    monkeypatch.setenv(lean_draft.ENV, "fp32")
    monkeypatch.setattr(lean_draft, "_built", type(lean_draft._built)())


def test_sampled_runs_equal_the_eager_path(pair, fp32_draft_step):
    """The same seeded draws on the same fp32 math (up to rounding: a static cache's masked attention
    against a dynamic one's): sampling, acceptance and resampling agree token for token. That the sampled
    output keeps the target's law on either path is test_distribution's chi-square (and gpu_check's C)."""
    for seed in range(4):
        cfg = SpecConfig(k=3, temperature=1.0, top_p=0.9, max_new_tokens=N, seed=seed)
        eager = last(speculate(pair, PROMPTS[0], cfg))
        graphs = last(speculate(pair, PROMPTS[0], SpecConfig(**{**cfg.to_dict(), "cuda_graphs": True})))
        assert graphs.token_ids == eager.token_ids
        assert eager.stats.decode_path == "eager" and eager.stats.draft_path == "lean eager, fp32 weights"


def test_one_capture_per_step_shape_and_reuse_across_runs(pair):
    graph_model.POOL.forget(pair.target)
    graph_model.POOL.forget(pair.draft)
    cfg = SpecConfig(k=3, **GRAPHS)
    first = last(speculate(pair, PROMPTS[0], cfg))
    (target,), (draft,) = bundles(pair.target), bundles(pair.draft)
    for graphs in (target.graphs, draft.graphs):
        assert graphs.captures == len(graphs.replays) == len(graphs.buffers)     # once per shape
        assert graphs.capturer.captures == graphs.captures
    assert (4, 4) in target.graphs.replays                 # verify: k + 1 tokens, k + 1 logits
    assert (1, 1) in draft.graphs.replays                  # a draft step
    assert set(draft.graphs.replays) <= {(1, 1), (2, 1)}   # ... or a catch-up after an all-accepted round
    assert first.stats.target_forwards > target.graphs.captures   # replayed more often than captured
    assert first.stats.capture_s > 0
    again = last(speculate(pair, PROMPTS[0], cfg))
    assert again.token_ids == first.token_ids
    assert again.stats.capture_s == 0                   # the pooled caches came with their graphs
    assert bundles(pair.target)[0].graphs.captures == target.graphs.captures


def test_forgetting_a_model_invalidates_its_graphs(pair):
    last(decode_baseline(pair, PROMPTS[1], SpecConfig(**GRAPHS)))
    (bundle,) = bundles(pair.target)[-1:]
    graph_model.POOL.forget(pair.target)
    assert not bundle.graphs.valid and not bundle.graphs.replays and bundles(pair.target) == []
    with pytest.raises(RuntimeError):
        bundle.graphs.buffers_for((1, 1), lambda key: None)
    done = last(decode_baseline(pair, PROMPTS[1], SpecConfig(**GRAPHS)))
    assert done.stats.capture_s > 0                     # captured afresh


def test_graph_set_bookkeeping():
    graphs = GraphSet(EagerCapturer(), torch.device("cpu"))
    calls = []

    def step():
        calls.append(1)
        return torch.tensor([[1.0, 2.0]])
    first = graphs.run("a", step, rebuild=step, at=5).clone()
    assert graphs.captures == 1 and len(calls) == 3        # captured (one run), then the eager check and a replay
    assert graphs.checked == set()                         # checked at its capture's state: not trusted yet
    graphs.run("a", step, rebuild=step, at=5)
    assert len(calls) == 5 and graphs.checked == set()
    graphs.run("a", step, rebuild=step, at=6)              # checked at another state: trusted
    assert len(calls) == 7 and graphs.checked == {"a"} and graphs.worst_delta == 0.0
    out = graphs.run("a", step, rebuild=step, at=7)
    assert len(calls) == 8                                 # trusted: later replays run alone
    assert out.data_ptr() == graphs.run("a", step, rebuild=step, at=8).data_ptr()   # a replay writes one static output
    assert torch.equal(first, out)
    graphs.capture({"b": step, "c": step})
    assert graphs.captures == 3 and graphs.capture_s >= 0 and set(graphs.replays) == {"a", "b", "c"}


def test_a_failed_capture_decodes_on_eagerly_and_says_so(pair):
    class Failing(EagerCapturer):
        name = "CUDA graphs"

        def capture(self, step):
            raise RuntimeError("operation not permitted when stream is capturing")
    graph_model.POOL.forget(pair.target)        # a fresh cache, so that it gets this capturer
    lm = graph_model.GraphCachedModel(pair.target, pair.vocab_size, positions=64, capturer=Failing())
    eager = CachedModel(pair.target, pair.vocab_size)
    try:
        ids = torch.tensor(ids_of(pair, PROMPTS[0]))
        for tokens, keep in ((ids, 1), (torch.tensor([5]), 1), (torch.tensor([6, 7]), 2)):
            assert torch.allclose(lm.feed(tokens, keep), eager.feed(tokens, keep), atol=1e-5)
        assert lm.decode_path.startswith("eager (graph capture failed: RuntimeError: operation not permitted")
        assert lm.captures == 0
        # Closed for that model: a later run of it decodes eagerly and says why.
        later = last(decode_baseline(pair, PROMPTS[1], SpecConfig(**GRAPHS)))
        assert later.stats.decode_path.startswith("eager (graph capture failed: RuntimeError")
        assert later.token_ids == hf_generate(pair, ids_of(pair, PROMPTS[1]), SpecConfig(max_new_tokens=N))
        spec = last(speculate(pair, PROMPTS[1], SpecConfig(k=3, **GRAPHS)))
        assert spec.stats.decode_path == later.stats.decode_path and spec.stats.capture_s == 0
    finally:
        lm.release()
        graph_model.POOL.clear_distrust(pair.target)
        graph_model.POOL.forget(pair.target)    # later tests capture with the eager capturer again


def test_crop_moves_only_the_length(pair):
    lm = graph_model.GraphCachedModel(pair.target, pair.vocab_size, positions=64)
    eager = CachedModel(pair.target, pair.vocab_size)
    try:
        ids = torch.tensor(ids_of(pair, PROMPTS[0]))
        lm.feed(ids, keep=1)
        eager.feed(ids, keep=1)
        drafts = torch.tensor([7, 8, 9])
        lm.feed(drafts, keep=3)
        lm.crop(len(ids) + 1)                              # two rejected: their entries stay, masked
        assert lm.length == len(ids) + 1
        eager.feed(drafts[:1], keep=1)
        nxt = torch.tensor([11, 12])
        assert torch.allclose(lm.feed(nxt, keep=2), eager.feed(nxt, keep=2), atol=1e-5)
    finally:
        lm.release()


def test_cuda_graphs_setting():
    assert SpecConfig().cuda_graphs is None
    with pytest.raises(ConfigError):
        SpecConfig(cuda_graphs="yes")


def test_selection_on_cpu_stays_eager_and_refuses_what_graphs_cannot_run(pair):
    assert isinstance(cached_model(pair.target, pair.vocab_size), CachedModel)                 # auto, CPU
    assert isinstance(cached_model(pair.target, pair.vocab_size, graphs=False), CachedModel)
    lm = cached_model(pair.target, pair.vocab_size, positions=40, graphs=True)
    assert isinstance(lm, graph_model.GraphCachedModel)
    lm.release()
    from transformers import MistralConfig, MistralForCausalLM
    sliding = MistralForCausalLM(MistralConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                               num_attention_heads=2, num_key_value_heads=2, sliding_window=4))
    assert graph_model.unsupported(sliding)
    with pytest.raises(ConfigError):
        cached_model(sliding, 32, positions=8, graphs=True)


@pytest.mark.slow
def test_gpu_check_dry_run(tmp_path):
    """scripts/gpu_check.py runs end to end on tiny models (eager capturer), so a GPU machine's run is not its first."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    out = tmp_path / "gpu_check.json"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--dry-run", "--out", str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for part in ("A fidelity", "B identity", "C chi-square", "D two threads", "E a capture that fails", "F leaks",
                 "G relocated", "H forked worker", "J draft with -inf", "K bf16 identity", "L stale graph via calibration",
                 "M out of memory", "N drops and GC", "O ten app-level races", "P soak", "tok/s", "capture"):
        assert part in run.stdout
    result = json.loads(out.read_text())
    parts, budgets = result["parts"], result["budgets_s"]
    assert list(parts) == list("ABDEFGHJKLMNOPCI") and all(part["ok"] for part in parts.values())
    # every part within its limit (twice its H100 seconds plus 30), on this CPU with tiny models
    assert all(part["seconds"] <= 2 * budgets[letter] + 30 for letter, part in parts.items()), \
        {letter: round(part["seconds"]) for letter, part in parts.items()}


@pytest.mark.slow
def test_gpu_check_cuts_a_hanging_part_at_its_limit_and_goes_on_in_a_fresh_process(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "SPECVIZ_GPU_CHECK_LIMIT_S": "40",
           "SPECVIZ_GPU_CHECK_HANG": "G"}
    out = tmp_path / "gpu_check.json"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--dry-run", "--parts", "GF",
                          "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    parts = json.loads(out.read_text())["parts"]
    assert run.returncode == 1 and "timed out after 40 s" in parts["G"]["error"]
    assert parts["F"]["ok"]


@pytest.mark.slow    # two subprocesses of scripts/gpu_check.py, each importing torch and transformers
def test_gpu_check_lists_its_parts_and_refuses_unknown_ones():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    script = str(ROOT / "scripts" / "gpu_check.py")
    shown = subprocess.run([sys.executable, script, "--help"], env=env, capture_output=True, text=True, timeout=120)
    for letter in "ABCDEFGHIJKLMNOP":
        assert f"\n  {letter}  ~" in shown.stdout
    refused = subprocess.run([sys.executable, script, "--dry-run", "--parts", "AZ"], env=env, capture_output=True,
                             text=True, timeout=120)
    assert refused.returncode == 2 and "unknown parts Z" in refused.stdout


@pytest.mark.slow    # a subprocess of scripts/gpu_check.py importing torch and transformers
def test_gpu_check_refuses_another_transformers(tmp_path):
    """One line saying how to carry the pinned wheel, before any work."""
    shim = tmp_path / "transformers_shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text("import transformers\ntransformers.__version__ = '5.17.0'\n")
    env = {**os.environ, "PYTHONPATH": f"{shim}{os.pathsep}{ROOT}", "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--dry-run", "--parts", "F"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2
    refusal = [line for line in run.stdout.splitlines() if line.startswith("refused:")]
    assert len(refusal) == 1 and "5.17.0" in refusal[0] and "pip download" in refusal[0]
    assert "F leaks" not in run.stdout


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@cuda
@pytest.mark.parametrize("k", [1, 3, 5])
def test_cuda_graphs_greedy_equals_generate_on_cuda(tiny_dirs, k):
    from specviz.models.loading import load_pair
    gpu = load_pair(tiny_dirs["target"], tiny_dirs["cut"], device="cuda", dtype="float32")
    ids = ids_of(gpu, PROMPTS[0])
    reference = hf_generate(gpu, ids, SpecConfig(max_new_tokens=N))
    done = last(speculate(gpu, ids, SpecConfig(k=k, max_new_tokens=N)))        # the path chosen automatically
    plain = last(decode_baseline(gpu, ids, SpecConfig(max_new_tokens=N)))
    assert done.stats.decode_path == plain.stats.decode_path == "CUDA graphs"
    assert done.token_ids == plain.token_ids == reference
    graph_model.POOL.forget(gpu.target)
    graph_model.POOL.forget(gpu.draft)
