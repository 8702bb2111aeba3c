"""What a GPU machine checks of the CUDA-graph path, in one command of at most ten minutes:

    python scripts/gpu_check.py --out benchmarks/gpu-check.json

It prints the versions, refuses a transformers other than requirements.txt's, and runs each part in
a child process with its own time limit (a part that hangs, crashes or leaves the device in a bad
state costs that part only: the next starts in a fresh process), writing the JSON after every part.
`--help` lists the parts with the seconds each is expected to take on an H100; docs/gpu.md says what
each proves. Exit status 1 if any of A-H or J-P fails; I only reports. `--dry-run` runs every part
on the CPU with tiny models and the eager stand-in (tests/test_cuda_graphs.py runs it), to show that
each runs within its budget.
"""
from __future__ import annotations

import argparse
import copy
import gc
import json
import multiprocessing
import os
import queue
import subprocess
import sys
import threading
import time
import traceback
import weakref
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, models  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

from specviz import SpecConfig, decode_baseline, speculate  # noqa: E402
from specviz.bench.decode_paths import compare_paths, path_table  # noqa: E402
from specviz.bench.prompts import FREE_TEXT, GROUNDED  # noqa: E402
from specviz.bench.random_pair import random_pair  # noqa: E402
from specviz.bench.runner import hf_generate  # noqa: E402
from specviz.engine.analysis.lossless import chi_square_pvalue  # noqa: E402
from specviz.runtime import graph_capture, graph_model  # noqa: E402
from specviz.runtime.cached_model import CachedModel  # noqa: E402
from specviz.models.loading import load_pair, make_pair  # noqa: E402
import gpu_trust_parts as trust  # noqa: E402

FIGURES = {"ratio": 2.2, "c": 0.12, "bandwidth_fraction": 0.75, "first_use_s": 20.0}   # the path's targets (docs/gpu.md)
V = 8                                                        # the chi-square pair's vocabulary
PROMPTS = [GROUNDED[0], FREE_TEXT[0], "def fibonacci(n):\n    ", "The capital of France is"]


def pinned_transformers() -> str:
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.startswith("transformers=="):
            return line.split("==")[1].strip()
    return transformers.__version__


def strip_eos(pair, tokens: list[int]) -> list[int]:
    return tokens[:-1] if tokens and tokens[-1] in pair.eos_token_ids else tokens


# (A) fidelity ---------------------------------------------------------------------------------------

def scripted_feed(lm, prompt: list[int], vocab: int) -> list[tuple[str, torch.Tensor]]:
    """Prefill, ten steps, verify passes k = 1..8 each rolled back to one accepted, a catch-up."""
    out, t = [], lambda *ids: torch.tensor([i % vocab for i in ids])   # noqa: E731
    out.append(("prefill", lm.feed(torch.tensor(prompt), keep=1)))
    for i in range(10):
        out.append((f"step {i}", lm.feed(t(7 * i + 3), keep=1)))
    for k in range(1, 9):
        base = lm.length
        out.append((f"verify k={k}", lm.feed(t(*range(11 * k, 11 * k + k + 1)), keep=k + 1)))
        lm.crop(base + 1)                                  # k drafts, all but the first rejected
    out.append(("catch-up", lm.feed(t(5, 9), keep=1)))
    return out


