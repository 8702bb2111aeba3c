"""One forward pass over a token tree, and keeping only the accepted path in the KV cache.

A tree of n nodes is fed after the cached tokens in one pass (SpecInfer, Miao et al. 2024, "tree
attention"): each node sees the cached context and its own ancestors, never its siblings or their
subtrees, and sits at the position of its depth. transformers (5.x) takes such a pass as it is: a 4-D
`attention_mask` of shape (1, 1, new tokens, cached + new tokens) is returned unchanged by
`create_causal_mask` (masking_utils: "If the mask is already 4D, simply return as-is") and added to
the attention scores by the eager and SDPA kernels alike, so an additive mask (0 where a key is
visible, the dtype's lowest value elsewhere) is used; `position_ids` are passed explicitly.

After the verdict the cache holds every node in feeding order; `keep_path` moves the accepted
path's keys and values into the slots right after the context (gather, then write: a path's slots
only ever move down) and crops the rest, so the cache is the one a chain of the same tokens leaves.
Works on `CachedModel` (the eager model with its cache): its `model`, `cache` and `vocab_size`.
"""
from __future__ import annotations

import torch


def ancestry(parents: list[int]) -> torch.Tensor:
    """(n, n) bool: row i marks node i and its ancestors. Parents come before children (-1: the root)."""
    n = len(parents)
    anc = torch.zeros(n, n, dtype=torch.bool)
    for i, parent in enumerate(parents):
        if parent >= 0:
            anc[i] = anc[parent]
        anc[i, i] = True
    return anc


def visibility(context: int, fresh: int, anc_rows: torch.Tensor) -> torch.Tensor:
    """Which keys each new row may see, (fresh + r, context + fresh + c) bool, for a pass that feeds
    `fresh` ordinary tokens (causal, after `context` cached ones) and then r tree rows whose ancestry
    over the c tree slots present (cached before them, or fed in this pass) is `anc_rows` (r, c)."""
    r, c = anc_rows.shape
    seen = context + fresh
    rows = torch.zeros(fresh + r, seen + c, dtype=torch.bool)
    if fresh:
        rows[:fresh, :seen] = torch.ones(fresh, seen, dtype=torch.bool).tril(context)
    rows[fresh:, :seen] = True                 # every node sees the whole context
    rows[fresh:, seen:] = anc_rows             # and its ancestors and itself
    return rows


def masked_feed(lm, tokens: torch.Tensor, positions: torch.Tensor, visible: torch.Tensor,
                keep: int) -> torch.Tensor:
    """Feed tokens (m,) at positions (m,) after lm's cache, row i attending where visible[i] (m, cached + m);
    return the last `keep` rows' logits (keep, V) fp32, cut to the shared vocabulary."""
    model = lm.model
    dtype = model.get_input_embeddings().weight.dtype
    mask = torch.zeros(visible.shape, dtype=dtype)
    mask.masked_fill_(~visible, torch.finfo(dtype).min)
    out = model(input_ids=tokens.view(1, -1).to(lm.device), attention_mask=mask[None, None].to(lm.device),
                position_ids=positions.view(1, -1).to(lm.device), past_key_values=lm.cache, use_cache=True,
                logits_to_keep=keep)
    lm.forwards += 1
    return out.logits[0, :, : lm.vocab_size].float()


def keep_path(lm, base: int, slots: list[int]) -> None:
    """Keep the cache's first `base` positions and, right after them, the entries at `base + s` for
    each s in slots (increasing), dropping everything else."""
    if slots and slots != list(range(len(slots))):
        source = torch.tensor([base + s for s in slots], device=lm.device)
        for layer in lm.cache.layers:
            for name in ("keys", "values"):
                held = getattr(layer, name)
                held[..., base: base + len(slots), :] = held.index_select(-2, source)
    lm.crop(base + len(slots))
