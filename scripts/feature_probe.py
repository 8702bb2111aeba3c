"""Would the target's hidden state help the draft's next guess? A probe that costs minutes, not GPU hours.

An EAGLE-style draft (models/feature_draft.py) is worth training only if the target's final hidden state
f_{q-1} (the vector its head read to choose token q) tells the draft something about token q + 1 that
the draft's own final hidden state h_q (after reading tokens up to q) does not. This asks that directly,
on the on-policy shards `train-models` wrote:

1. over each sequence, teacher-forced, keep h_q (the shipped draft), f_{q-1} (the target) and the label,
   the target's greedy token at q + 1 (the shard's top_ids[., 0]);
2. fit a residual MLP on top of the frozen draft, logits = head(h_q + MLP([h_q ; z(f_{q-1})])), its last
   layer started at zero (so step 0 is the draft itself), z standardizing each feature dimension;
3. fit the same MLP with the feature zeroed (the control: what the extra capacity alone buys);
4. report top-1 agreement with the target on validation shards for the draft, the control and the probe.

The difference between the probe and the control is what the feature adds at the round's first draft,
where the engine knows f_{q-1} exactly. (Only a lower bound for a draft that attends over the features of
every earlier position, as EAGLE's does; but f_{q-1} is the one that holds most of what the target knows.)

    python scripts/feature_probe.py --train-dir .specviz-train/smollm2-cont2 --train-dir .specviz-train/smollm2-cont3 \\
        --val-dir .specviz-train/smollm2-cont --val-dir .specviz-train/smollm2-cont2 --val-dir .specviz-train/smollm2-cont3
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from specviz.models.presets import load_preset  # noqa: E402
from specviz.training.distill import read_shards, split_shards  # noqa: E402


@torch.inference_mode()
def positions(pair, shards: list[Path]) -> dict[str, torch.Tensor]:
    """h_q, f_{q-1} and the head-row index of the target's token at q + 1 (-1: outside the draft's head)."""
    target, draft = pair.target.eval(), pair.draft.eval()
    rows = draft.lm_head.token_ids
    row_of = torch.full((max(pair.vocab_size, int(rows.max()) + 1),), -1, dtype=torch.long)
    row_of[rows] = torch.arange(len(rows))
    h, f, y = [], [], []
    for shard in shards:
        for seq in read_shards([shard]):
            ids = torch.from_numpy(seq.ids)[None]
            feats = target.model(input_ids=ids).last_hidden_state[0]
            own = draft.model(input_ids=ids).last_hidden_state[0]
            q = torch.arange(seq.prompt_len, len(seq.ids) - 1)     # generated positions with a next token
            h.append(own[q].half())
            f.append(feats[q - 1].half())
            y.append(row_of[torch.from_numpy(seq.top_ids[q + 1 - seq.prompt_len, 0])])
    return {"h": torch.cat(h), "f": torch.cat(f), "y": torch.cat(y)}


class Fusion(nn.Module):
    """h + MLP([h ; z]); the MLP's last layer starts at zero, so an untrained Fusion is the draft."""

    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.up, self.down = nn.Linear(2 * width, hidden), nn.Linear(hidden, width)
        nn.init.zeros_(self.down.weight)
        nn.init.zeros_(self.down.bias)

    def forward(self, h: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return h + self.down(nn.functional.silu(self.up(torch.cat([h, z], -1))))


def agreement(head: torch.Tensor, fusion: Fusion | None, h, z, y) -> float:
    with torch.no_grad():
        hits = 0
        for i in range(0, len(y), 8192):
            hidden = h[i:i + 8192] if fusion is None else fusion(h[i:i + 8192], z[i:i + 8192])
            hits += int(((hidden @ head.T).argmax(-1) == y[i:i + 8192]).sum())
        return hits / len(y)


def fit(head, train, val, use_feature: bool, hidden: int, epochs: int, lr: float, seed: int) -> float:
    torch.manual_seed(seed)
    mean, std = train["f"].mean(0), train["f"].std(0).clamp(min=1e-3)
    z = (lambda f: (f - mean) / std) if use_feature else (lambda f: torch.zeros_like(f))
    keep = train["y"] >= 0                       # a token outside the head cannot be learned
    h, zf, y = train["h"][keep], z(train["f"][keep]), train["y"][keep]
    fusion = Fusion(h.shape[1], hidden)
    opt = torch.optim.AdamW(fusion.parameters(), lr=lr, weight_decay=0.01)
    batch = 256
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=epochs * (len(y) // batch), pct_start=0.05)
    for _ in range(epochs):
        order = torch.randperm(len(y))
        for i in range(0, len(order) - batch + 1, batch):
            j = order[i:i + batch]
            loss = nn.functional.cross_entropy(fusion(h[j], zf[j]) @ head.T, y[j])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    return agreement(head, fusion, val["h"], z(val["f"]), val["y"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train-dir", type=Path, action="append", required=True, help="a train-models work folder")
    ap.add_argument("--val-dir", type=Path, action="append", required=True)
    ap.add_argument("--train-shards", type=int, default=10, help="training shards taken from each --train-dir")
    ap.add_argument("--val-shards", type=int, default=1, help="validation shards taken from each --val-dir")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, help="keep the extracted positions here (and reuse them)")
    args = ap.parse_args()
    torch.set_num_threads(2)

    def pick(dirs, n, which):
        return [s for d in dirs for s in split_shards(sorted((d / "onpolicy").glob("shard-*.npz")))[which][:n]]

    pair = load_preset("smollm2")
    t0 = time.monotonic()
    if args.cache and args.cache.exists():
        train, val = torch.load(args.cache)
    else:
        train = positions(pair, pick(args.train_dir, args.train_shards, 0))
        val = positions(pair, pick(args.val_dir, args.val_shards, 1))
        if args.cache:
            torch.save((train, val), args.cache)
    train = {k: v.float() if v.is_floating_point() else v for k, v in train.items()}
    val = {k: v.float() if v.is_floating_point() else v for k, v in val.items()}
    head = pair.draft.lm_head.proj.weight.detach().float()
    draft = agreement(head, None, val["h"], None, val["y"])
    control = fit(head, train, val, False, args.hidden, args.epochs, args.lr, args.seed)
    probe = fit(head, train, val, True, args.hidden, args.epochs, args.lr, args.seed)
    print(json.dumps({"train_positions": len(train["y"]), "val_positions": len(val["y"]),
                      "draft": round(draft, 4), "control_no_feature": round(control, 4),
                      "with_feature": round(probe, 4), "feature_adds": round(probe - control, 4),
                      "seconds": round(time.monotonic() - t0)}))


if __name__ == "__main__":
    main()