def fidelity_of(pair_name: str, model, vocab: int, prompt: list[int], graphs_forced: bool) -> dict:
    dtype = next(model.parameters()).dtype
    tolerance = graph_capture.TOLERANCE.get(dtype, 3e-2)
    shapes = tuple((k + 1, k + 1) for k in range(9)) + ((2, 1),)
    rows, paths, capture = [], [], []
    for run in ("first", "pooled"):
        lm = graph_model.GraphCachedModel(model, vocab, positions=len(prompt) + 64, shapes=shapes)
        eager = CachedModel(model, vocab)
        try:
            got = scripted_feed(lm, prompt, vocab)
            want = scripted_feed(eager, prompt, vocab)
            paths.append(lm.decode_path)
            capture.append(lm.capture_s)
        finally:
            lm.release()
        for (name, g), (_, w) in zip(got, want):
            delta = (g.float() - w.float()).abs().max().item()
            scale = max(1.0, w.float().abs().max().item())
            rows.append({"run": run, "step": name, "max_delta": delta, "same_argmax": bool(torch.equal(
                g.argmax(-1), w.argmax(-1))), "within": delta <= tolerance * scale})
    expected_path = "eager replay" if graphs_forced else "CUDA graphs"
    ok = all(r["within"] for r in rows) and all(p == expected_path for p in paths) and capture[1] == 0
    worst = max(r["max_delta"] for r in rows)
    print(f"A fidelity {pair_name} {dtype}: worst max |delta| {worst:.3g} (tolerance {tolerance:g} x scale), "
          f"paths {paths}, capture s {capture[0]:.2f} then {capture[1]:.2f}: {'ok' if ok else 'FAILED'}")
    return {"pair": pair_name, "dtype": str(dtype), "tolerance": tolerance, "paths": paths, "capture_s": capture,
            "worst_delta": worst, "ok": ok, "steps": rows}


def part_a(args) -> dict:
    bundled = load_pair(device=args.device, dtype="float32")
    ids = bundled.tokenizer(PROMPTS[0])["input_ids"]
    gqa = random_pair("tiny", args.device)
    gqa_model = gqa.target.to(torch.bfloat16)
    results = [fidelity_of("bundled", bundled.target, bundled.vocab_size, ids, args.force),
               fidelity_of("bundled draft", bundled.draft, bundled.vocab_size, ids, args.force),
               fidelity_of("tiny GQA", gqa_model, gqa.vocab_size, list(range(5, 40)), args.force)]
    return {"ok": all(r["ok"] for r in results), "pairs": results}


# (B) identity ---------------------------------------------------------------------------------------

@torch.inference_mode()
def margin_at(pair, ids: list[int], tokens: list[int], i: int) -> float:
    logits = pair.target(torch.tensor([ids + tokens[:i]], device=pair.device)).logits[0, -1].float()
    top = logits.topk(2).values
    return (top[0] - top[1]).item()


def part_b(args) -> dict:
    pair = load_pair(device=args.device, dtype="float32")
    graphs = True if args.force else None
    rows = []
    for shape in [dict(k=k) for k in args.identity_ks] + [dict(tree=(2, 2, 1))]:     # a tree's passes too
        k = shape.get("k") or "tree " + ",".join(map(str, shape["tree"]))
        for text in PROMPTS[: args.identity_prompts]:
            ids = pair.tokenizer(text)["input_ids"]
            cfg = SpecConfig(**shape, max_new_tokens=args.identity_tokens, cuda_graphs=graphs)
            ref = strip_eos(pair, hf_generate(pair, ids, cfg))
            eager = strip_eos(pair, list(list(speculate(pair, ids, SpecConfig(**{**cfg.to_dict(),
                                                                                 "cuda_graphs": False})))[-1].token_ids))
            spec = list(speculate(pair, ids, cfg))[-1]
            plain = list(decode_baseline(pair, ids, cfg))[-1]
            got = {"spec": strip_eos(pair, list(spec.token_ids)), "plain": strip_eos(pair, list(plain.token_ids))}
            row = {"k": k, "prompt": text[:30], "tokens": len(got["spec"]),
                   "paths": {"target": spec.stats.decode_path, "draft": spec.stats.draft_path,
                             "plain": plain.stats.decode_path},
                   "same_as_generate": got["spec"] == ref and got["plain"] == ref,
                   "same_as_eager": got["spec"] == eager}
            for lane, tokens in got.items():
                if tokens != ref:
                    i = next((j for j, (a, b) in enumerate(zip(tokens, ref)) if a != b), min(len(tokens), len(ref)))
                    row[f"{lane}_first_difference"] = {"step": i, "top2_margin": margin_at(pair, ids, ref, i)}
            want = "eager replay" if args.force else "CUDA graphs"
            row["ok"] = row["same_as_generate"] and row["same_as_eager"] and set(row["paths"].values()) == {want}
            rows.append(row)
            print(f"B identity k={k}: {'same' if row['ok'] else 'DIFFERENT'} {row['paths']} {text[:30]!r}"
                  + "".join(f" {lane}: first difference at step {d['step']}, top-2 margin {d['top2_margin']:.3g}"
                            for lane in got if (d := row.get(f'{lane}_first_difference'))))
    print(f"B identity: {sum(r['ok'] for r in rows)}/{len(rows)}")
    return {"ok": all(r["ok"] for r in rows), "runs": rows}


