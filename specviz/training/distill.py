"""Distilling the SmolLM2 draft from the target's recorded outputs (onpolicy.py shards).

- Head tokens (FR-Spec): the `head_size` tokens the target writes most often in the shards,
  plus its end-of-turn token, so the draft can propose the end of an answer.
- Initialization: each draft layer starts as a copy of one of the target's layers, and the final
  norm as the target's: the draft begins as a shallow cut of the target (as LayerSkip's early
  exit or Kangaroo's shallow sub-network do), then learns to make up for the missing layers.
- Loss: at every position the target generated, the cross-entropy of the draft's distribution
  (over its head tokens) against the target's recorded top-K distribution, i.e. forward
  KL(p || q) up to a constant, on the mass that falls on the head's tokens.
- Validation: held-out shards, never trained on (the plain draft's train stage holds out by store name,
  shard_store.is_validation; split_shards, for the feature draft, by index, a multiple of VALIDATION_EVERY): greedy
  agreement (draft argmax == target argmax, the greedy acceptance rate of a single draft) and
  sum_x min(p, q) at T = 1 (the sampled acceptance rate), over the recorded top-K.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import ConfigError
from ..models.borrowed_draft import BorrowedDraftConfig, BorrowedDraftForCausalLM
from .trainer import TrainSettings, train_steps

VALIDATION_EVERY = 20


@dataclass
class Sequence:
    ids: np.ndarray        # prompt + generated (int64)
    prompt_len: int
    top_ids: np.ndarray    # (generated, K) the target's top tokens at each generated position
    top_logp: np.ndarray   # (generated, K) their log-probabilities


def read_shards(paths: list[Path]) -> list[Sequence]:
    out = []
    for path in paths:
        with np.load(path) as z:    # read each array once: an npz member is re-read on every access
            d = {k: z[k] for k in ("prompt_lens", "gen_lens", "prompts", "generated", "top_ids", "top_logp")}
        p_off = g_off = 0
        for pl, gl in zip(d["prompt_lens"], d["gen_lens"]):
            ids = np.concatenate([d["prompts"][p_off:p_off + pl], d["generated"][g_off:g_off + gl]]).astype(np.int64)
            out.append(Sequence(ids, int(pl), d["top_ids"][g_off:g_off + gl].astype(np.int64),
                                d["top_logp"][g_off:g_off + gl].astype(np.float32)))
            p_off, g_off = p_off + pl, g_off + gl
    return out


def split_shards(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """(training shards, validation shards), by shard index."""
    train, val = [], []
    for path in paths:
        (val if int(path.stem.split("-")[1]) % VALIDATION_EVERY == 0 else train).append(path)
    return train, val


def head_tokens(counts: Counter, size: int, always: set[int]) -> list[int]:
    """The `size` most frequent of the counted tokens (generated_counts), `always` among them, sorted."""
    chosen = list(always) + [t for t, _ in counts.most_common(size) if t not in always]
    return sorted(chosen[:size])


def generated_counts(seqs: list[Sequence]) -> Counter:
    """How often each token occurs among the generated (target-written) tokens of `seqs`."""
    counts = Counter()
    for s in seqs:
        counts.update(s.ids[s.prompt_len:].tolist())
    return counts


def coverage(counts: Counter, token_ids: list[int]) -> float:
    """The share of the counted tokens that are among `token_ids` (a head's reach)."""
    return sum(counts[t] for t in set(token_ids)) / max(1, sum(counts.values()))


def head_index(draft) -> torch.Tensor:
    """(vocab,) long: each token's column in the draft's head, -1 for tokens outside it (on the CPU,
    where batches are built)."""
    index = torch.full((draft.config.vocab_size,), -1, dtype=torch.long)
    index[draft.lm_head.token_ids.cpu()] = torch.arange(draft.config.head_size)
    return index


def make_draft(target, layers: list[int], token_ids: list[int], target_id: str) -> BorrowedDraftForCausalLM:
    """A draft of len(layers) decoder layers, each copied from the target layer of that index."""
    tc = target.config.to_dict()
    for key in ("architectures", "model_type", "transformers_version", "_name_or_path", "_model_name_or_path"):
        tc.pop(key, None)
    tc.update(num_hidden_layers=len(layers), tie_word_embeddings=False)
    embedding = target.get_input_embeddings().weight
    config = BorrowedDraftConfig(head_size=len(token_ids), target_id=target_id,
                                 target_embedding_norm=float(embedding.detach().float().norm()), **tc)
    draft = BorrowedDraftForCausalLM(config).to(dtype=torch.float32, device=target.device)
    with torch.no_grad():
        for mine, theirs in enumerate(layers):
            draft.model.layers[mine].load_state_dict(target.model.layers[theirs].state_dict())
        draft.model.norm.load_state_dict(target.model.norm.state_dict())
        draft.lm_head.token_ids.copy_(torch.tensor(token_ids))
    return draft.borrow_from(target)


def grow_draft(draft: BorrowedDraftForCausalLM, target, layers: list[int]) -> BorrowedDraftForCausalLM:
    """The draft with len(layers) decoder layers appended, each copied from the target layer of that
    index, whose two residual outputs (attention's o_proj, the MLP's down_proj) start at zero: a new
    layer then adds nothing to the residual stream, so the grown draft's logits are the draft's, and
    training starts from what the draft already knows. The zeroed matrices get gradients at once (their
    inputs are not zero), and through them the layer's other weights, as a LoRA adapter's B = 0 does."""
    old, count = draft.config.num_hidden_layers, len(target.model.layers)
    if not layers or not all(0 <= i < count for i in layers):      # a user's mistake (--grow-layers): one line
        raise ConfigError(f"--grow-layers: the target's layers are 0 to {count - 1}, not {layers}")
    config = type(draft.config)(**{**draft.config.to_dict(), "num_hidden_layers": old + len(layers)})
    grown = BorrowedDraftForCausalLM(config).to(dtype=torch.float32, device=target.device)
    missing, unexpected = grown.load_state_dict(draft.own_state_dict(), strict=False)
    if unexpected or any(not k.startswith("model.layers.") and k not in grown.BORROWED_KEYS for k in missing):
        raise ValueError(f"cannot grow this draft: unexpected {unexpected}, missing {missing}")
    with torch.no_grad():
        for mine, theirs in enumerate(layers, start=old):
            layer = grown.model.layers[mine]
            layer.load_state_dict(target.model.layers[theirs].state_dict())
            for output in (layer.self_attn.o_proj, layer.mlp.down_proj):
                output.weight.zero_()
                if output.bias is not None:
                    output.bias.zero_()
    return grown.borrow_from(target)


class Batches:
    """Random batches of sequences of similar length (little padding), as (ids, mask, targets)."""

    def __init__(self, seqs: list[Sequence], batch_size: int, sub_index: torch.Tensor, gen: torch.Generator):
        self.seqs, self.batch_size, self.sub_index, self.gen = seqs, batch_size, sub_index, gen

    def sample(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        pool = torch.randint(0, len(self.seqs), (self.batch_size * 4,), generator=self.gen).tolist()
        pool.sort(key=lambda i: len(self.seqs[i].ids))
        start = int(torch.randint(0, 4, (1,), generator=self.gen)) * self.batch_size
        return collate([self.seqs[i] for i in pool[start:start + self.batch_size]], self.sub_index)


def collate(seqs: list[Sequence], sub_index: torch.Tensor):
    """ids (B, T), attention mask (B, T), and for every generated position: its (row, column) of
    hidden state, the teacher's top tokens as head indices (-1: not in the head) and probabilities."""
    longest = max(len(s.ids) for s in seqs)
    ids = torch.zeros((len(seqs), longest), dtype=torch.long)
    mask = torch.zeros((len(seqs), longest), dtype=torch.long)
    rows, cols, tops, probs = [], [], [], []
    for r, s in enumerate(seqs):
        ids[r, :len(s.ids)] = torch.from_numpy(s.ids)
        mask[r, :len(s.ids)] = 1
        n = len(s.ids) - s.prompt_len
        rows.append(torch.full((n,), r))
        # The hidden state at position t predicts token t + 1: generated token j is predicted at prompt_len - 1 + j.
        cols.append(torch.arange(s.prompt_len - 1, s.prompt_len - 1 + n))
        tops.append(sub_index[torch.from_numpy(s.top_ids)])
        probs.append(torch.from_numpy(s.top_logp).exp())
    return ids, mask, torch.cat(rows), torch.cat(cols), (torch.cat(tops), torch.cat(probs))


def bf16_matmuls(device: torch.device) -> bool:
    """Whether bf16 autocast speeds up training here: any GPU, or a CPU with AMX tiles or AVX-512 BF16
    (there a bf16 step runs about twice as fast as an fp32 one)."""
    if device.type == "cuda":
        return True
    if device.type != "cpu":
        return False
    cpu = torch.cpu
    return bool(getattr(cpu, "_is_amx_tile_supported", lambda: False)()
                or getattr(cpu, "_is_avx512_bf16_supported", lambda: False)())


def head_log_probs(draft, ids, mask, rows, cols, mixed: bool) -> torch.Tensor:
    """The draft's log-probabilities over its head's tokens at the (row, column) positions, (N, head).
    mixed: bf16 autocast on a GPU or a CPU with bf16 matrix units (the draft's layers only); the softmax
    stays in fp32."""
    device = draft.device
    ids, mask, rows, cols = (t.to(device, non_blocking=True) for t in (ids, mask, rows, cols))
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=mixed and bf16_matmuls(device)):
        hidden = draft.model(input_ids=ids, attention_mask=mask).last_hidden_state[rows, cols]   # (N, d)
        sub_logits = draft.lm_head.subset_logits(hidden)
    return F.log_softmax(sub_logits.float(), dim=-1)


def loss_and_metrics(draft, ids, mask, rows, cols, teacher, mixed: bool = True,
                     argmax_weight: float = 0.0) -> tuple[torch.Tensor, dict]:
    """The distillation loss and its metrics; mixed: bf16 autocast where it is faster (training steps;
    validation passes mixed=False, so held-out figures are the fp32 draft's, as the engine runs it).
    argmax_weight w: the loss is (1 - w) x the cross-entropy against the recorded distribution + w x the
    cross-entropy of the target's argmax alone (greedy acceptance rewards only the argmax; an
    under-capacity draft fit to the whole distribution may spread its mass). 0: the distribution only."""
    logq = head_log_probs(draft, ids, mask, rows, cols, mixed)                              # (N, head)
    top, probs = (t.to(draft.device, non_blocking=True) for t in teacher)   # (N, K) head indices, (N, K) p
    inside = top >= 0
    logq_top = logq.gather(1, top.clamp(min=0)) * inside    # log q of the teacher's top tokens in the head
    # Cross-entropy against the recorded p: -sum_k p_k log q_k = KL(p || q) + H(p) on the head's tokens.
    loss = -(probs * logq_top).sum(-1).mean()
    if argmax_weight:
        # -log q(argmax p); 0 where the argmax lies outside the head (nothing the draft could propose)
        loss = (1 - argmax_weight) * loss + argmax_weight * -logq_top[:, 0].mean()
    with torch.no_grad():
        greedy = (logq.argmax(-1) == top[:, 0]) & inside[:, 0]      # draft argmax == target argmax
        overlap = torch.minimum(probs, logq_top.exp() * inside).sum(-1)   # sum min(p, q) over the top-K
    return loss, {"greedy_agreement": greedy.float().mean().item(), "overlap": overlap.mean().item(),
                  "tokens": int(rows.numel())}


@torch.no_grad()
def validate(draft, seqs: list[Sequence], sub_index: torch.Tensor, batch_size: int = 16) -> dict:
    draft.eval()
    totals = {"loss": 0.0, "greedy_agreement": 0.0, "overlap": 0.0}
    count = 0
    ordered = sorted(seqs, key=lambda s: len(s.ids))
    for i in range(0, len(ordered), batch_size):
        ids, mask, rows, cols, teacher = collate(ordered[i:i + batch_size], sub_index)
        loss, m = loss_and_metrics(draft, ids, mask, rows, cols, teacher, mixed=False)
        n = m["tokens"]
        totals["loss"] += loss.item() * n
        totals["greedy_agreement"] += m["greedy_agreement"] * n
        totals["overlap"] += m["overlap"] * n
        count += n
    draft.train()
    return {k: v / max(1, count) for k, v in totals.items()}


@torch.no_grad()
def agreement_by_confidence(draft, seqs: list[Sequence], sub_index: torch.Tensor, edges: list[float],
                            batch_size: int = 16) -> list[dict]:
    """Greedy agreement split by how sure the target was: for each bin [edges[i], edges[i+1]) of the
    target's top-1 probability, the generated positions that fall in it and the share where the draft's
    argmax (fp32) is the target's. Where a target is torn between two tokens a draft's guess is close to
    a coin toss, however well trained: the bins say how much of a kind's disagreement is there."""
    if edges[0] > 0 or edges[-1] < 1:
        raise ValueError(f"the bins must cover every probability from 0 to 1, not {edges[0]} to {edges[-1]}")
    draft.eval()
    agreed, confidence = [], []
    ordered = sorted(seqs, key=lambda s: len(s.ids))
    for i in range(0, len(ordered), batch_size):
        ids, mask, rows, cols, (top, probs) = collate(ordered[i:i + batch_size], sub_index)
        logq = head_log_probs(draft, ids, mask, rows, cols, mixed=False).cpu()
        agreed.append((logq.argmax(-1) == top[:, 0]) & (top[:, 0] >= 0))
        confidence.append(probs[:, 0])
    draft.train()
    agreed, confidence = torch.cat(agreed), torch.cat(confidence)
    bins = []
    for low, high in zip(edges, edges[1:]):
        last = high == edges[-1]                     # the last bin holds its upper edge (p = 1)
        inside = (confidence >= low) & ((confidence <= high) if last else (confidence < high))
        n, hits = int(inside.sum()), int(agreed[inside].sum())
        bins.append({"low": low, "high": high, "positions": n, "agreed": hits,
                     "greedy_agreement": hits / n if n else None})
    return bins


def train_draft(draft, train: list[Sequence], val: list[Sequence], settings: TrainSettings, checkpoint: str,
                log: Callable[[str], None] = print, argmax_weight: float = 0.0) -> dict:
    """Train the draft's own layers until the time budget is spent; resumable from `checkpoint`.
    argmax_weight: see loss_and_metrics. Validation keeps the distribution's loss, so held-out losses compare
    across runs; the step kept is the one of best held-out greedy agreement either way."""
    sub_index = head_index(draft)
    params = [p for n, p in draft.named_parameters() if p.requires_grad and not n.startswith(("model.embed_tokens", "lm_head"))]
    keep = set(params)
    for p in draft.parameters():
        p.requires_grad_(p in keep)
    batches: list[Batches] = []

    def step_loss(gen: torch.Generator):
        if not batches:       # drawn with the loop's generator, which a resumed run restores
            batches.append(Batches(train, settings.batch_size, sub_index, gen))
        return loss_and_metrics(draft, *batches[0].sample(), argmax_weight=argmax_weight)

    return train_steps(draft, params, [{"params": params, "lr_scale": 1.0}], settings, checkpoint, step_loss,
                       lambda: validate(draft, val, sub_index), log, device=str(draft.device),
                       keep_best="greedy_agreement")
