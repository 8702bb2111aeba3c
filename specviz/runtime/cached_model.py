"""A causal LM together with its KV cache: feed new tokens, crop after a rejection.

The cache holds the keys/values of the first `length` tokens of the committed sequence, so
no prefix is ever recomputed. Rollback after a rejection is `crop(length)`, which drops
the rejected drafts' entries (transformers 5: `DynamicCache.crop` takes minus the number
of tokens to drop). The layers append in place (kv_buffer.py) rather than re-concatenating.
Logits are cut to the pair's shared vocabulary (padding rows dropped).

`ModelWithCache` is the interface the decoders use; `CachedModel` (eager, dynamic cache), the
GPU path's `GraphCachedModel` (graph_model.py: static cache, CUDA graphs, chosen on CUDA) and
the fast path's `StaticCachedModel` (static_model.py: torch.compile) implement it.
"""
from __future__ import annotations

from typing import Protocol

import torch

from ..errors import ConfigError
from .kv_buffer import buffered_cache
from .transfer import to_device
from .tree_pass import additive_mask, depth_totals, move_kv, tree_nodes


class ModelWithCache(Protocol):
    device: torch.device
    forwards: int                       # forward passes run so far

    @property
    def length(self) -> int: ...        # tokens of the sequence held in the cache

    def feed(self, tokens: torch.Tensor, keep: int) -> torch.Tensor: ...

    # A token tree's pass (tree_pass.py): tokens (m,) at positions (m,), row i attending where
    # visible[i] (m, cached + m) is True; the last `keep` rows' logits.
    def feed_masked(self, tokens: torch.Tensor, positions: torch.Tensor, visible: torch.Tensor,
                    keep: int, whole_context: bool = False) -> torch.Tensor: ...

    def move_slots(self, base: int, slots: list[int]) -> None: ...   # entries base + s -> base, base + 1, ...

    def crop(self, length: int) -> None: ...

    def release(self) -> None: ...


class CachedModel:
    def __init__(self, model, vocab_size: int, keep_hidden: bool = False, decode_path: str = "eager"):
        self.decode_path = decode_path      # "eager", or why the graph path was not taken ("eager (...)")
        self.model = model
        self.vocab_size = vocab_size
        self.cache = buffered_cache(model.config)
        self.device = model.get_input_embeddings().weight.device
        self.forwards = 0
        # For a feature draft: keep the final hidden states (post norm) of the last tokens fed.
        self.keep_hidden = keep_hidden
        self.hidden: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return self.cache.get_seq_length()

    def feed(self, tokens: torch.Tensor, keep: int) -> torch.Tensor:
        """Run tokens (m,) after the cached ones; return the last `keep` positions' logits (keep, V) fp32."""
        if self.keep_hidden:
            return self._feed_keeping_hidden(tokens, keep)
        out = self.model(input_ids=tokens.view(1, -1).to(self.device), past_key_values=self.cache,
                         use_cache=True, logits_to_keep=keep)
        self.forwards += 1
        return out.logits[0, :, : self.vocab_size].float()

    def _feed_keeping_hidden(self, tokens: torch.Tensor, keep: int) -> torch.Tensor:
        # The same computation as the causal LM's forward (its decoder, then its output head on the
        # last `keep` positions), with the decoder's output kept: (m, d) in self.hidden.
        hidden = self.model.get_decoder()(input_ids=tokens.view(1, -1).to(self.device), past_key_values=self.cache,
                                          use_cache=True).last_hidden_state
        self.forwards += 1
        self.hidden = hidden[0]
        logits = self.model.get_output_embeddings()(hidden[:, -keep:])
        return logits[0, :, : self.vocab_size].float()

    def feed_masked(self, tokens: torch.Tensor, positions: torch.Tensor, visible: torch.Tensor,
                    keep: int, whole_context: bool = False) -> torch.Tensor:
        """A tree's pass: transformers (5.x) takes a 4-D additive `attention_mask` of shape (1, 1, new,
        cached + new) as given (masking_utils' `create_causal_mask` returns a 4-D mask unchanged) and
        adds it to the scores in the eager and SDPA kernels alike; `position_ids` are passed explicitly."""
        dtype = self.model.get_input_embeddings().weight.dtype
        out = self.model(input_ids=tokens.view(1, -1).to(self.device),
                         attention_mask=additive_mask(visible, dtype, self.device)[None, None],
                         position_ids=positions.view(1, -1).to(self.device), past_key_values=self.cache,
                         use_cache=True, logits_to_keep=keep)
        self.forwards += 1
        return out.logits[0, :, : self.vocab_size].float()

    def move_slots(self, base: int, slots: list[int]) -> None:
        move_kv([getattr(layer, name) for layer in self.cache.layers for name in ("keys", "values")], base, slots)

    def crop(self, length: int) -> None:
        """Keep only the first `length` tokens in the cache."""
        drop = self.length - length
        if drop > 0:
            self.cache.crop(-drop)

    def release(self) -> None:
        """Nothing to give back: the cache goes with this object."""


def uncached(lm: ModelWithCache, ids: list[int]) -> torch.Tensor:
    """The tokens of the committed sequence `ids` that `lm`'s cache does not hold yet, on its device
    (copied without a host sync: to_device)."""
    return to_device(torch.tensor(ids[lm.length:], dtype=torch.long), lm.device)