# (C) chi-square -------------------------------------------------------------------------------------

def small_vocab_pair(device: str, dtype: torch.dtype):
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({chr(97 + i): i for i in range(V)},
                                                                              unk_token="a")))

    def model(seed):
        torch.manual_seed(seed)
        cfg = LlamaConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                          num_key_value_heads=2, max_position_embeddings=64, initializer_range=0.8, eos_token_id=None,
                          bos_token_id=None, pad_token_id=None)
        return LlamaForCausalLM(cfg).eval().to(device=device, dtype=dtype)
    return make_pair(model(10), model(11), tok, V)


@torch.inference_mode()
def exact_joint(target, prompt: list[int], device) -> list[float]:
    """P(x1, x2) at temperature 1 from full (uncached) forwards, as a flat V*V list."""
    def probs(ids):
        return torch.softmax(target(torch.tensor([ids], device=device)).logits[0, -1].double(), -1).cpu()
    p1 = probs(prompt)
    return torch.cat([p1[x] * probs(prompt + [x]) for x in range(V)]).tolist()


def part_c(args) -> dict:
    rows, prompt = [], [1, 2, 3, 1, 2]
    for dtype in (torch.bfloat16, torch.float32):
        pair = small_vocab_pair(args.device, dtype)
        expected = exact_joint(pair.target, prompt, args.device)
        for k in (1, 2):
            counts, paths = [0] * (V * V), set()
            for seed in range(args.samples):
                cfg = SpecConfig(k=k, temperature=1.0, max_new_tokens=3, seed=seed,
                                 cuda_graphs=True if args.force else None)
                done = list(speculate(pair, prompt, cfg))[-1]
                counts[done.token_ids[0] * V + done.token_ids[1]] += 1
                paths.add(done.stats.decode_path)
            p = chi_square_pvalue(counts, expected)
            rows.append({"dtype": str(dtype), "k": k, "samples": args.samples, "p_value": p, "paths": sorted(paths),
                         "ok": p > 1e-3})
            print(f"C chi-square {dtype} k={k}: p = {p:.4f} over {args.samples} runs ({', '.join(sorted(paths))})"
                  f"{'' if p > 1e-3 else '  FAILED (p <= 0.001)'}")
    return {"ok": all(r["ok"] for r in rows), "runs": rows}


# (D) two threads ------------------------------------------------------------------------------------

def part_d(args) -> dict:
    """Fresh captures (a new pair each time, so every run captures) in one thread while the other
    decodes eagerly and loads a model: every output must equal its eager reference, no error."""
    ids = list(range(5, 30))
    cfg = SpecConfig(k=3, max_new_tokens=16, cuda_graphs=True)
    eager_cfg = SpecConfig(k=3, max_new_tokens=16, cuda_graphs=False)
    reference = list(list(speculate(random_pair("tiny", args.device), ids, eager_cfg))[-1].token_ids)
    # (random_pair seeds the global generator: the loads below happen while fresh() copies, never re-draws)
    errors, results = [], {"captures": [], "eager": [], "loads": 0}

    template = random_pair("tiny", args.device)

    def fresh():                  # new model objects, same weights: every run captures afresh
        return make_pair(copy.deepcopy(template.target), copy.deepcopy(template.draft), template.tokenizer,
                         template.vocab_size)

    def capturing():
        try:
            for _ in range(args.rounds):
                done = list(speculate(fresh(), ids, cfg))[-1]
                results["captures"].append({"same": list(done.token_ids) == reference,
                                            "path": done.stats.decode_path, "capture_s": done.stats.capture_s})
        except Exception:          # noqa: BLE001 - reported in the JSON
            errors.append(traceback.format_exc(limit=3))

    def eager_and_load():
        try:
            pair = random_pair("tiny", args.device)
            for _ in range(args.rounds):
                done = list(speculate(pair, ids, eager_cfg))[-1]
                results["eager"].append(list(done.token_ids) == reference)
                random_pair("tiny", args.device)         # a model load meanwhile
                results["loads"] += 1
        except Exception:          # noqa: BLE001
            errors.append(traceback.format_exc(limit=3))
    threads = [threading.Thread(target=capturing, daemon=True), threading.Thread(target=eager_and_load, daemon=True)]
    for t in threads:
        t.start()
    finished = trust.joined(threads, args.part_limit)
    want = "eager replay" if args.force else "CUDA graphs"
    ok = finished and (not errors and all(r["same"] and r["path"] == want and r["capture_s"] > 0 for r in results["captures"])
          and all(results["eager"]) and len(results["captures"]) == args.rounds)
    print(f"D two threads: {len(results['captures'])} capturing runs, {len(results['eager'])} eager runs, "
          f"{results['loads']} loads, {len(errors)} errors, finished {finished}: {'ok' if ok else 'FAILED'}")
    return {"ok": ok, "errors": errors, "finished": finished, **results}


