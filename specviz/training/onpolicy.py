"""On-policy distillation data: the target writes, and its next-token distributions are kept.

DistillSpec (Zhou et al. 2024) trains a draft on text the *target* generates, because
acceptance is measured on the target's own outputs, not on a corpus. `generate_records`
continues a batch of prompts with the target (greedy, or sampled at a temperature) and keeps,
at every generated position, the target's top-`keep` token ids and log-probabilities under
the full softmax: the draft later learns the target's distribution from them without the
target being run again.

A plain batched decode loop (left padding, a KV cache that appends in place, finished rows
dropped), so the records come from exactly the distributions the loop sampled from.
Sampling draws within the top `SAMPLE_WITHIN` logits: the tail beyond them holds a negligible
share of the mass for training data and the full-vocabulary draw costs more than the forward.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..runtime.kv_buffer import buffered_cache

SAMPLE_WITHIN = 64


@dataclass
class Record:
    prompt_ids: list[int]
    generated: list[int]        # the target's tokens (EOS included when it stopped)
    top_ids: np.ndarray         # (len(generated), keep) uint16: the target's most likely next tokens
    top_logp: np.ndarray        # (len(generated), keep) float16: their log-probabilities, full softmax
    temperature: float


@torch.inference_mode()
def generate_records(model, prompts: list[list[int]], max_new_tokens: int, temperature: float,
                     eos_ids: set[int], pad_id: int, keep: int = 32, seed: int = 0) -> list[Record]:
    """Continue each prompt with `model` (batched); return one Record per prompt, in order."""
    device = model.device
    gen = torch.Generator(device=device).manual_seed(seed)
    batch, longest = len(prompts), max(len(p) for p in prompts)
    ids = torch.full((batch, longest), pad_id, dtype=torch.long)
    mask = torch.zeros((batch, longest), dtype=torch.long)
    for row, prompt in enumerate(prompts):              # left padding: every prompt ends at column -1
        ids[row, longest - len(prompt):] = torch.tensor(prompt)
        mask[row, longest - len(prompt):] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
    cache = buffered_cache(model.config)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                   use_cache=True, logits_to_keep=1).logits[:, -1].float()
    live = torch.arange(batch)                           # original row of each row still generating
    out_tokens = [[] for _ in range(batch)]
    out_ids = [[] for _ in range(batch)]
    out_logp = [[] for _ in range(batch)]
    eos = torch.tensor(sorted(eos_ids), dtype=torch.long, device=device)
    for _ in range(max_new_tokens):
        logp = torch.log_softmax(logits, dim=-1)        # (live, V)
        top_logp, top_ids = logp.topk(keep, dim=-1)
        if temperature == 0:
            token = logits.argmax(-1)
        else:
            scaled, within = (logits / temperature).topk(SAMPLE_WITHIN, dim=-1)
            pick = torch.multinomial(torch.softmax(scaled, dim=-1), 1, generator=gen)
            token = within.gather(-1, pick).squeeze(-1)
        step_tokens = token.tolist()                    # one copy to the host per step, not per row
        step_ids = top_ids.cpu().numpy().astype(np.uint16)
        step_logp = top_logp.cpu().numpy().astype(np.float16)
        for j, row in enumerate(live.tolist()):
            out_tokens[row].append(step_tokens[j])
            out_ids[row].append(step_ids[j])
            out_logp[row].append(step_logp[j])
        going = ~torch.isin(token, eos)
        if not going.any():
            break
        if not going.all():                              # drop finished rows from the batch and cache
            keep_rows = going.nonzero().squeeze(-1)
            live = live[keep_rows.cpu()]
            token, mask, positions = token[keep_rows], mask[keep_rows], positions[keep_rows]
            for layer in cache.layers:
                layer.select_rows(keep_rows)
        mask = torch.cat([mask, torch.ones((live.numel(), 1), dtype=torch.long, device=device)], dim=-1)
        positions = positions[:, -1:] + 1
        logits = model(input_ids=token[:, None], attention_mask=mask, position_ids=positions,
                       past_key_values=cache, use_cache=True).logits[:, -1].float()
    return [Record(prompts[r], out_tokens[r], np.stack(out_ids[r]), np.stack(out_logp[r]), temperature)
            for r in range(batch)]