def positions_needed(out, cfg) -> int:
    """Cache positions a run can fill: the prompt, every new token, and a round's extra drafts (a
    tree's nodes)."""
    tree = getattr(cfg, "tree", None)
    if tree is None:
        extra = cfg.k_max if cfg.adaptive_k else cfg.k
    else:                                   # a tree's nodes, or at most its budget
        extra = min(tree_nodes(tree), cfg.tree_budget) if cfg.tree_budget else tree_nodes(tree)
    return out.prompt_len + cfg.max_new_tokens + extra + 1


def cached_model(model, vocab_size: int, fast: bool = False, positions: int = 0,
                 keep_hidden: bool = False, graphs: bool | None = None, draft: bool = False,
                 shapes: tuple = ()) -> ModelWithCache:
    """The model-with-cache a run decodes with (`positions`: the most tokens the run will hold in
    the cache; `keep_hidden`: keep the final hidden states of each feed, for a feature draft;
    `shapes`: the (tokens, kept logits) feeds the run will make, for the graph path to capture at
    once): the eager one for a feature draft; the fast path's compiled one when `fast`; the
    CUDA-graph one when `graphs`, or when `graphs` is None and the model is on CUDA and can take
    it, unless graphs are off for it (a capture failed in this process, or a replay of this model
    differed from the eager step: then eager, its `decode_path` saying why); for a `draft` on the
    CPU that is a plain Llama decoder, the lean step (lean_draft.py); else eager."""
    if keep_hidden:
        return CachedModel(model, vocab_size, keep_hidden=True)
    if fast:
        from .static_model import StaticCachedModel
        return StaticCachedModel(model, vocab_size, positions)
    device = model.get_input_embeddings().weight.device
    if draft and device.type == "cpu" and not graphs:
        from .lean_draft import LeanCachedModel, lean_weights
        weights = lean_weights(model)
        if weights is not None:
            return LeanCachedModel(weights, vocab_size, positions)
    if graphs or (graphs is None and device.type == "cuda"):
        from .graph_model import GraphCachedModel, NoRoom, eager_reason, unsupported
        why = unsupported(model)
        if why is None:
            off = eager_reason(model)
            if off is not None:
                return CachedModel(model, vocab_size, decode_path=f"eager ({off})")
            try:
                return GraphCachedModel(model, vocab_size, positions, shapes=shapes)
            except NoRoom as exc:           # this run decodes eagerly; graphs stay on for the next
                return CachedModel(model, vocab_size, decode_path=f"eager ({exc})")
            except torch.OutOfMemoryError:
                return CachedModel(model, vocab_size, decode_path="eager (out of device memory for a graph cache)")
        if graphs:
            raise ConfigError(f"CUDA graphs cannot run this model: {why}; turn cuda_graphs off")
    return CachedModel(model, vocab_size)


def _largest(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def step_shapes(cfg, role: str) -> tuple:
    """The (tokens fed, logits kept) feeds after the prefill that a run's `role` makes, for the graph
    path to capture at once: "plain" steps, "draft" steps (and a draft catching up after an
    all-accepted round), or a speculative target's "verify" passes: the token it lacks plus m drafts,
    every logit kept, m = 0..k (rounds cut short by the draft or by the tokens left draft fewer). A
    token tree's verify passes are ("tree", 1 + nodes, 1 + nodes): the tree of each depth it may be cut
    to near the end (a dynamic tree: every size up to its budget), besides the plain step of no drafts."""
    if role == "plain":
        return ((1, 1),)
    if role == "draft":
        return ((1, 1), (2, 1))
    tree = getattr(cfg, "tree", None)
    if tree is None or (max(tree) == 1 and not cfg.tree_budget):          # a chain (of k, or the tree's depth)
        k = len(tree) if tree is not None else cfg.k_max if cfg.adaptive_k else cfg.k
        return tuple((m + 1, m + 1) for m in range(k + 1))
    sizes = {min(total, cfg.tree_budget) if cfg.tree_budget else total for total in depth_totals(tree)}
    if cfg.tree_budget:
        sizes |= set(range(1, cfg.tree_budget + 1))
    return ((1, 1),) + tuple(("tree", n + 1, n + 1) for n in sorted(sizes))


def path_stats(target, draft=None) -> dict:
    """What `Done.stats` says about how a lane decoded: `decode_path` (the target's: "eager",
    "CUDA graphs", "torch.compile", "eager replay" for the graph path off CUDA, or "eager (graph
    capture failed: ...)" / "eager (a replay differed ...)" when the graph path closed), `capture_s`,
    the seconds this run spent capturing graphs (0 when its pooled caches had them),
    `graph_check_delta`, the largest |delta| between a replay and the eager step this run's checks
    found (None when none ran), and
    `draft_path`, how the draft model stepped ("" without one; e.g. "lean eager, int8 weights"), and
    `draft_format_by`, how the lean step's weights' format was chosen ("" for any other step)."""
    present = [m for m in (target, draft) if m is not None]
    return {"decode_path": getattr(target, "decode_path", "eager") if target is not None else "eager",
            "capture_s": sum(getattr(m, "capture_s", 0.0) for m in present),
            "graph_check_delta": _largest([getattr(m, "check_delta", None) for m in present]),
            "draft_path": getattr(draft, "decode_path", "eager") if draft is not None else "",
            "draft_format_by": getattr(draft, "format_by", "") if draft is not None else ""}