# (E) a failed capture, then D again -----------------------------------------------------------------

def part_e(args) -> dict:
    """A model whose step does what a capture forbids (a device synchronize; off CUDA the stand-in
    raises): that model decodes eagerly and says why, the process keeps graphs, random draws and
    model initialisation on the device still work, another model still captures; then D again."""
    device = torch.device(args.device)
    stream_before = torch.cuda.current_stream(device) if device.type == "cuda" else None
    pair = random_pair("tiny", args.device)
    forward = pair.target.forward

    def illegal(*a, **kw):
        if trust.capturing_now():
            if device.type == "cuda":
                torch.cuda.synchronize(device)           # not permitted while the stream is capturing
            raise RuntimeError("operation not permitted when stream is capturing (stand-in)")
        return forward(*a, **kw)
    pair.target.forward = illegal
    ids = list(range(5, 30))
    cfg = SpecConfig(k=3, max_new_tokens=16, cuda_graphs=True)
    eager = list(speculate(pair, ids, SpecConfig(k=3, max_new_tokens=16, cuda_graphs=False)))[-1]
    done = list(speculate(pair, ids, cfg))[-1]
    pair.target.forward = forward
    stream_after = torch.cuda.current_stream(device) if device.type == "cuda" else None
    torch.rand(8, device=device).sum().item()              # the default generator left capture mode
    other = random_pair("tiny", args.device)               # a model's initialisation draws on the device
    later = list(speculate(other, ids, cfg))[-1]
    want = "eager replay" if args.force else "CUDA graphs"
    row = {"path": done.stats.decode_path, "draft_path": done.stats.draft_path,
           "same_as_eager": list(done.token_ids) == list(eager.token_ids),
           "distrusted": graph_model.POOL.distrusted(pair.target), "process_failure": graph_capture.failure(),
           "stream_restored": stream_before == stream_after, "other_model_path": later.stats.decode_path}
    row["ok"] = (row["path"].startswith("eager (graph capture failed:") and row["draft_path"] == want
                 and row["same_as_eager"] and row["distrusted"] is not None and row["process_failure"] is None
                 and row["stream_restored"] and row["other_model_path"] == want)
    print(f"E a capture that fails: {row}: {'ok' if row['ok'] else 'FAILED'}")
    trust.forget(pair, other)
    row["d_again"] = part_d(args)
    row["ok"] = row["ok"] and row["d_again"]["ok"]
    return row


# (F) leaks ------------------------------------------------------------------------------------------

def reserved(device: torch.device) -> int | None:
    return torch.cuda.memory_reserved(device) if device.type == "cuda" else None


