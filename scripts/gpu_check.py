"""What a GPU machine checks of the CUDA-graph path, in one command of at most ten minutes:

    python scripts/gpu_check.py --out benchmarks/gpu-check.json

It prints the versions, refuses a transformers other than requirements.txt's, and writes the JSON
after every part (a run cut off keeps the parts it finished). docs/gpu.md says what each proves:
(A) fidelity: a scripted feed (prefill, ten steps, verify passes k = 1..8, a rollback, a catch-up,
    then the same on the pooled bundle) through the graphs and through eager, per-step max |delta|,
    for the bundled pair in fp32 and a small grouped-query model in bf16;
(B) identity: greedy output against generate() and against the eager path, the first differing
    step and the top-2 logit margin there, the three lanes' paths (target, draft, plain) named;
(C) chi-square of the first two sampled tokens against the target's exact joint, bf16 and fp32;
(D) two threads: fresh captures in one, eager decoding and a model load in the other;
(E) a capture forced to fail (the process decodes eagerly and says so), then D again;
(F) leaks: memory reserved across capacities, and a dropped pair's model and bundles freed;
(G) a relocated model (its weights at new addresses) captures afresh and decodes the same;
(H) a worker forked after loading (as ZeroGPU's): two races, the second replays (capture_s = 0);
(I) the speed table (specviz/bench/decode_paths.py) on a 7B-shaped pair, with the targets beside it.
Exit status 1 if any of A-H fails; I only reports. `--dry-run` runs every part on the CPU with
tiny models and the eager stand-in (tests/test_cuda_graphs.py runs it), to show it runs.
"""
from __future__ import annotations

import argparse
import copy
import gc
import json
import multiprocessing
import subprocess
import sys
import threading
import time
import traceback
import weakref
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

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
    for k in args.identity_ks:
        for text in PROMPTS[: args.identity_prompts]:
            ids = pair.tokenizer(text)["input_ids"]
            cfg = SpecConfig(k=k, max_new_tokens=args.identity_tokens, cuda_graphs=graphs)
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
    threads = [threading.Thread(target=capturing), threading.Thread(target=eager_and_load)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = "eager replay" if args.force else "CUDA graphs"
    ok = (not errors and all(r["same"] and r["path"] == want and r["capture_s"] > 0 for r in results["captures"])
          and all(results["eager"]) and len(results["captures"]) == args.rounds)
    print(f"D two threads: {len(results['captures'])} capturing runs, {len(results['eager'])} eager runs, "
          f"{results['loads']} loads, {len(errors)} errors: {'ok' if ok else 'FAILED'}")
    return {"ok": ok, "errors": errors, **results}


# (E) a failed capture, then D again -----------------------------------------------------------------

def part_e(args) -> dict:
    device = torch.device(args.device)
    graphs = graph_capture.GraphSet(graph_capture.capturer_for(device), device)
    stream_before = torch.cuda.current_stream(device) if device.type == "cuda" else None

    def illegal():
        x = torch.ones(4, device=device) * 2
        if device.type == "cuda":
            torch.cuda.synchronize(device)           # not permitted while the stream is capturing
        else:
            raise RuntimeError("operation not permitted when stream is capturing (stand-in)")
        return x[None]
    graphs.capture({"ok": lambda: torch.ones(1, 4, device=device), "illegal": illegal})
    why = graph_capture.failure()
    stream_after = torch.cuda.current_stream(device) if device.type == "cuda" else None
    pair = random_pair("tiny", args.device)
    ids = list(range(5, 30))
    cfg = SpecConfig(k=3, max_new_tokens=16, cuda_graphs=True)
    done = list(speculate(pair, ids, cfg))[-1]
    eager = list(speculate(pair, ids, SpecConfig(k=3, max_new_tokens=16, cuda_graphs=False)))[-1]
    row = {"failure": why, "stream_restored": stream_before == stream_after, "later_path": done.stats.decode_path,
           "later_same_as_eager": list(done.token_ids) == list(eager.token_ids)}
    row["ok"] = (why is not None and row["stream_restored"] and row["later_same_as_eager"]
                 and done.stats.decode_path.startswith("eager (graph capture failed:"))
    print(f"E failed capture: {why}; stream restored: {row['stream_restored']}; a later run: {done.stats.decode_path}"
          f": {'ok' if row['ok'] else 'FAILED'}")
    graph_capture.clear_failure()
    row["d_again"] = part_d(args)
    row["ok"] = row["ok"] and row["d_again"]["ok"]
    return row


# (F) leaks ------------------------------------------------------------------------------------------

def reserved(device: torch.device) -> int | None:
    return torch.cuda.memory_reserved(device) if device.type == "cuda" else None


def part_f(args) -> dict:
    device = torch.device(args.device)
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    start = reserved(device)
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
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
    end = reserved(device)
    ok = (target() is None and all(not b.graphs.valid for b in bundles)
          and max(r["pooled"] for r in rows) <= graph_model.MAX_POOLED
          and (end is None or end <= start + 64 * 2**20))
    print(f"F leaks: model freed {target() is None}, {len(bundles)} bundles invalidated, reserved {start} -> {end}:"
          f" {'ok' if ok else 'FAILED'}")
    return {"ok": ok, "reserved_start": start, "reserved_end": end, "capacities": rows}


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
                         timeout=400)
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


