"""A draft that also reads the target's final hidden states (EAGLE-style, models/feature_draft.py),
as drafter. After each verify pass, `update` receives the target's hidden states of the tokens it fed
and keeps those of the accepted ones; `propose` feeds the draft every committed token with the
target's feature of the position before (all known but the newest token's), then drafts step 2.. on
its own hidden states. Its cache only ever holds entries made from target features: after a round it
is cut back to the committed prefix and the accepted drafts are fed again with the target's features.
It drafts chains: a tree would need the target's feature at every node, which its verify pass does
not give for the nodes' own children (config.py and speculate say so when asked for one).
With `confidence_stop` it stops as the model drafter does (model_drafter.py).
"""
from __future__ import annotations

import math
from dataclasses import replace

import torch

from ...runtime.kv_buffer import buffered_cache
from .proposal import Proposal
from .sampling import choose, warp


def unsure(logits: torch.Tensor, token: torch.Tensor, threshold: float) -> bool:
    """Whether the draft gave its own token (1,) less than `threshold` under softmax(logits) (1, V):
    log p(token) = logit(token) - logsumexp(logits). One device-to-host read; none when off."""
    if threshold <= 0:
        return False
    row = logits[0].float()
    return (row[token[0]] - torch.logsumexp(row, -1)).item() < math.log(threshold)


class FeatureDrafter:
    reads_target_features = True
    lm = None                           # its own eager cache (buffered_cache), fed with features

    def __init__(self, model, vocab_size: int, cfg, gen: torch.Generator):
        self.model, self.vocab_size, self.gen = model, vocab_size, gen
        self.cfg = cfg if cfg.draft_temperature is None else replace(cfg, temperature=cfg.draft_temperature)
        self.cache = buffered_cache(model.config)
        self.device = model.get_input_embeddings().weight.device
        # features[t] = the target's final hidden state at sequence position t (known for t < len).
        self.features = torch.zeros(0, model.config.hidden_size, device=self.device)
        self.context_len = 0
        self.forwards = 0

    def _feed(self, tokens: torch.Tensor, prev_features: torch.Tensor) -> torch.Tensor:
        """Run tokens (n,) after the cached ones, each with the feature of the position before (n, d);
        returns the draft's final hidden states (n, d)."""
        self.forwards += 1
        return self.model.hidden(tokens.view(1, -1), prev_features[None], past_key_values=self.cache,
                                 use_cache=True)[0]

    def propose(self, ids: list[int], widths: tuple[int, ...]) -> Proposal:
        k = len(widths)                                 # a chain (config.py refuses a tree for this draft)
        self.context_len = len(ids)
        cached = self.cache.get_seq_length()
        newest = len(ids) - 1
        if self.features.shape[0] < newest:
            # No target pass yet (the first round): nothing to read, so no drafts; the target's
            # pass over the prompt gives the first token and the features of the next round.
            return Proposal(torch.zeros(0, dtype=torch.long, device=self.device),
                            torch.zeros(0, self.vocab_size, device=self.device))
        # Positions cached..newest, each with the target's feature of the position before it
        # (position 0 has none: a zero vector, as in training).
        prev = self.features[max(0, cached - 1):newest]
        if cached == 0:
            prev = torch.cat([prev.new_zeros(1, prev.shape[1]), prev])
        x = torch.tensor(ids[cached:], dtype=torch.long, device=self.device)
        tokens, qs = [], []
        for i in range(k):
            hidden = self._feed(x, prev)
            logits = self.model.lm_head(hidden[-1:])[:, : self.vocab_size].float()   # (1, V), -inf off the head
            q = warp(logits, self.cfg)
            x = choose(logits, q, self.cfg, self.gen)   # (1,): the next draft, fed next step ...
            prev = hidden[-1:]                          # ... with the draft's own hidden state as its feature
            tokens.append(x)
            qs.append(q)
            if i < k - 1 and unsure(logits, x, self.cfg.confidence_stop):
                break                                   # as ModelDrafter: the draft doubts x
        return Proposal(torch.cat(tokens), torch.cat(qs))

    def update(self, path: list[int], features: torch.Tensor | None = None, start: int = 0) -> None:
        n_accepted = len(path)
        if features is None:
            raise ValueError("a feature drafter needs the target's hidden states after each pass")
        # The fed tokens were ids[start:context_len] and then the drafts; the first
        # (context_len - start) + n_accepted of them are committed, so their features are the target's.
        known = self.context_len - start + n_accepted
        self.features = torch.cat([self.features[:start], features[:known].to(self.features.dtype)])
        # Keep only cache entries made from target features: positions before the round's drafts.
        drop = self.cache.get_seq_length() - min(self.cache.get_seq_length(), self.context_len)
        if drop > 0:
            self.cache.crop(-drop)

    def release(self) -> None:
        pass