def part_f(args) -> dict:
    """Reserved memory across capacities, read after one capture and drop has paid what a process
    pays once (cuBLAS keeps a workspace per stream it ran on: the default and the capture stream,
    about 80 MB on an H100); then a dropped pair's model and caches freed and that memory returned."""
    device = torch.device(args.device)
    once = random_pair("tiny", args.device)
    list(speculate(once, list(range(5, 30)), SpecConfig(k=3, max_new_tokens=8, cuda_graphs=True)))
    trust.forget(once)
    del once
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    start = reserved(device)
    allocated_start = torch.cuda.memory_allocated(device) if device.type == "cuda" else None
    pair = random_pair("tiny", args.device)
    rows = []
    for capacity in args.capacities:          # a bundle per capacity: its static cache, one graph, pooled
        lm = graph_model.GraphCachedModel(pair.target, pair.vocab_size, positions=capacity, shapes=((1, 1),))
        lm.feed(torch.arange(5, 30) % pair.vocab_size, keep=1)
        for i in range(4):
            lm.feed(torch.tensor([i + 7]), keep=1)
        path = lm.decode_path
        lm.release()
        rows.append({"capacity": capacity, "reserved": reserved(device), "path": path,
                     "pooled": len(graph_model.POOL._free)})
        print(f"F capacity {capacity}: reserved {rows[-1]['reserved']}, pooled bundles {rows[-1]['pooled']}")
    bundles = graph_model.POOL.bundles(pair.target) + graph_model.POOL.bundles(pair.draft)
    target = weakref.ref(pair.target)
    del pair, lm
    gc.collect()
    graph_model.POOL.drain()          # a collected model's caches are given up by the pool's next caller
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
    end = reserved(device)
    allocated = torch.cuda.memory_allocated(device) if device.type == "cuda" else None
    ok = (target() is None and all(not b.graphs.valid for b in bundles)
          and max(r["pooled"] for r in rows) <= graph_model.MAX_POOLED
          and (end is None or end <= start + 64 * 2**20))
    print(f"F leaks: model freed {target() is None}, {len(bundles)} bundles invalidated, reserved {start} -> {end}:"
          f" {'ok' if ok else 'FAILED'}")
    return {"ok": ok, "reserved_start": start, "reserved_end": end, "allocated_start": allocated_start,
            "allocated_end": allocated, "capacities": rows}


# (G) a relocated model ------------------------------------------------------------------------------

def part_g(args) -> dict:
    pair = random_pair("tiny", args.device)
    ids, cfg = list(range(5, 30)), SpecConfig(k=3, max_new_tokens=16, cuda_graphs=True)
    first = list(speculate(pair, ids, cfg))[-1]
    old = graph_model.POOL.bundles(pair.target)
    with torch.no_grad():
        for p in pair.target.parameters():
            p.data = p.data.clone()                    # the same values at new device addresses
    again = list(speculate(pair, ids, cfg))[-1]
    ok = (list(again.token_ids) == list(first.token_ids) and again.stats.capture_s > 0
          and all(not b.graphs.valid for b in old))
    print(f"G relocated weights: captured afresh ({again.stats.capture_s:.2f} s), same tokens "
          f"{list(again.token_ids) == list(first.token_ids)}: {'ok' if ok else 'FAILED'}")
    return {"ok": ok, "capture_s": [first.stats.capture_s, again.stats.capture_s]}


# (H) a forked worker --------------------------------------------------------------------------------

def _worker(pair, device: str, queue) -> None:
    try:
        torch.set_num_threads(1)
        if device != "cpu":
            pair = make_pair(pair.target.to(device), pair.draft.to(device), pair.tokenizer, pair.vocab_size)
        ids, cfg = list(range(5, 30)), SpecConfig(k=3, max_new_tokens=16, cuda_graphs=True)
        runs = [list(speculate(pair, ids, cfg))[-1] for _ in range(2)]
        queue.put([[list(r.token_ids), r.stats.capture_s, r.stats.decode_path] for r in runs])
    except Exception:              # noqa: BLE001
        queue.put(traceback.format_exc(limit=3))


def fork_worker(device: str) -> int:
    """In a process that has not touched the device: load on the CPU, fork, decode in the child."""
    pair = random_pair("tiny", "cpu")
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_worker, args=(pair, device, queue))
    child.start()
    print(json.dumps(queue.get(timeout=300)))
    child.join(60)
    return child.exitcode or 0