PARTS = {"A": part_a, "B": part_b, "C": part_c, "D": part_d, "E": part_e, "F": part_f, "G": part_g, "H": part_h,
         "I": part_i}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="on the CPU, tiny models, few samples: checks that it runs")
    ap.add_argument("--device", default=None, help="default: cuda (cpu with --dry-run)")
    ap.add_argument("--parts", default="ABCDEFGHI", help="letters of the parts to run, in order")
    ap.add_argument("--samples", type=int, default=2000, help="chi-square runs per dtype and k")
    ap.add_argument("--pair", default="qwen2.5-0.5b:7b", help="random pair shapes for the speed table")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--with-compile", action="store_true", help="also time the torch.compile path (minutes)")
    ap.add_argument("--out", default=None, help="the JSON, rewritten after every part (default: gpu_check.json; "
                    "none with --dry-run)")
    ap.add_argument("--fork-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.fork_worker:
        return fork_worker(args.fork_worker)
    pinned = pinned_transformers()
    cuda = torch.version.cuda if torch.cuda.is_available() else None
    print(f"python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {cuda}), transformers "
          f"{transformers.__version__} (pinned {pinned})")
    if transformers.__version__ != pinned:
        print(f"refused: transformers {transformers.__version__} is not the pinned {pinned}; carry its wheel "
              f"(pip download --only-binary=:all: --no-deps transformers=={pinned}; on this machine pip install "
              f"--no-index --no-deps --target DIR THE_WHEEL and PYTHONPATH=DIR)")
        return 2
    args.identity_tokens, args.identity_ks, args.identity_prompts, args.rounds = 64, (1, 3, 5, 8), len(PROMPTS), 4
    args.capacities = [256, 1024, 4096, 16384]
    if args.dry_run:
        args.device = args.device or "cpu"
        args.samples, args.pair, args.max_new_tokens, args.repeats = min(args.samples, 100), "tiny", 16, 1
        args.identity_tokens, args.identity_ks, args.identity_prompts = 12, (1, 5), 2
        args.samples, args.rounds, args.capacities = min(args.samples, 60), 2, [256, 512]
    args.device = args.device or "cuda"
    args.out = args.out or (None if args.dry_run else "gpu_check.json")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device here: run with --dry-run for the CPU check")
        return 2
    args.force = not args.device.startswith("cuda")    # off CUDA the graph path is asked for (the eager stand-in)
    result = {"device": args.device, "dry_run": args.dry_run, "versions": {
        "python": sys.version.split()[0], "torch": torch.__version__, "cuda": cuda,
        "transformers": transformers.__version__},
        "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None, "parts": {}}
    failed = []
    for letter in args.parts:
        start = time.perf_counter()
        try:
            part = PARTS[letter](args)
        except Exception:          # noqa: BLE001 - one part's crash must not lose the others
            part = {"ok": False, "error": traceback.format_exc(limit=5)}
            print(f"{letter} CRASHED:\n{part['error']}")
        part["seconds"] = time.perf_counter() - start
        result["parts"][letter] = part
        if not part["ok"]:
            failed.append(letter)
        if args.out:
            Path(args.out).write_text(json.dumps(result, indent=1, default=str))
    print(f"\n{'FAILED: ' + ', '.join(failed) if failed else 'ok'}: parts {args.parts}"
          + (f" (JSON in {args.out})" if args.out else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
