"""The target's final hidden states over the on-policy shards, for training a feature draft.

A feature draft (feature_draft.py, EAGLE-style) reads, besides the token, the target's
final hidden state at the position before it: the vector the target's output head turns into
its next-token distribution. Training needs that vector at every position of every training
sequence. The target is run once per shard over whole sequences (teacher forcing: no decoding)
and the vectors are stored next to the shard, `features/shard-NNNN.npy`, float16, one row per
token of each sequence (prompt and generated), sequences in the shard's order.

The pass runs in the target's dtype. On this project's 2-core CPU that is fp32: bf16 measured
slower there (97 against 216 tokens/s for the same batch), and fp32 features are exactly what
the draft meets in the engine. About 450 tokens/s: the features of a shard take 3-4 minutes.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from .distill import Sequence, read_shards


def feature_path(work: Path, shard: Path) -> Path:
    return work / "features" / (shard.stem + ".npy")


@torch.inference_mode()
def sequence_features(target, seqs: list[Sequence], max_tokens: int = 4096) -> list[np.ndarray]:
    """Final hidden states (len(ids), d) float16 of each sequence, batched by length (right padding)."""
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i].ids))
    out: list[np.ndarray | None] = [None] * len(seqs)
    device = target.device
    i = 0
    while i < len(order):
        longest = len(seqs[order[min(len(order) - 1, i)]].ids)
        n = max(1, max_tokens // longest)
        group = order[i:i + n]
        longest = max(len(seqs[j].ids) for j in group)
        ids = torch.zeros((len(group), longest), dtype=torch.long)
        mask = torch.zeros((len(group), longest), dtype=torch.long)
        for r, j in enumerate(group):
            ids[r, :len(seqs[j].ids)] = torch.from_numpy(seqs[j].ids)
            mask[r, :len(seqs[j].ids)] = 1
        hidden = target.model(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state
        hidden = hidden.to(torch.float16).cpu().numpy()
        for r, j in enumerate(group):
            out[j] = hidden[r, :len(seqs[j].ids)]
        i += len(group)
    return out  # type: ignore[return-value]


def extract(work: Path, target, shards: list[Path], log: Callable[[str], None], budget_s: float = float("inf")) -> int:
    """Write the features of each shard that has none yet (atomic per shard); returns shards written."""
    (work / "features").mkdir(exist_ok=True)
    written, started = 0, time.monotonic()
    for shard in shards:
        path = feature_path(work, shard)
        if path.exists():
            continue
        if time.monotonic() - started > budget_s:
            break
        t0 = time.monotonic()
        seqs = read_shards([shard])
        feats = np.concatenate(sequence_features(target, seqs))
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, feats)
        tmp.replace(path)
        written += 1
        log(f"features {shard.stem}: {feats.shape[0]:,} tokens in {time.monotonic() - t0:.0f} s")
    return written


def read_features(work: Path, shard: Path, seqs: list[Sequence]) -> list[np.ndarray]:
    """The stored features of shard, split per sequence (memory-mapped)."""
    feats = np.load(feature_path(work, shard), mmap_mode="r")
    out, offset = [], 0
    for s in seqs:
        out.append(feats[offset:offset + len(s.ids)])
        offset += len(s.ids)
    if offset != feats.shape[0]:
        raise RuntimeError(f"features of {shard.name} do not match its sequences ({feats.shape[0]} rows, {offset} tokens)")
    return out