def part_h(args) -> dict:
    run = subprocess.run([sys.executable, __file__, "--fork-worker", args.device], capture_output=True, text=True,
                         timeout=limit_of("H", args.dry_run) - 20)
    try:
        result = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        result = run.stdout[-1000:] + run.stderr[-1000:]
    if not isinstance(result, list):
        print(f"H forked worker: FAILED {result}")
        return {"ok": False, "error": result}
    (first, second) = result
    want = "eager replay" if args.force else "CUDA graphs"
    ok = first[0] == second[0] and first[1] > 0 and second[1] == 0 and first[2] == second[2] == want
    print(f"H forked worker: capture s {first[1]:.2f} then {second[1]:.2f}, same tokens {first[0] == second[0]}, "
          f"{first[2]}: {'ok' if ok else 'FAILED'}")
    return {"ok": ok, "runs": result}


# (I) the speed table --------------------------------------------------------------------------------

def part_i(args) -> dict:
    pair = random_pair(args.pair, args.device)
    ids = [(i * 7919) % pair.vocab_size for i in range(1, 65)]     # a 64-token prompt (random weights)
    cfg = SpecConfig(k=args.k, max_new_tokens=args.max_new_tokens, forced_acceptance=0.8)
    paths = ["eager", "CUDA graphs"] + (["torch.compile"] if args.with_compile else [])
    rows = compare_paths(pair, ids, cfg, paths, args.repeats, bandwidth=None)
    print(f"\nI {pair.target_name} <- {pair.draft_name}, forced acceptance 0.8 (NOT LOSSLESS: timing only), "
          f"k = {args.k}, {args.max_new_tokens} new tokens, {args.repeats} repeats (median)")
    print(path_table(rows))
    graphs = next(r for r in rows if r["path"] == "CUDA graphs")
    print("targets, CUDA-graph path: " + ", ".join(
        f"{name} {graphs[name]:.3g} ({'meets' if _meets(name, graphs[name]) else 'short of'} {target})"
        for name, target in FIGURES.items() if graphs[name] is not None))
    return {"ok": True, "rows": rows, "figures": FIGURES}


def _meets(name: str, value: float) -> bool:
    return value >= FIGURES[name] if name in ("ratio", "bandwidth_fraction") else value <= FIGURES[name]


# letter: (part, seconds expected on an H100, what it checks). A part's limit is twice that plus 30 s.
PARTS = {
    "A": (part_a, 15, "fidelity: graphs against eager step by step, fp32 and bf16, first and pooled"),
    "B": (part_b, 30, "greedy identity with generate() and the eager path, k = 1, 3, 5, 8 and the tree 2,2,1, fp32"),
    "D": (part_d, 15, "captures in one thread, eager decoding and model loads in another"),
    "E": (part_e, 25, "a model whose capture fails: only it decodes eagerly; random draws still work; D again"),
    "F": (part_f, 10, "leaks: reserved memory across capacities; a dropped pair's model and caches freed"),
    "G": (part_g, 10, "weights at new addresses: captured afresh, the same tokens"),
    "H": (part_h, 25, "a worker forked after loading (ZeroGPU): the second race replays"),
    "J": (trust.part_j, 10, "a draft with -inf outside its head keeps both models on graphs"),
    "K": (trust.part_k, 30, "bf16 identity on the bundled Llama pair, first difference and its top-2 margin"),
    "L": (trust.part_l, 40, "a stale graph caught on every route: race, step, k advice, calibration, bench, warm-up"),
    "M": (trust.part_m, 10, "out of memory in a capture, in a check's eager step: runs eager, exact"),
    "N": (trust.part_n, 30, "caches dropped, pools cleared and garbage collected beside captures"),
    "O": (trust.part_o, 40, "ten app-level races at once through the decoding slots, each equal to its solo run"),
    "P": (trust.part_p, 30, "forty races over four capacities without empty_cache: reserved memory flat"),
    "C": (part_c, 60, "chi-square of the first two sampled tokens against the exact joint, bf16 and fp32"),
    "I": (part_i, 150, "the speed table on a Qwen2.5-0.5B/7B-shaped bf16 pair (reports only)"),
}
REPORTS_ONLY = {"I"}
MARK = "@@part "


# A dry run's parts get three times their limit: on a busy 2-core CPU a child's imports and model loads
# alone can take most of a limit sized for an H100 (the dry run checks that the parts run, not their time).
DRY_RUN_LIMIT_SCALE = 3


