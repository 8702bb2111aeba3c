"""Restoring a compact shard's top-32 distributions by teacher forcing the target over its tokens.

A compact shard (shard_store.py) keeps only token ids. The distributions the draft learns from are
the target's, so they can be recomputed: one forward pass over prompt + continuation gives, at the
column before each generated token, the log-softmax generate_records recorded there. Sequences are
batched with left padding and positions counted from each row's first real token, as the
generation loop (onpolicy.py) had them, so only float rounding separates the two (a cached
step-by-step decode and one pass over the whole sequence sum in another order): about 1e-5 in fp32.
The target runs in fp32 here whatever precision the tokens were written under; a shard written under
bf16 autocast gets fp32 distributions over its bf16 tokens (the shard's `precision` still says how its
tokens were written).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from . import shard_store

KEEP = 32         # the target's top tokens kept per position, as generate_records keeps them


@torch.inference_mode()
def teacher_force(model, prompts: list[list[int]], generated: list[list[int]], keep: int = KEEP,
                  pad_id: int = 0, batch: int = 16) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each sequence, (top ids (g, keep) uint16, top log-probs (g, keep) float16) at its g generated tokens."""
    device = model.device
    decoder, head = model.get_decoder(), model.get_output_embeddings()
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]) + len(generated[i]))   # little padding
    out: list[tuple[np.ndarray, np.ndarray]] = [None] * len(prompts)
    for b in range(0, len(order), batch):
        rows = order[b:b + batch]
        # The hidden state at position t predicts token t + 1: the last generated token predicts nothing recorded.
        seqs = [list(prompts[i]) + list(generated[i][:-1]) for i in rows]
        longest = max(len(s) for s in seqs)
        ids = torch.full((len(rows), longest), pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), longest), dtype=torch.long)
        for r, seq in enumerate(seqs):               # left padding: every row ends at column -1
            ids[r, longest - len(seq):] = torch.tensor(seq, dtype=torch.long)
            mask[r, longest - len(seq):] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        hidden = decoder(input_ids=ids.to(device), attention_mask=mask.to(device),
                         position_ids=positions.to(device), use_cache=False).last_hidden_state   # (B, T, d)
        for r, i in enumerate(rows):
            g = len(generated[i])
            if g == 0:
                out[i] = (np.zeros((0, keep), np.uint16), np.zeros((0, keep), np.float16))
                continue
            # the last g columns sit at positions prompt_len - 1 ... prompt_len + g - 2: each predicts generated[j]
            logp = torch.log_softmax(head(hidden[r, longest - g:]).float(), dim=-1)   # (g, V), full softmax
            top_logp, top_ids = logp.topk(keep, dim=-1)
            out[i] = (top_ids.cpu().numpy().astype(np.uint16), top_logp.cpu().numpy().astype(np.float16))
    return out


def restore(compact_path: Path, model, batch: int = 16) -> tuple[dict, dict]:
    """(the full shard's arrays, as distill_data.save_shard writes them; a check) for a compact shard.
    The check counts, on a greedy shard, the stored tokens that are the teacher-forced argmax: all of
    them (up to ties) when the target is the one that wrote the shard."""
    c = shard_store.read(compact_path)
    prov = c["provenance"]
    prompts, generated = split(c["prompts"], c["prompt_lens"]), split(c["generated"], c["gen_lens"])
    tops = teacher_force(model, prompts, generated, batch=batch)
    top_ids = np.concatenate([t[0] for t in tops]) if tops else np.zeros((0, KEEP), np.uint16)
    top_logp = np.concatenate([t[1] for t in tops]) if tops else np.zeros((0, KEEP), np.float16)
    full = {"kind": prov["kind"], "temperature": prov["temperature"], "precision": prov["precision"],
            "prompt_lens": c["prompt_lens"], "gen_lens": c["gen_lens"],
            "prompts": c["prompts"].astype(np.int32), "generated": c["generated"].astype(np.int32),
            "top_ids": top_ids, "top_logp": top_logp, "restored_from": prov["name"]}
    check = {"positions": int(len(top_ids)), "greedy": prov["temperature"] == 0}
    if check["greedy"]:
        check["argmax_matches"] = int((c["generated"] == top_ids[:, 0].astype(np.int64)).sum())
    return full, check


def restore_file(compact_path: Path, model, out: Path, batch: int = 16) -> dict:
    """Restore a compact shard into a full shard file at `out` (atomically); returns restore's check."""
    full, check = restore(compact_path, model, batch)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp.npz")
    np.savez(tmp, **full)
    tmp.replace(out)
    return check


def split(flat: np.ndarray, lengths: np.ndarray) -> list[list[int]]:
    """A concatenation cut back into its pieces."""
    edges = np.concatenate([[0], np.cumsum(lengths)])
    return [flat[a:b].tolist() for a, b in zip(edges[:-1], edges[1:])]
