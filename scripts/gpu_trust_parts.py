"""gpu_check's parts J-P: whether the graph path's trust is aimed both ways on a real device.

Each part takes gpu_check's parsed arguments and returns a dict with "ok"; off CUDA (`--dry-run`)
each runs the same flow on the eager stand-in, with a raising or host-freezing capturer where a
real device would fail or freeze. docs/gpu.md says what each proves:
(J) a draft whose head covers part of the vocabulary (-inf elsewhere) keeps both models on graphs;
(K) bf16 identity on the bundled (Llama) pair: graphs against the eager path and generate(), the
    first differing step and its top-2 margin;
(L) a stale graph (positions frozen at capture) caught on every route into the pool: race, step
    mode, the k advice's timing (lazy capture), the bench and the warm-up; a correct model's lazily
    captured shapes still trusted;
(M) out of device memory inside a capture: the run completes eagerly, graphs stay on, random draws work;
    likewise out of memory in a replay check's eager step: that run completes eagerly and exact, the
    next one replays;
(N) caches dropped, pools cleared and garbage collected in one thread while another captures;
(O) ten app-level races at once through the app's decoding slots, each equal to its solo run;
(P) forty races over four capacities without `empty_cache`: reserved memory flat after the first ten.
"""
from __future__ import annotations

import copy
import gc
import threading
import traceback

import torch

from specviz import SpecConfig, decode_baseline, race, speculate
from specviz.bench.random_pair import random_pair
from specviz.bench.runner import hf_generate, specviz_run
from specviz.models.loading import load_pair, make_pair
from specviz.runtime import graph_capture, graph_model
from specviz.bench.stale_graphs import FrozenHostState, time_like_the_k_advice
from specviz.runtime.graph_capture import GATE, CudaCapturer

IDS = list(range(5, 30))


def want_path(args) -> str:
    return "eager replay" if args.force else "CUDA graphs"


def forget(*pairs) -> None:
    for pair in pairs:
        for model in (pair.target, pair.draft):
            graph_model.POOL.forget(model)


def fresh(template):
    """The same weights in new model objects: every run of it captures afresh."""
    return make_pair(copy.deepcopy(template.target), copy.deepcopy(template.draft), template.tokenizer,
                     template.vocab_size)


def capturing_now() -> bool:
    """Inside a capture: a CUDA stream capture, or the stand-in's capture under the gate."""
    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        return True
    return GATE.captured_by_me()


def joined(threads, seconds: float) -> bool:
    for t in threads:
        t.join(seconds)
    return not any(t.is_alive() for t in threads)


# (J) a draft with -inf outside its head -------------------------------------------------------------

def part_j(args) -> dict:
    pair = random_pair("tiny", args.device)
    head = pair.vocab_size // 2

    def cut(module, inputs, output):
        return output.masked_fill(torch.arange(output.shape[-1], device=output.device) >= head, float("-inf"))
    pair.draft.lm_head.register_forward_hook(cut)
    eager = list(speculate(pair, IDS, SpecConfig(k=3, max_new_tokens=24, cuda_graphs=False)))[-1]
    runs = [list(speculate(pair, IDS, SpecConfig(k=3, max_new_tokens=24, cuda_graphs=True)))[-1] for _ in range(2)]
    rows = [{"target": r.stats.decode_path, "draft": r.stats.draft_path, "same": r.token_ids == eager.token_ids,
             "check_delta": r.stats.graph_check_delta} for r in runs]
    ok = all(r["same"] and r["target"] == r["draft"] == want_path(args) for r in rows)
    print(f"J draft with -inf outside its head: {rows}: {'ok' if ok else 'FAILED'}")
    forget(pair)
    return {"ok": ok, "runs": rows}


# (K) bf16 identity on a real architecture ----------------------------------------------------------

@torch.inference_mode()
def top2_margin(model, ids: list[int], tokens: list[int], i: int, device) -> float:
    logits = model(torch.tensor([ids + tokens[:i]], device=device)).logits[0, -1].float()
    top = logits.topk(2).values
    return (top[0] - top[1]).item()


