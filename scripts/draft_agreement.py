"""Drafts' greedy agreement with the target on the store's validation shards, by kind and temperature.

    python scripts/draft_agreement.py assets/models/smollm2-draft /tmp/candidate --work-dir .specviz-train/s1

For each work folder's full shards (top-32 of the target at every generated token) that the store's split
holds out (shard_store.is_validation: never trained on by any draft the train stage made from the store),
grouped by kind (chat, code, prose) and decoding temperature, the share of generated positions where the
draft's argmax is the target's (distill.validate, the figure the train stage keeps its best step by).
Greedy chat shards (T = 0) are the in-distribution counterpart of the gate's held-out chat prompts: the
gap between the two says how much of a draft's chat figure is the prompts' distribution, not the draft.
`--by-source` splits the chat rows by where each request came from (self-instruct, the first template
families, the everyday family, the task family); `--all-shards` reads every shard, for drafts that never trained on the folders.
`--by-confidence` splits each row by the target's top-1 probability at the position (how sure the
target was), with the share of positions in each bin: where the target is torn, no draft agrees often.
A count, the same on any machine (fp32 on the CPU).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specviz.training import shard_store  # noqa: E402
from specviz.training.distill import agreement_by_confidence, head_index, read_shards, validate  # noqa: E402

CONFIDENCE_EDGES = [0.0, 0.3, 0.5, 0.7, 0.9, 1.0]


def shard_groups(work_dirs: list[str], every: bool = False) -> dict[tuple[str, float], list[Path]]:
    """The work folders' full shards that the store's split holds out (every one of them with `every`),
    by (kind, temperature)."""
    groups = defaultdict(list)
    for work in map(Path, work_dirs):
        sitting = shard_store.sitting_id(work)
        for path in shard_store.work_shards(work):
            if every or shard_store.is_validation(shard_store.store_name(sitting, shard_store.work_index(path))):
                with np.load(path) as z:
                    groups[(str(z["kind"]), float(z["temperature"]))].append(path)
    return dict(sorted(groups.items()))


def chat_sources(work_dirs: list[str], tokenizer) -> dict[tuple[int, ...], str]:
    """Each planned chat prompt of the work folders (as the token ids a shard holds) -> where its request
    came from (draft_prompts.request_source)."""
    from specviz.training.distill_data import prompt_ids
    from specviz.training.draft_prompts import PromptSpec, request_source

    sources = {}
    for work in map(Path, work_dirs):
        for kind, text in json.loads((work / "prompts.json").read_text()):
            if kind == "chat":
                sources[tuple(prompt_ids(tokenizer, PromptSpec(kind, text)))] = request_source(text)
    return sources


def split_by_source(seqs: dict[str, list], sources: dict[tuple[int, ...], str]) -> dict[str, list]:
    """Chat rows split by where each sequence's request came from ("chat T=0" -> "chat/everyday T=0", ...);
    other kinds as they are. A prompt no work folder planned counts as "unknown"."""
    out = defaultdict(list)
    for key, rows in seqs.items():
        kind, temperature = key.split(" ", 1)
        for s in rows:
            source = sources.get(tuple(int(t) for t in s.ids[:s.prompt_len]), "unknown") if kind == "chat" else None
            out[f"{kind}/{source} {temperature}" if source else key].append(s)
    return dict(sorted(out.items()))


def group_of(key: str) -> str:
    """The (kind, temperature) row a key belongs to: "chat/everyday T=0" -> "chat T=0"."""
    head, temperature = key.split(" ", 1)
    return head.split("/")[0] + " " + temperature


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("drafts", nargs="+", help="draft folders for SmolLM2-135M-Instruct (borrowed head)")
    ap.add_argument("--work-dir", action="append", required=True, help="a data stage's work folder (repeatable)")
    ap.add_argument("--out", default=None, help="also write the table as JSON here")
    ap.add_argument("--all-shards", action="store_true",
                    help="every full shard of the work folders, not only the store's held-out ones (for drafts "
                         "that never trained on those folders)")
    ap.add_argument("--by-source", action="store_true",
                    help="split chat rows by where the request came from: self-instruct, the first template "
                         "families, the everyday family, the task family")
    ap.add_argument("--by-confidence", action="store_true",
                    help="also split each row by the target's top-1 probability (" + ", ".join(map(str, CONFIDENCE_EDGES)) + ")")
    args = ap.parse_args(argv)
    from transformers import AutoModelForCausalLM

    from specviz.training.smollm2_draft import load_target

    groups = shard_groups(args.work_dir, every=args.all_shards)
    if not groups:
        print(("no shards in " if args.all_shards else "no validation shards in ") + ", ".join(args.work_dir),
              file=sys.stderr)
        return 2
    _, tokenizer, target = load_target("cpu")
    torch.set_grad_enabled(False)
    seqs = {f"{kind} T={t:g}": read_shards(paths) for (kind, t), paths in groups.items()}    # read once
    shards = {key: len(paths) for key, paths in zip(seqs, groups.values())}
    if args.by_source:
        seqs = split_by_source(seqs, chat_sources(args.work_dir, tokenizer))
    rows = {key: {"shards": shards[group_of(key)], "sequences": len(rows_), "tokens": int(sum(len(s.top_ids) for s in rows_)), "greedy_agreement": {}}
            for key, rows_ in seqs.items()}
    for name in args.drafts:
        draft = AutoModelForCausalLM.from_pretrained(name, dtype=torch.float32).borrow_from(target)
        index = head_index(draft)
        for key in rows:
            if args.by_confidence:      # one pass: the bins' counts pool to validate()'s figure
                bins = agreement_by_confidence(draft, seqs[key], index, CONFIDENCE_EDGES)
                rows[key].setdefault("by_confidence", {})[name] = bins
                agreement = sum(b["agreed"] for b in bins) / max(1, sum(b["positions"] for b in bins))
            else:
                agreement = validate(draft, seqs[key], index)["greedy_agreement"]
            rows[key]["greedy_agreement"][name] = round(agreement, 4)
    width = max(len(n) for n in args.drafts)
    print(f"{'shards':<44}" + "".join(f"{n:>{width + 2}}" for n in args.drafts))
    for key, row in rows.items():
        print(f"{key + ' (' + str(row['shards']) + ', ' + str(row['tokens']) + ' tok)':<44}"
              + "".join(f"{row['greedy_agreement'][n]:>{width + 2}.3f}" for n in args.drafts))
    if args.by_confidence:
        print("\nby the target's top-1 probability p: share of positions, then each draft's agreement")
        for key, row in rows.items():
            for b, edge in enumerate(zip(CONFIDENCE_EDGES, CONFIDENCE_EDGES[1:])):
                bins = [row["by_confidence"][n][b] for n in args.drafts]
                share = bins[0]["positions"] / max(1, row["tokens"])
                print(f"{key + f' p {edge[0]:g}-{edge[1]:g}':<36}{share:>7.1%} "
                      + "".join(f"{'-' if b_['greedy_agreement'] is None else format(b_['greedy_agreement'], '.3f'):>{width + 2}}"
                                for b_ in bins))
    if args.out:
        Path(args.out).write_text(json.dumps({"work_dirs": args.work_dir, "all_shards": args.all_shards,
                                              "by_source": args.by_source, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
