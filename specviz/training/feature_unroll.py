"""Training the feature draft (models/feature_draft.py): the unrolled training forward and its start.

`training_mask` and `unrolled_hidden` run a draft's later steps at training time the way the engine
runs them (training-time test, as in EAGLE-3 and HASS): step s reads step s-1's own hidden state.
`from_borrowed` starts a feature draft from a plain borrowed draft with W = 0, so an untrained W is
that plain draft. Only training uses these; the runtime model class stays in models/feature_draft.py.
"""
from __future__ import annotations

import torch

from ..models.borrowed_draft import BorrowedDraftForCausalLM
from ..models.feature_draft import FeatureDraftConfig, FeatureDraftForCausalLM


def training_mask(length: int, steps: int, device=None) -> torch.Tensor:
    """Attention of `steps` stacked copies of a sequence (step s = block s, positions 0..length-1),
    as the engine's draft step s sees it: (steps*length, steps*length) bool, True = attend.

    Step s at position p is the s-th draft of a round whose newest committed position is
    L = p - s + 1. It sees step-1 entries (target features) at positions <= L, and for each
    earlier step b in 2..s the entry of step b at position L + b - 1 (its own earlier drafts)."""
    p = torch.arange(length, device=device)
    blocks = []
    for s in range(1, steps + 1):
        row = []
        for b in range(1, steps + 1):
            if b == 1:
                allowed = p[None, :] <= (p[:, None] - s + 1)
            elif b <= s:
                allowed = p[None, :] == (p[:, None] - s + b)
            else:
                allowed = torch.zeros(length, length, dtype=torch.bool, device=device)
            row.append(allowed)
        blocks.append(torch.cat(row, 1))
    mask = torch.cat(blocks, 0)
    # Step s >= 2 at p < s - 1 has no committed position to stand on (L < 0): let it see itself only,
    # so attention stays defined; those positions carry no loss.
    mask |= torch.eye(steps * length, dtype=torch.bool, device=device)
    return mask


def unrolled_hidden(draft: FeatureDraftForCausalLM, ids: torch.Tensor, features: torch.Tensor, steps: int) -> torch.Tensor:
    """Training forward over `steps` draft steps at every position: (B, steps, T, d) final hidden states.

    ids (B, T); features (B, T, d) the target's f_t at every position t. Step 1 reads f_{p-1};
    step s reads step s-1's own hidden state at p-1. Each step is one forward over all the steps
    so far, stacked along the sequence with `training_mask` (the earlier ones are recomputed: the
    draft is small)."""
    B, T, d = features.shape
    zero = features.new_zeros(B, 1, d)
    shifted = torch.cat([zero, features[:, :-1]], 1)                      # g_{p-1}
    inputs = [draft.inputs(ids, shifted)]
    positions = torch.arange(T, device=ids.device)
    for s in range(1, steps + 1):
        x = torch.cat(inputs, 1)
        mask = training_mask(T, s, ids.device)[None, None].expand(B, 1, s * T, s * T)
        h = draft.model(inputs_embeds=x, attention_mask=mask,
                        position_ids=positions.repeat(s)[None].expand(B, -1)).last_hidden_state
        if s < steps:
            own = h[:, (s - 1) * T:]                                       # step s's hidden states
            inputs.append(draft.inputs(ids, torch.cat([zero, own[:, :-1]], 1)))
    return h.view(B, steps, T, d)


def from_borrowed(plain: BorrowedDraftForCausalLM, steps: int, feature_scale: float = 1.0,
                  feature_mean: list[float] | None = None, feature_std: list[float] | None = None) -> FeatureDraftForCausalLM:
    """A feature draft that starts as `plain` (W = 0), sharing nothing but copies of its own tensors."""
    config = FeatureDraftConfig(draft_steps_trained=steps, feature_scale=feature_scale, feature_mean=feature_mean,
                                feature_std=feature_std, **{k: v for k, v in plain.config.to_dict().items()
                                                              if k not in ("architectures", "model_type",
                                                                           "transformers_version")})
    draft = FeatureDraftForCausalLM(config).to(dtype=plain.dtype, device=plain.device)
    missing, unexpected = draft.load_state_dict(plain.state_dict(), strict=False)
    if unexpected or set(missing) - {"feature_proj.weight"}:
        raise RuntimeError(f"cannot start a feature draft from this one: missing {missing}, unexpected {unexpected}")
    draft.model.embed_tokens = plain.model.embed_tokens   # borrowed: shared, as in borrow_from
    draft.borrowed = plain.borrowed
    return draft
