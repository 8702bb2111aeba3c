"""A draft that reads the target's hidden state as well as the token (EAGLE-style).

The target's final hidden state f_t at position t is the vector its output head turns into the
distribution of token t+1: it already holds what 30 layers understood of the context. A plain
small draft has to rebuild that from tokens with 2 layers; this one is given it. As in EAGLE
(Li et al. 2024), the input at position p is the token x_p together with the feature of the
position before:

    input_p = embed(x_p) + W z(g_{p-1}),   g_{p-1} = f_{p-1} (the target's) when known,

where z standardizes each feature dimension with the mean and spread measured on the training data
and scales it to the embeddings' size: z(g) = s (g - mean) / std. SmolLM2's final hidden states have
RMS 1.9 against the embeddings' 0.135, and a few outlier dimensions with RMS up to 18: unscaled, W's
first Adam steps swamp the token embedding and those few dimensions drive them (measured: held-out
agreement fell from 0.50 to 0.44 before recovering).

In a round the target's features are known for every committed position but the newest (the
target has not run on the token it just chose). The first draft step, at that newest position L,
reads f_{L-1}: all known. The next steps read the draft's *own* final hidden state h in place of
the target's feature (g_L = h_L, ...), which lives in the same space because the draft's head is
the target's own output rows. Training runs those later steps too (training-time test, as in
EAGLE-3 and HASS): step s at position p sees steps-1 inputs up to p-s+1 and its own earlier steps,
exactly what it sees in the engine (`training_mask`, in training/feature_unroll.py).

Everything else is BorrowedDraftForCausalLM: a few decoder layers, the target's embedding and its
output rows over a frequency-ranked subset (FR-Spec). W starts at zero, so an untrained W is the
plain borrowed draft it was initialized from.

Exactness does not depend on any of this: the draft only proposes; the engine's acceptance rule
checks every token against the target. `forward(input_ids)` without features is refused, so
transformers' assisted generation (which knows nothing of features) cannot misuse it.
"""
from __future__ import annotations

import torch
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM

from ..errors import LoadError
from .borrowed_draft import BorrowedDraftConfig, BorrowedDraftForCausalLM


class FeatureDraftConfig(BorrowedDraftConfig):
    model_type = "specviz_feature_draft"

    def __init__(self, draft_steps_trained: int = 2, feature_scale: float = 1.0,
                 feature_mean: list[float] | None = None, feature_std: list[float] | None = None, **kwargs):
        super().__init__(**kwargs)
        self.draft_steps_trained = draft_steps_trained   # steps per round seen in training (training-time test)
        self.feature_scale = feature_scale               # s: the embeddings' RMS
        self.feature_mean = feature_mean                 # per dimension, over the training features (None: 0)
        self.feature_std = feature_std                   # per dimension (None: 1)


class FeatureDraftForCausalLM(BorrowedDraftForCausalLM):
    config_class = FeatureDraftConfig
    reads_target_features = True      # the engine reads it (ModelPair.draft_reads_features), importing nothing from here

    def __init__(self, config: FeatureDraftConfig):
        super().__init__(config)
        self.feature_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        nn.init.zeros_(self.feature_proj.weight)
        self._z: tuple[torch.Tensor, torch.Tensor] | None = None

    def _z_stats(self, device) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean, s / std) of z, built from the config (where they are saved) on first use on a device.
        Not buffers: from_pretrained builds a model on the meta device and would leave them empty."""
        if self._z is None or self._z[0].device != device:
            c, d = self.config, self.config.hidden_size
            mean = torch.tensor(c.feature_mean, dtype=torch.float32) if c.feature_mean is not None else torch.zeros(d)
            std = torch.tensor(c.feature_std, dtype=torch.float32) if c.feature_std is not None else torch.ones(d)
            self._z = (mean.to(device), (c.feature_scale / std.clamp(min=1e-6)).to(device))
        return self._z

    def inputs(self, input_ids: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        """embed(x_p) + W g_{p-1}: input_ids (..., n), features (..., n, d) already shifted by one."""
        embeds = self.model.embed_tokens(input_ids)
        mean, inv = self._z_stats(embeds.device)
        z = (features.float() - mean) * inv
        return embeds + self.feature_proj(z.to(embeds.dtype))

    def hidden(self, input_ids: torch.Tensor, features: torch.Tensor, **kwargs) -> torch.Tensor:
        """The draft's final hidden states (post norm) of the positions given."""
        if not self.borrowed:
            raise LoadError("a borrowed-weights draft needs its target: call borrow_from(target) (load_pair does)")
        return self.model(inputs_embeds=self.inputs(input_ids, features), **kwargs).last_hidden_state

    def forward(self, *args, **kwargs):
        raise LoadError("this draft reads its target's hidden states: specviz's engine feeds them; "
                        "transformers' generate(assistant_model=...) cannot")


AutoConfig.register(FeatureDraftConfig.model_type, FeatureDraftConfig)
AutoModelForCausalLM.register(FeatureDraftConfig, FeatureDraftForCausalLM)