def limit_of(letter: str, dry_run: bool) -> float:
    forced = os.environ.get("SPECVIZ_GPU_CHECK_LIMIT_S")        # tests: a short limit
    if forced:
        return float(forced)
    return (DRY_RUN_LIMIT_SCALE if dry_run else 1) * (2 * PARTS[letter][1] + 30)


def parts_help() -> str:
    lines = [f"  {letter}  ~{budget:>3} s  {what}" for letter, (_, budget, what) in PARTS.items()]
    total = sum(budget for _, budget, _ in PARTS.values())
    return "parts (in the default order; seconds expected on an H100):\n" + "\n".join(lines) + \
        f"\n  all: ~{total} s, plus a few seconds a child process"


def run_child(args) -> int:
    """Run the parts named by --child in this process, one JSON line each; stop after a failing one
    (the parent starts a fresh process for the rest: a failure may have left this one in a bad state)."""
    for letter in args.child:
        if os.environ.get("SPECVIZ_GPU_CHECK_HANG") == letter:     # tests: a part that never returns
            time.sleep(3600)
        start = time.perf_counter()
        args.part_limit = limit_of(letter, args.dry_run) - 10       # threads a part joins give up before the parent does
        try:
            part = PARTS[letter][0](args)
        except Exception:          # noqa: BLE001 - reported, then a fresh process for the rest
            part = {"ok": False, "error": traceback.format_exc(limit=5)}
            print(f"{letter} CRASHED:\n{part['error']}")
        part["seconds"] = time.perf_counter() - start
        print(MARK + json.dumps({"letter": letter, "part": part}, default=str), flush=True)
        if not part["ok"]:
            return 1
    return 0


def child_command(args, letters: str) -> list[str]:
    cmd = [sys.executable, __file__, "--child", letters, "--device", args.device, "--samples", str(args.samples),
           "--pair", args.pair, "--k", str(args.k), "--max-new-tokens", str(args.max_new_tokens),
           "--repeats", str(args.repeats)]
    return cmd + (["--dry-run"] if args.dry_run else []) + (["--with-compile"] if args.with_compile else [])


def _skip(result: dict, letters, left: float, budget: float) -> None:
    for letter in letters:
        result["parts"][letter] = {"ok": False, "skipped": f"over the run's budget ({budget:.0f} s)"}
        print(f"{letter} skipped: its ~{PARTS[letter][1]} s do not fit the {left:.0f} s left")


def _end(child: subprocess.Popen) -> None:
    """End a child and everything it started (part H forks a worker of its own)."""
    if child.poll() is None:
        try:
            os.killpg(child.pid, 9)
        except ProcessLookupError:
            pass
    try:
        child.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _report(line: str, letter: str) -> dict | None:
    """The part's record from a child's line, or None for any other line (a stray or broken mark too)."""
    if not line.startswith(MARK):
        return None
    try:
        record = json.loads(line[len(MARK):])
    except ValueError:
        return None
    return record["part"] if isinstance(record, dict) and record.get("letter") == letter else None