def first_difference(a: list[int], b: list[int]) -> int | None:
    if a == b:
        return None
    return next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def part_k(args) -> dict:
    pair = load_pair(device=args.device, dtype="bfloat16")
    rows = []
    for text in args.prompts[: args.identity_prompts]:
        ids = pair.tokenizer(text)["input_ids"]
        for k in (1, 4):
            cfg = SpecConfig(k=k, max_new_tokens=args.identity_tokens)
            graphs = list(speculate(pair, ids, SpecConfig(**{**cfg.to_dict(), "cuda_graphs": True})))[-1]
            eager = list(speculate(pair, ids, SpecConfig(**{**cfg.to_dict(), "cuda_graphs": False})))[-1]
            ref = hf_generate(pair, ids, cfg)
            row = {"k": k, "prompt": text[:30], "paths": [graphs.stats.decode_path, graphs.stats.draft_path],
                   "check_delta": graphs.stats.graph_check_delta}
            for name, other in (("eager", list(eager.token_ids)), ("generate", ref[: len(graphs.token_ids)])):
                i = first_difference(list(graphs.token_ids), other)
                row[f"same_as_{name}"] = i is None
                if i is not None:    # a bf16 near-tie decides differently: the margin says how near
                    row[f"{name}_first_difference"] = {"step": i, "top2_margin": top2_margin(
                        pair.target, ids, other, i, pair.device)}
            diffs = [row[f"{n}_first_difference"]["top2_margin"] for n in ("eager", "generate")
                     if f"{n}_first_difference" in row]
            row["ok"] = all(p == want_path(args) for p in row["paths"]) and all(m < 0.25 for m in diffs)
            rows.append(row)
            print(f"K bf16 identity k={k} {text[:24]!r}: eager {row['same_as_eager']}, generate "
                  f"{row['same_as_generate']}, margins {diffs}, paths {row['paths']}: {'ok' if row['ok'] else 'FAILED'}")
    forget(pair)
    return {"ok": all(r["ok"] for r in rows), "runs": rows}


# (L) a stale graph on every route -------------------------------------------------------------------

class StaleCuda(CudaCapturer):
    """A real CUDA graph that froze a host value: the positions its step writes are computed from the
    slot's length on the host while capturing, so every replay writes the capture's positions."""

    def capture(self, step):
        bundle, positions = step.func.__self__, step.args[1]

        def stale():
            start = bundle.slot.length
            positions.copy_(torch.arange(start, start + positions.numel(), device=positions.device))
            return step()
        return super().capture(stale)


def stale_capturer(device: torch.device):
    return StaleCuda(device) if device.type == "cuda" else FrozenHostState()


def seed_pool(model, vocab: int, capturer, positions: int = 64) -> None:
    graph_model.GraphCachedModel(model, vocab, positions=positions, capturer=capturer).release()


def part_l(args) -> dict:
    from specviz.app.state import warm_up
    from specviz.engine.analysis.calibrate import measure_costs
    device = torch.device(args.device)
    template = random_pair("tiny", args.device)
    cfg = SpecConfig(k=3, max_new_tokens=24, cuda_graphs=True)
    # Greedy: the speculative lane writes the plain lane's tokens, so one reference serves every route.
    reference = list(list(decode_baseline(template, IDS, SpecConfig(max_new_tokens=24,
                                                                    cuda_graphs=False)))[-1].token_ids)

    def dones(events) -> list:
        return [e for e in events if type(e).__name__ == "Done"]

    def via_lazy(pair):
        time_like_the_k_advice(pair.target, pair.vocab_size, IDS, stale_capturer(device))
        return dones(decode_baseline(pair, IDS, cfg))

    def via_calibration(pair):
        seed_pool(pair.target, pair.vocab_size, stale_capturer(device))
        if device.type == "cuda":
            measure_costs(pair, k_max=3, repeats=2)     # the k advice's timing: graphs on CUDA
        else:
            time_like_the_k_advice(pair.target, pair.vocab_size, IDS)   # off CUDA it times eagerly: its flow
        return dones(decode_baseline(pair, IDS, cfg))

    def via_warm_up(pair):
        seed_pool(pair.target, pair.vocab_size, stale_capturer(device))
        warm_up(pair, graphs=True)
        return dones(decode_baseline(pair, IDS, cfg))

    def via(decode):
        def route(pair):
            seed_pool(pair.target, pair.vocab_size, stale_capturer(device))
            return decode(pair)
        return route
    routes = {"race": via(lambda p: dones(race(p, IDS, cfg))),
              "step mode": via(lambda p: dones(speculate(p, IDS, cfg))),
              "bench": via(lambda p: [specviz_run(p, IDS, cfg, speculative=False)]),
              "k advice (lazy capture)": via_lazy, "calibration": via_calibration, "warm-up": via_warm_up}
    rows = {}
    for name, route in routes.items():
        pair = fresh(template)
        try:
            outs = route(pair)          # each lane's Done (the bench: its Timing, which keeps no tokens)
            paths = [o.stats.decode_path for o in outs]
            caught = any(p.startswith("eager (a replay differed") for p in paths) or bool(
                graph_model.POOL.distrusted(pair.target))
            rows[name] = {"caught": caught, "path": "; ".join(paths), "same_tokens": all(
                list(o.token_ids) == reference for o in outs if hasattr(o, "token_ids"))}
        except Exception:          # noqa: BLE001
            rows[name] = {"caught": False, "error": traceback.format_exc(limit=3)}
        forget(pair)
    correct = fresh(template)
    time_like_the_k_advice(correct.target, correct.vocab_size, IDS)
    later = list(decode_baseline(correct, IDS, cfg))[-1]
    rows["correct model, lazily captured"] = {"caught": False, "path": later.stats.decode_path,
                                              "same_tokens": list(later.token_ids) == reference}
    forget(correct)
    ok = (all(r.get("caught") and r.get("same_tokens") for n, r in rows.items() if n != "correct model, lazily captured")
          and rows["correct model, lazily captured"]["path"] == want_path(args)
          and rows["correct model, lazily captured"]["same_tokens"])
    for name, r in rows.items():
        print(f"L stale graph via {name}: caught {r.get('caught')}, same tokens {r.get('same_tokens')}, "
              f"{r.get('path', r.get('error', ''))[:90]}")
    print(f"L: {'ok' if ok else 'FAILED'}")
    return {"ok": ok, "routes": rows}


