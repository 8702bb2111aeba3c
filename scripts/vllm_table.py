"""The same held-out prompts through specviz's local engine and a vLLM server: acceptance and speed, one table.

    python scripts/vllm_table.py --spec-url http://127.0.0.1:8000/v1 --plain-url http://127.0.0.1:8001/v1 \
        --draft drafts/smollm2 [--prompts benchmarks/unseen-prompts.json] [--max-new-tokens 96] [--k 3]

Greedy, k = 3 (the server's num_speculative_tokens must match). Each prompt goes as the same token ids to both
(the chat ones through the target's chat template). Rows: the server (exported draft) with and without
speculation; the local engine with the shipped draft and with the exported draft, each raced against plain
decoding. Acceptance figures do not depend on the machine's load; the tokens/s columns need a quiet machine and
the two servers started the same way (both compiled, or both --eager). Prints a markdown table and JSON.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specviz.engine.loop.config import SpecConfig  # noqa: E402
from specviz.engine.loop.race import race  # noqa: E402
from specviz.models.chat import chat_ids  # noqa: E402
from specviz.models.loading import load_pair  # noqa: E402
from specviz.models.presets import get_preset, load_preset  # noqa: E402
from specviz.remote.watch import watch  # noqa: E402


def server_row(url: str, prompts: list[list[int]], max_new: int, speculative: bool) -> dict:
    rates, lengths, tps = [], [], []
    for ids in prompts:
        seen = list(watch(url, ids, max_tokens=max_new, speculative=speculative, timeout=600))[-1]
        tps.append(seen.tokens_per_s)
        if speculative:
            rates.append(seen.draft_acceptance_rate)
            lengths.append(seen.mean_acceptance_length)
    return {"acceptance": statistics.median(rates) if rates else None,
            "tokens_per_step": statistics.median(lengths) if lengths else None,
            "tokens_per_s": statistics.median(tps)}


def local_row(pair, prompts: list[list[int]], max_new: int, k: int) -> dict:
    rates, taus, spec_tps, base_tps = [], [], [], []
    for ids in prompts:
        dones = {e.lane: e for e in race(pair, ids, SpecConfig(k=k, max_new_tokens=max_new)) if e.kind == "done"}
        s, b = dones["spec"].stats, dones["base"].stats
        rates.append(s.draft_acceptance_rate)
        taus.append(s.mean_acceptance_length)
        spec_tps.append(s.tokens_per_s)
        base_tps.append(b.tokens_per_s)
    return {"acceptance": statistics.median(rates), "tokens_per_step": statistics.median(taus),
            "tokens_per_s": statistics.median(spec_tps), "plain_tokens_per_s": statistics.median(base_tps)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec-url", required=True)
    parser.add_argument("--plain-url", default=None)
    parser.add_argument("--draft", required=True, help="the exported draft folder the server uses")
    parser.add_argument("--prompts", default="benchmarks/unseen-prompts.json")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="the first N prompts only")
    args = parser.parse_args()
    shipped = load_preset("smollm2", device="cpu", dtype="float32")
    tok = shipped.tokenizer
    items = json.loads(Path(args.prompts).read_text())[:args.limit]
    prompts = [chat_ids(tok, p["text"]) if p.get("chat") else tok(p["text"]).input_ids for p in items]
    exported = load_pair(get_preset("smollm2").target, args.draft, device="cpu", dtype="float32")
    rows = {}

    def row(name, figures):
        rows[name] = figures
        print(f"{name}: {figures}", file=sys.stderr, flush=True)      # progress: a row as it is done
    row("vLLM server, exported draft", server_row(args.spec_url, prompts, args.max_new_tokens, True))
    if args.plain_url:
        row("vLLM server, no speculation", server_row(args.plain_url, prompts, args.max_new_tokens, False))
    row("specviz engine, shipped draft", local_row(shipped, prompts, args.max_new_tokens, args.k))
    row("specviz engine, exported draft", local_row(exported, prompts, args.max_new_tokens, args.k))
    print(f"{len(prompts)} prompts from {args.prompts}, greedy, k = {args.k}, {args.max_new_tokens} new tokens; medians")
    print("| source | draft acceptance rate | tokens per step | tokens/s | plain tokens/s |\n|---|---|---|---|---|")
    fmt = lambda x: "-" if x is None else f"{x:.2f}"      # noqa: E731
    for name, r in rows.items():
        print(f"| {name} | {fmt(r['acceptance'])} | {fmt(r['tokens_per_step'])} | {fmt(r['tokens_per_s'])} | "
              f"{fmt(r.get('plain_tokens_per_s'))} |")
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
