"""One forward pass over a proposal (a token tree; a chain is the width-one case), and keeping only the
accepted path in the KV cache, for every model-with-cache (eager, lean draft step, CUDA graphs).

A tree of n nodes is fed after the cached tokens in one pass (SpecInfer, Miao et al. 2024, "tree
attention"): each node sees the cached context and its own ancestors, never its siblings or their
subtrees, and sits at the position of its depth. A chain's mask is the causal one and its positions
are its slots, so a chain is fed with the model's ordinary `feed` (nothing of the tree is paid for);
anything else goes through the model's `feed_masked(tokens, positions, visible, keep)`, which takes the
positions and a boolean visibility (rows: the fed tokens; columns: the cached ones, then the fed ones).

After the verdict the cache holds every fed node in feeding order; `keep_path` keeps the accepted
path's entries right after the context (each model's `move_slots`: gather, then write; a path's slots
only ever move down) and crops the rest, so the cache is the one a chain of the same tokens leaves. A
chain's accepted path is a prefix: a crop, as before.
"""
from __future__ import annotations

import torch

from .transfer import to_device


def depth_totals(widths) -> list[int]:
    """Nodes of a static tree with `widths` candidates per depth, cut after each depth: w1, w1 + w1 w2,
    w1 + w1 w2 + w1 w2 w3, ... (the last is the whole tree's count: `tree_nodes`)."""
    totals, level, total = [], 1, 0
    for w in widths:
        level *= w                 # nodes at this depth: every node above has w children
        total += level
        totals.append(total)
    return totals


def tree_nodes(widths) -> int:
    """Nodes of a static tree with `widths` candidates per depth: w1 + w1 w2 + w1 w2 w3 + ..."""
    totals = depth_totals(widths)
    return totals[-1] if totals else 0


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


def additive_mask(visible: torch.Tensor, dtype: torch.dtype, device) -> torch.Tensor:
    """A boolean visibility -> the additive mask attention adds: 0 where visible, dtype's lowest elsewhere."""
    mask = torch.zeros(visible.shape, dtype=dtype)
    return mask.masked_fill_(~visible, torch.finfo(dtype).min).to(device)


def feed_proposal(lm, fresh: torch.Tensor, proposal, context: int) -> torch.Tensor:
    """The target's one pass of a round: the `fresh` committed tokens it lacks (after `context` cached
    ones), then every node of `proposal`; returns (n + 1, V) logits, row 0 after the last committed
    token (the root), row i + 1 after node i. A chain: the ordinary causal feed."""
    n = proposal.size
    tokens = torch.cat([fresh, proposal.tokens])
    if proposal.is_chain:
        return lm.feed(tokens, keep=n + 1)
    root = context + fresh.numel() - 1                   # the last committed token's position
    positions = torch.cat([torch.arange(context, root + 1), torch.tensor([root + d for d in proposal.depths])])
    visible = visibility(context, fresh.numel(), ancestry(proposal.parents))
    return lm.feed_masked(tokens, positions, visible, keep=n + 1, whole_context=True)


def keep_path(lm, base: int, slots: list[int]) -> None:
    """Keep the cache's first `base` positions and, right after them, the entries at `base + s` for
    each s in slots (increasing), dropping everything else."""
    if slots and slots != list(range(len(slots))):
        lm.move_slots(base, slots)
    lm.crop(base + len(slots))


def move_kv(pairs, base: int, slots: list[int]) -> None:
    """Move the entries at base + s (s in slots) to base, base + 1, ... in every (keys, values) tensor of
    `pairs`, whose position axis is -2."""
    source = None
    for held in pairs:
        if source is None:
            source = to_device(torch.tensor([base + s for s in slots]), held.device)
        held[..., base: base + len(slots), :] = held.index_select(-2, source)
