"""Training the SmolLM2 feature draft (feature_draft.py) on the on-policy shards and their features.

Same data and loss as distill.py (cross-entropy against the target's recorded top-32
distribution over the head's tokens, at every position the target generated), with two changes:
- the draft reads the target's features (target_features.py), so a batch carries them;
- the loss is taken at every draft step of a round (`steps`, training-time test): step s at
  position p predicts token p+1 having fed its own hidden states for steps 2..s, weighted
  STEP_DECAY**(s-1) as later steps matter less (they are only reached when earlier ones pass).
Validation reports each step's greedy agreement with the target: a1 (step 1) and a2 (step 2,
given step 1's token was the target's), the acceptance rates of a greedy round's two drafts.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from .distill import Sequence, collate, head_index, read_shards
from ..models.feature_draft import FeatureDraftForCausalLM
from .feature_unroll import unrolled_hidden
from .target_features import feature_path, read_features
from .trainer import TrainSettings, train_steps

STEP_DECAY = 0.8
# W starts at zero and must grow to matter (entries ~ 1/sqrt(d)), while the layers start trained
# and only need to adapt: with one learning rate for both, W barely moves, and with the layers' rate
# raised the training loss rises and acceptance falls (benchmarks/history/notes-2026-11.md). So the
# layers get a small lr (the plain draft ended its schedule at 5e-5) and W this many times more.
FEATURE_LR_SCALE = 10.0


@dataclass
class Example:
    seq: Sequence
    features: np.ndarray     # (len(seq.ids), d) float16, the target's final hidden states


def read_examples(work: Path, shards: list[Path]) -> list[Example]:
    """The sequences of every shard whose features have been extracted."""
    out = []
    for shard in shards:
        if feature_path(work, shard).exists():
            seqs = read_shards([shard])
            out += [Example(s, f) for s, f in zip(seqs, read_features(work, shard, seqs))]
    return out


def collate_examples(examples: list[Example], sub_index: torch.Tensor):
    ids, mask, rows, cols, teacher = collate([e.seq for e in examples], sub_index)
    feats = torch.zeros((*ids.shape, examples[0].features.shape[1]), dtype=torch.float32)
    for r, e in enumerate(examples):
        feats[r, :len(e.seq.ids)] = torch.from_numpy(np.asarray(e.features, dtype=np.float32))
    return ids, feats, rows, cols, teacher


def loss_and_metrics(draft: FeatureDraftForCausalLM, ids, feats, rows, cols, teacher, steps: int):
    device = draft.device                                  # batches are built on the CPU
    ids, feats, rows, cols = (t.to(device, non_blocking=True) for t in (ids, feats, rows, cols))
    top, probs = (t.to(device, non_blocking=True) for t in teacher)   # (N, K) head indices (-1: outside), p
    hidden = unrolled_hidden(draft, ids, feats, steps)     # (B, steps, T, d)
    inside = top >= 0
    total, weight, metrics = 0.0, 0.0, {"tokens": int(rows.numel())}
    agree_prev = None
    for s in range(steps):
        valid = (cols - s) >= 1            # the round's newest committed position L = p - s is past the start
        logq = F.log_softmax(draft.lm_head.subset_logits(hidden[rows, s, cols]).float(), dim=-1)
        logq_top = logq.gather(1, top.clamp(min=0)) * inside
        # Cross-entropy against the recorded p: -sum_k p_k log q_k = KL(p || q) + H(p) on the head's tokens.
        ce = -(probs * logq_top).sum(-1)
        w = STEP_DECAY ** s
        total = total + w * (ce * valid).sum() / valid.sum().clamp(min=1)
        weight += w
        with torch.no_grad():
            agree = (logq.argmax(-1) == top[:, 0]) & inside[:, 0] & valid
            if agree_prev is None:
                metrics["a1"] = agree.float().sum().item() / max(1, int(valid.sum()))
            else:
                # step s+1 at p follows step s at p - 1 (same round): a2 = P(agree at step 2 | step 1 agreed).
                prev = torch.zeros_like(agree)
                same_row = torch.zeros_like(agree)
                prev[1:] = agree_prev[:-1]
                same_row[1:] = (rows[1:] == rows[:-1]) & (cols[1:] == cols[:-1] + 1)
                cond = prev & same_row & valid
                metrics[f"a{s + 1}"] = (agree & cond).float().sum().item() / max(1, int(cond.sum()))
            agree_prev = agree
    return total / weight, metrics


@torch.no_grad()
def validate(draft, examples: list[Example], sub_index: torch.Tensor, steps: int, batch_size: int = 16) -> dict:
    draft.eval()
    sums: dict[str, float] = {}
    count = 0
    ordered = sorted(examples, key=lambda e: len(e.seq.ids))
    for i in range(0, len(ordered), batch_size):
        batch = collate_examples(ordered[i:i + batch_size], sub_index)
        loss, m = loss_and_metrics(draft, *batch, steps=steps)
        n = m.pop("tokens")
        for k, v in {"loss": loss.item(), **m}.items():
            sums[k] = sums.get(k, 0.0) + v * n
        count += n
    draft.train()
    return {k: v / max(1, count) for k, v in sums.items()}


def train_feature_draft(draft: FeatureDraftForCausalLM, train: list[Example], val: list[Example], steps: int,
                        settings: TrainSettings, checkpoint: str, log: Callable[[str], None] = print) -> dict:
    """Train the draft's own layers and W until the time budget is spent; resumable from `checkpoint`."""
    sub_index = head_index(draft)
    params = [p for n, p in draft.named_parameters() if not n.startswith(("model.embed_tokens", "lm_head"))]
    keep = set(params)
    for p in draft.parameters():
        p.requires_grad_(p in keep)
    proj = draft.feature_proj.weight
    groups = [{"params": [p for p in params if p is not proj], "lr_scale": 1.0},
              {"params": [proj], "lr_scale": FEATURE_LR_SCALE}]

    def step_loss(gen: torch.Generator):
        pool = torch.randint(0, len(train), (settings.batch_size * 4,), generator=gen).tolist()
        pool.sort(key=lambda i: len(train[i].seq.ids))    # similar lengths together: little padding
        start = int(torch.randint(0, 4, (1,), generator=gen)) * settings.batch_size
        batch = collate_examples([train[i] for i in pool[start:start + settings.batch_size]], sub_index)
        return loss_and_metrics(draft, *batch, steps=steps)

    return train_steps(draft, params, groups, settings, checkpoint, step_loss,
                       lambda: validate(draft, val, sub_index, steps), log, device=str(draft.device))
