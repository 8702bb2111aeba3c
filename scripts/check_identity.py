"""Greedy speculative output vs transformers' generate(), token for token, on a prompt file.

    python scripts/check_identity.py --preset smollm2 --prompts benchmarks/smollm2-prompts.json --k 3
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specviz import SpecConfig, load_preset, speculate  # noqa: E402
from specviz.bench.prompts import load_prompts, prompt_ids  # noqa: E402
from specviz.bench.runner import hf_generate  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="smollm2")
    ap.add_argument("--prompts", default="benchmarks/smollm2-prompts.json")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--confidence-stop", type=float, default=0.0, help="SpecConfig.confidence_stop (0 = off)")
    args = ap.parse_args()
    pair = load_preset(args.preset)
    same = 0
    prompts = load_prompts(args.prompts)
    for p in prompts:
        ids = prompt_ids(pair, p)
        cfg = SpecConfig(k=args.k, max_new_tokens=args.max_new_tokens, confidence_stop=args.confidence_stop)
        done = list(speculate(pair, ids, cfg))[-1]
        ref = hf_generate(pair, ids, cfg)
        eos = set(pair.eos_token_ids)
        strip = lambda t: t[:-1] if t and t[-1] in eos else t  # noqa: E731 - EOS shown or not, same text
        ok = strip(list(done.token_ids)) == strip(ref)
        same += ok
        print(f"{'same' if ok else 'DIFFERENT'}  {p['kind']:5s} {len(done.token_ids):4d} tokens  "
              f"a={'-' if done.stats.acceptance_rate is None else format(done.stats.acceptance_rate, '.2f')}  "
              f"{p['text'][:50]!r}")
    print(f"{same}/{len(prompts)} prompts token-identical to generate()")
    return 0 if same == len(prompts) else 1


if __name__ == "__main__":
    sys.exit(main())