# (M) out of memory inside a capture ------------------------------------------------------------------

def part_m(args) -> dict:
    pair = random_pair("tiny", args.device)
    cfg = SpecConfig(k=3, max_new_tokens=24, cuda_graphs=True)
    reference = list(list(decode_baseline(pair, IDS, SpecConfig(max_new_tokens=24, cuda_graphs=False)))[-1].token_ids)
    forward = pair.target.forward

    def greedy_for_memory(*a, **kw):
        if capturing_now():
            if pair.device.type == "cuda":
                torch.empty(1 << 45, dtype=torch.uint8, device=pair.device)      # 32 TiB: the allocator refuses
            raise torch.OutOfMemoryError("CUDA out of memory (stand-in)")
        return forward(*a, **kw)
    pair.target.forward = greedy_for_memory
    try:
        first = list(decode_baseline(pair, IDS, cfg))[-1]
    finally:
        pair.target.forward = forward
    torch.rand(8, device=pair.device).sum().item()                          # random draws still work
    random_pair("tiny", args.device)                                         # so does a model's initialisation
    again = list(decode_baseline(pair, IDS, cfg))[-1]
    checking, fired = out_of_memory_in_a_check(pair, cfg)
    after = list(decode_baseline(pair, IDS, cfg))[-1]
    row = {"first_path": first.stats.decode_path, "first_same": list(first.token_ids) == reference,
           "again_path": again.stats.decode_path, "again_same": list(again.token_ids) == reference,
           "check_oom_fired": fired, "check_oom_path": checking.stats.decode_path,
           "check_oom_same": list(checking.token_ids) == reference,
           "after_path": after.stats.decode_path, "after_same": list(after.token_ids) == reference,
           "process_failure": graph_capture.failure(), "distrusted": graph_model.POOL.distrusted(pair.target)}
    row["ok"] = (row["first_same"] and row["again_same"] and row["first_path"].startswith("eager (out of device memory")
                 and row["again_path"] == want_path(args) and row["process_failure"] is None
                 and row["distrusted"] is None and fired and row["check_oom_same"] and row["after_same"]
                 and row["check_oom_path"] == "eager (out of device memory in the replay check's eager step)"
                 and row["after_path"] == want_path(args))
    print(f"M out of memory in a capture: {row}: {'ok' if row['ok'] else 'FAILED'}")
    forget(pair)
    return row


def out_of_memory_in_a_check(pair, cfg):
    """A run whose first replay check finds no room for its eager step (on CUDA the allocator refuses
    32 TiB there): the run's Done, and whether the failure was injected."""
    forget(pair)                                # captured afresh, so the first replay is checked
    original = graph_capture.GraphSet.run
    left = {"n": 1}

    def run(self, key, step, *a, **kw):
        if left["n"] and key in self.replays and key not in self.checked:
            def no_room():
                if left["n"]:
                    left["n"] = 0
                    if pair.device.type == "cuda":
                        torch.empty(1 << 45, dtype=torch.uint8, device=pair.device)
                    raise torch.OutOfMemoryError("CUDA out of memory (stand-in)")
                return step()
            return original(self, key, no_room, *a, **kw)
        return original(self, key, step, *a, **kw)
    graph_capture.GraphSet.run = run
    try:
        done = list(decode_baseline(pair, IDS, cfg))[-1]
    finally:
        graph_capture.GraphSet.run = original
    return done, left["n"] == 0


# (N) drops and garbage collection beside captures --------------------------------------------------