def run_parts(args, result: dict) -> list[str]:
    """Each part in a child process under its limit, within the run's --budget; the JSON after each."""
    todo, failed, began = list(args.parts), [], time.perf_counter()

    def left() -> float:
        return args.budget - (time.perf_counter() - began)
    while todo:
        if PARTS[todo[0]][1] > left() and not args.dry_run:
            _skip(result, todo, left(), args.budget)
            failed += [t for t in todo if t not in REPORTS_ONLY]
            break
        child = subprocess.Popen(child_command(args, "".join(todo)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: ([lines.put(line) for line in child.stdout], lines.put(None)),
                         daemon=True).start()
        while todo:
            letter = todo[0]
            if PARTS[letter][1] > left() and not args.dry_run:
                break                         # the outer loop skips it and the rest
            deadline = time.perf_counter() + limit_of(letter, args.dry_run)
            part, tail = None, []
            while part is None:
                try:
                    line = lines.get(timeout=max(0.1, deadline - time.perf_counter()))
                except queue.Empty:
                    part = {"ok": False, "error": f"timed out after {limit_of(letter, args.dry_run):.0f} s", "output": tail[-20:]}
                    break
                if line is None:              # the child ended without reporting this part
                    _end(child)
                    part = {"ok": False, "error": f"the process ended (exit {child.returncode})", "output": tail[-20:]}
                    break
                part = _report(line, letter)
                if part is None:
                    print(line, end="" if line.endswith("\n") else "\n", flush=True)
                    tail.append(line.rstrip()[:300])
            todo.pop(0)
            result["parts"][letter] = part
            if args.out:
                Path(args.out).write_text(json.dumps(result, indent=1, default=str))
            if not part["ok"]:
                if letter not in REPORTS_ONLY:
                    failed.append(letter)
                break                         # a fresh process for the parts left
        _end(child)
    return failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=parts_help(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dry-run", action="store_true", help="on the CPU, tiny models, few samples: checks that it runs")
    ap.add_argument("--device", default=None, help="default: cuda (cpu with --dry-run)")
    ap.add_argument("--parts", default="".join(PARTS), help="letters of the parts to run, in order")
    ap.add_argument("--budget", type=float, default=540, help="seconds for the whole run: parts that would not "
                    "fit are skipped and reported (default 540)")
    ap.add_argument("--samples", type=int, default=1000, help="chi-square runs per dtype and k")
    ap.add_argument("--pair", default="qwen2.5-0.5b:7b", help="random pair shapes for the speed table")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--with-compile", action="store_true", help="also time the torch.compile path (minutes)")
    ap.add_argument("--out", default=None, help="the JSON, rewritten after every part (default: gpu_check.json; "
                    "none with --dry-run)")
    ap.add_argument("--fork-worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.fork_worker:
        return fork_worker(args.fork_worker)
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        print(f"unknown parts {''.join(sorted(unknown))}: choose from {''.join(PARTS)} (see --help)")
        return 2
    pinned = pinned_transformers()
    cuda = torch.version.cuda if torch.cuda.is_available() else None
    if not args.child:
        print(f"python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {cuda}), transformers "
              f"{transformers.__version__} (pinned {pinned})")
    if transformers.__version__ != pinned:
        print(f"refused: transformers {transformers.__version__} is not the pinned {pinned}; carry its wheel "
              f"(pip download --only-binary=:all: --no-deps transformers=={pinned}; on this machine pip install "
              f"--no-index --no-deps --target DIR THE_WHEEL and PYTHONPATH=DIR; docs/gpu.md)")
        return 2
    args.identity_tokens, args.identity_ks, args.identity_prompts, args.rounds = 64, (1, 3, 5, 8), len(PROMPTS), 4
    args.capacities, args.soak_runs, args.prompts = [256, 1024, 4096, 16384], 40, PROMPTS
    if args.dry_run:
        args.device = args.device or "cpu"
        args.samples, args.pair, args.max_new_tokens, args.repeats = min(args.samples, 60), "tiny", 16, 1
        args.identity_tokens, args.identity_ks, args.identity_prompts = 12, (1,), 2     # and the tree: four runs
        args.rounds, args.capacities, args.soak_runs = 2, [256, 512], 10
    args.device = args.device or "cuda"
    args.out = args.out or (None if args.dry_run else "gpu_check.json")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device here: run with --dry-run for the CPU check")
        return 2
    args.force = not args.device.startswith("cuda")    # off CUDA the graph path is asked for (the eager stand-in)
    if args.child:
        return run_child(args)
    result = {"device": args.device, "dry_run": args.dry_run, "versions": {
        "python": sys.version.split()[0], "torch": torch.__version__, "cuda": cuda,
        "transformers": transformers.__version__},
        "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None,
        "budgets_s": {letter: PARTS[letter][1] for letter in args.parts}, "parts": {}}
    failed = run_parts(args, result)
    over = [letter for letter, part in result["parts"].items()
            if part.get("seconds") is not None and part["seconds"] > PARTS[letter][1]]
    if over:
        took = ", ".join(f"{x} {result['parts'][x]['seconds']:.0f} s" for x in over)
        print(f"over their expected seconds: {took}")
    print(f"\n{'FAILED: ' + ', '.join(failed) if failed else 'ok'}: parts {args.parts}"
          + (f" (JSON in {args.out})" if args.out else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
