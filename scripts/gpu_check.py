"""What a GPU machine checks of the CUDA-graph path (issue 23), in one command:

    python scripts/gpu_check.py --out gpu_check.json

(a) identity: fp32 greedy output of the bundled pair equals generate()'s, k = 1, 3, 5, 8, both
    lanes, on the path chosen automatically (it must say "CUDA graphs");
(b) chi-square: the joint distribution of the first two sampled tokens (an 8-token-vocabulary
    Llama pair, as tests/test_distribution.py) against the target's exact one, in bf16 and fp32;
    with k = 1 and 2 the second token often comes from a replayed verify graph;
(c) the speed table (specviz/bench/paths.py): random Qwen2.5-0.5B/7B-shaped pair, forced
    acceptance 0.8, k = 5, 128 new tokens: eager vs CUDA graphs (vs torch.compile with
    --with-compile), with the issue's figures beside it.
Exit status 1 if (a) or (b) fails; (c) only reports. `--dry-run` runs it all on the CPU with tiny
models and the eager capturer (tests/test_cuda_graphs.py runs that), to show it does not crash.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from tokenizers import Tokenizer, models  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

from specviz import SpecConfig, decode_baseline, speculate  # noqa: E402
from specviz.bench.paths import compare_paths, path_table  # noqa: E402
from specviz.bench.prompts import FREE_TEXT, GROUNDED  # noqa: E402
from specviz.bench.random_pair import random_pair  # noqa: E402
from specviz.bench.runner import hf_generate  # noqa: E402
from specviz.models.loading import load_pair, make_pair  # noqa: E402

from specviz.engine.analysis.lossless import chi_square_pvalue  # noqa: E402

FIGURES = {"ratio": 2.2, "c": 0.12, "bandwidth_fraction": 0.75, "first_use_s": 20.0}   # issue 23's targets
V = 8                                                        # the chi-square pair's vocabulary


def identity(device: str, ks: list[int], new_tokens: int, force: bool) -> list[dict]:
    pair = load_pair(device=device, dtype="float32")
    prompts = [GROUNDED[0], FREE_TEXT[0], "def fibonacci(n):\n    "]
    strip = lambda t: t[:-1] if t and t[-1] in pair.eos_token_ids else t  # noqa: E731 - EOS shown or not
    rows = []
    for k in ks:
        for text in prompts:
            ids = pair.tokenizer(text)["input_ids"]
            cfg = SpecConfig(k=k, max_new_tokens=new_tokens, cuda_graphs=True if force else None)
            ref = strip(hf_generate(pair, ids, cfg))
            spec = list(speculate(pair, ids, cfg))[-1]
            plain = list(decode_baseline(pair, ids, cfg))[-1]
            ok = strip(list(spec.token_ids)) == ref == strip(list(plain.token_ids))
            rows.append({"k": k, "prompt": text[:30], "same": ok, "path": spec.stats.decode_path,
                         "plain_path": plain.stats.decode_path, "tokens": len(spec.token_ids)})
            print(f"identity k={k}: {'same' if ok else 'DIFFERENT'} ({spec.stats.decode_path}, "
                  f"{len(spec.token_ids)} tokens) {text[:30]!r}")
    return rows


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


def chi_square(device: str, samples: int, force: bool) -> list[dict]:
    rows, prompt = [], [1, 2, 3, 1, 2]
    for dtype in (torch.bfloat16, torch.float32):
        pair = small_vocab_pair(device, dtype)
        expected = exact_joint(pair.target, prompt, device)
        for k in (1, 2):
            counts, paths = [0] * (V * V), set()
            for seed in range(samples):
                cfg = SpecConfig(k=k, temperature=1.0, max_new_tokens=3, seed=seed, cuda_graphs=True if force else None)
                done = list(speculate(pair, prompt, cfg))[-1]
                counts[done.token_ids[0] * V + done.token_ids[1]] += 1
                paths.add(done.stats.decode_path)
            p = chi_square_pvalue(counts, expected)
            rows.append({"dtype": str(dtype), "k": k, "samples": samples, "p_value": p, "paths": sorted(paths)})
            print(f"chi-square {dtype} k={k}: p = {p:.4f} over {samples} runs ({', '.join(sorted(paths))})"
                  f"{'' if p > 1e-3 else '  FAILED (p <= 0.001)'}")
    return rows


def bench(args) -> list[dict]:
    pair = random_pair(args.pair, args.device)
    vocab = pair.vocab_size
    ids = [(i * 7919) % vocab for i in range(1, 65)]           # a 64-token prompt (random weights: any will do)
    cfg = SpecConfig(k=args.k, max_new_tokens=args.max_new_tokens, forced_acceptance=0.8)
    paths = ["eager", "CUDA graphs"] + (["torch.compile"] if args.with_compile else [])
    rows = compare_paths(pair, ids, cfg, paths, args.repeats, bandwidth=None)
    print(f"\n{pair.target_name} <- {pair.draft_name}, forced acceptance 0.8 (NOT LOSSLESS: timing only), "
          f"k = {args.k}, {args.max_new_tokens} new tokens, {args.repeats} repeats (median)")
    print(path_table(rows))
    graphs = next(r for r in rows if r["path"] == "CUDA graphs")
    print("issue 23 figures, CUDA-graph path: " + ", ".join(
        f"{name} {graphs[name]:.3g} ({'meets' if _meets(name, graphs[name]) else 'short of'} {target})"
        for name, target in FIGURES.items() if graphs[name] is not None))
    return rows


def _meets(name: str, value: float) -> bool:
    return value >= FIGURES[name] if name in ("ratio", "bandwidth_fraction") else value <= FIGURES[name]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="on the CPU, tiny models, few samples: checks that it runs")
    ap.add_argument("--device", default=None, help="default: cuda (cpu with --dry-run)")
    ap.add_argument("--parts", default="identity,chi-square,bench")
    ap.add_argument("--samples", type=int, default=2000, help="chi-square runs per dtype and k")
    ap.add_argument("--pair", default="qwen2.5-0.5b:7b", help="random pair shapes for the speed table")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--with-compile", action="store_true", help="also time the torch.compile path (minutes)")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args()
    if args.dry_run:
        args.device = args.device or "cpu"
        args.samples, args.pair, args.max_new_tokens, args.repeats = min(args.samples, 150), "tiny", 16, 1
    args.device = args.device or "cuda"
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device here: run with --dry-run for the CPU check")
        return 2
    force = args.device != "cuda"              # off CUDA the graph path must be asked for (eager capturer)
    parts, result = args.parts.split(","), {"device": args.device,
                                            "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None}
    if "identity" in parts:
        result["identity"] = identity(args.device, [1, 3, 5, 8], 32 if args.dry_run else 64, force)
    if "chi-square" in parts:
        result["chi_square"] = chi_square(args.device, args.samples, force)
    if "bench" in parts:
        result["bench"] = bench(args)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    failed = [r for r in result.get("identity", []) if not r["same"]] + \
             [r for r in result.get("chi_square", []) if r["p_value"] <= 1e-3]
    wrong_path = args.device == "cuda" and any(r["path"] != "CUDA graphs" for r in result.get("identity", []))
    print(f"\n{'FAILED' if failed or wrong_path else 'ok'}: identity and chi-square"
          + (" (the automatic path was not CUDA graphs)" if wrong_path else ""))
    return 1 if failed or wrong_path else 0


if __name__ == "__main__":
    sys.exit(main())