class Finalized:
    """Garbage with a finalizer and a cycle, so that only the collector frees it."""

    def __init__(self, device):
        self.me, self.tensor = self, torch.ones(64, device=device)

    def __del__(self):
        self.tensor.add_(1)


def part_n(args) -> dict:
    template = random_pair("tiny", args.device)
    cfg = SpecConfig(k=3, max_new_tokens=16, cuda_graphs=True)
    reference = list(list(speculate(template, IDS, SpecConfig(k=3, max_new_tokens=16,
                                                              cuda_graphs=False)))[-1].token_ids)
    errors, runs, done = [], [], threading.Event()

    def capturing():
        try:
            for _ in range(args.rounds * 2):
                pair = fresh(template)
                out = list(speculate(pair, IDS, cfg))[-1]
                runs.append({"same": list(out.token_ids) == reference, "path": out.stats.decode_path})
        except Exception:          # noqa: BLE001
            errors.append(traceback.format_exc(limit=3))
        finally:
            done.set()

    def dropping():
        try:
            while not done.is_set():
                graph_model.POOL.clear()
                spare = fresh(template)
                list(speculate(spare, IDS[:8], SpecConfig(k=2, max_new_tokens=4, cuda_graphs=True)))
                del spare
                for _ in range(20):
                    Finalized(args.device)
                gc.collect()
        except Exception:          # noqa: BLE001
            errors.append(traceback.format_exc(limit=3))
    threads = [threading.Thread(target=capturing, daemon=True), threading.Thread(target=dropping, daemon=True)]
    for t in threads:
        t.start()
    finished = joined(threads, args.part_limit)
    ok = finished and not errors and len(runs) == args.rounds * 2 and all(
        r["same"] and r["path"] == want_path(args) for r in runs)
    print(f"N drops and GC beside captures: {len(runs)} runs, {len(errors)} errors, finished {finished}: "
          f"{'ok' if ok else 'FAILED'}")
    return {"ok": ok, "finished": finished, "errors": errors, "runs": runs}


# (O) ten app-level races at once --------------------------------------------------------------------

def part_o(args) -> dict:
    from specviz.app.state import AppState
    from specviz.models.presets import get_preset
    app = AppState(presets={"bundled": get_preset("bundled")}, device=args.device)
    pair = app.pairs.pair(app.pairs.known("bundled"))
    prompts = [f"def f{i}(x):\n    return" for i in range(10)]
    cfg = SpecConfig(k=4, max_new_tokens=args.identity_tokens, cuda_graphs=True if args.force else None)

    def tokens_of(events) -> dict:
        return {e.lane: list(e.token_ids) for e in events if type(e).__name__ == "Done"}
    solo = [tokens_of(race(pair, p, cfg)) for p in prompts]
    results, errors = [None] * len(prompts), []

    def visitor(i: int):
        try:
            results[i] = tokens_of(app.decoders.sliced(race(pair, prompts[i], cfg)))
        except Exception:          # noqa: BLE001
            errors.append(traceback.format_exc(limit=3))
    threads = [threading.Thread(target=visitor, args=(i,), daemon=True) for i in range(len(prompts))]
    for t in threads:
        t.start()
    finished = joined(threads, args.part_limit)
    same = sum(r == s for r, s in zip(results, solo))
    ok = finished and not errors and same == len(prompts)
    print(f"O ten app-level races at once: {same}/{len(prompts)} equal to their solo runs, {len(errors)} errors, "
          f"finished {finished}: {'ok' if ok else 'FAILED'}")
    forget(pair)
    return {"ok": ok, "same": same, "errors": errors, "finished": finished}


# (P) a soak without empty_cache ---------------------------------------------------------------------

def part_p(args) -> dict:
    device = torch.device(args.device)
    pair = random_pair("tiny", args.device)
    cfg = SpecConfig(k=3, max_new_tokens=16, cuda_graphs=True)
    lengths = [20, 300, 600, 1100]             # prompts that need caches of 256, 512, 1024 and 2048 positions
    readings = []
    for i in range(args.soak_runs):
        ids = [5 + (j % 400) for j in range(lengths[i % len(lengths)])]
        list(speculate(pair, ids, cfg))
        if (i + 1) % 10 == 0:
            gc.collect()
            readings.append(torch.cuda.memory_reserved(device) if device.type == "cuda" else None)
    growth = None if readings[0] is None else readings[-1] - readings[0]
    ok = growth is None or growth <= 64 * 2**20
    print(f"P soak, {args.soak_runs} races over four capacities, no empty_cache: reserved after each ten "
          f"{readings}, growth {growth}: {'ok' if ok else 'FAILED'}")
    forget(pair)
    return {"ok": ok, "reserved": readings, "growth": growth, "pooled": len(graph_model.POOL._free)}
