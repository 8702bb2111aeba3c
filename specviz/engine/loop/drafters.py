"""Drafters: who proposes the round's tokens. As in transformers' candidate generators, a
drafter is `propose(ids, k)` and `update(n_accepted)`; `release()` ends its run. Every drafter
says whether it reads the target's hidden states (`reads_target_features`): the round then
keeps them on its verify pass and hands them to `update`.

- ModelDrafter: the draft LM samples k tokens one at a time from q (warped like the
  target's p), keeping its own KV cache across rounds. After a round it crops its cache to
  the accepted prefix; after an all-accepted round its cache lacks the last draft and the
  bonus, and the next `propose` feeds them first (the cache catches up).
  With `confidence_stop` > 0 it stops early: after a draft the draft model itself gave less
  than that probability (its softmax before temperature and truncation), no more are drafted
  that round, since the target would most likely reject what follows. transformers calls this
  `assistant_confidence_threshold`; Agrawal et al. 2024 (AdaEDL) and Huang et al. 2024
  (SpecDec++) study such stopping rules. It keeps the output exact: the decision to draft
  position i + 1 reads only drafts up to i (already the prefix if i + 1 is ever judged), never
  the draw at i + 1, so every judged draft is still a fresh sample from q and every position's
  token still has law p (a position not drafted is the target's own sample, the bonus).
- PromptLookupDrafter: no model. It finds the most recent earlier occurrence of the
  sequence's last n tokens (n = lookup_ngram down to 1) in prompt + output and proposes
  what followed it (Saxena 2023, "prompt lookup decoding"). Its q is one-hot.
- FeatureDrafter: a draft that also reads the target's final hidden states (EAGLE-style,
  models/feature_draft.py). After each verify pass, `update` receives the target's hidden
  states of the tokens it fed and keeps those of the accepted ones; `propose` feeds the draft
  every committed token with the target's feature of the position before (all known but the
  newest token's), then drafts step 2.. on its own hidden states. Its cache only ever holds
  entries made from target features: after a round it is cut back to the committed prefix
  and the accepted drafts are fed again with the target's features.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Protocol

import math

import torch

from ...runtime.cached_model import ModelWithCache, cached_model, step_shapes, uncached
from ...runtime.kv_buffer import buffered_cache
from .sampling import choose, warp


def unsure(logits: torch.Tensor, token: torch.Tensor, threshold: float) -> bool:
    """Whether the draft gave its own token (1,) less than `threshold` under softmax(logits) (1, V):
    log p(token) = logit(token) - logsumexp(logits). One device-to-host read; none when off."""
    if threshold <= 0:
        return False
    row = logits[0].float()
    return (row[token[0]] - torch.logsumexp(row, -1)).item() < math.log(threshold)


@dataclass
class Proposal:
    tokens: torch.Tensor   # (m,) long, on the pair's device; m <= k
    q: torch.Tensor        # (m, V) float32 draft probabilities of each step


class Drafter(Protocol):
    reads_target_features: bool         # update() needs the target's final hidden states (a feature draft)
    lm: ModelWithCache | None           # the draft model's cache path, reported in Done.stats (None: no such path)

    @property
    def forwards(self) -> int: ...      # draft-model forward passes so far (0 without a model)

    def propose(self, ids: list[int], k: int) -> Proposal: ...

    # features: the target's final hidden states of the tokens its last pass fed, starting at
    # sequence position `start` (only drafters with `reads_target_features` use them).
    def update(self, n_accepted: int, features: torch.Tensor | None = None, start: int = 0) -> None: ...

    def release(self) -> None: ...


class ModelDrafter:
    reads_target_features = False

    def __init__(self, model, vocab_size: int, cfg, gen: torch.Generator, positions: int = 0):
        self.lm = cached_model(model, vocab_size, cfg.fast, positions, graphs=cfg.cuda_graphs, draft=True,
                               shapes=step_shapes(cfg, "draft"))
        # Its own sampling settings: the run's, or the run's at the draft's own temperature. The
        # q it returns is the distribution it sampled from, so the acceptance rule stays exact.
        self.cfg = cfg if cfg.draft_temperature is None else replace(cfg, temperature=cfg.draft_temperature)
        self.gen = gen
        self.context_len = 0

    @property
    def forwards(self) -> int:
        return self.lm.forwards

    def propose(self, ids: list[int], k: int) -> Proposal:
        self.context_len = len(ids)
        x = uncached(self.lm, ids)                    # tokens not yet in the draft's cache
        tokens, qs = [], []
        for i in range(k):
            logits = self.lm.feed(x, keep=1)          # (1, V)
            q = warp(logits, self.cfg)
            x = choose(logits, q, self.cfg, self.gen)  # (1,): next draft token, fed next step
            tokens.append(x)
            qs.append(q)
            if i < k - 1 and unsure(logits, x, self.cfg.confidence_stop):
                break                                 # the draft doubts x: leave what follows to the target
        # The last draft is not fed: the cache holds ids + all drafts but the last.
        return Proposal(torch.cat(tokens), torch.cat(qs))

    def update(self, n_accepted: int, features: torch.Tensor | None = None, start: int = 0) -> None:
        self.lm.crop(min(self.lm.length, self.context_len + n_accepted))

    def release(self) -> None:
        self.lm.release()


class PromptLookupDrafter:
    reads_target_features = False
    lm = None                           # no model

    def __init__(self, vocab_size: int, device: torch.device, max_ngram: int):
        self.vocab_size, self.device, self.max_ngram = vocab_size, device, max_ngram
        # index[n][ngram] = latest start of that n-gram among those followed by a token.
        self.index: list[dict[tuple, int]] = [dict() for _ in range(max_ngram + 1)]
        self.indexed = [0] * (max_ngram + 1)

    @property
    def forwards(self) -> int:
        return 0

    def _refresh(self, ids: list[int]) -> None:
        for n in range(1, self.max_ngram + 1):
            for start in range(self.indexed[n], len(ids) - n):
                self.index[n][tuple(ids[start:start + n])] = start
            self.indexed[n] = max(self.indexed[n], len(ids) - n)

    def propose(self, ids: list[int], k: int) -> Proposal:
        self._refresh(ids)
        follow: list[int] = []
        for n in range(min(self.max_ngram, len(ids) - 1), 0, -1):
            start = self.index[n].get(tuple(ids[-n:]))
            if start is not None:
                follow = ids[start + n : start + n + k]
                break
        tokens = torch.tensor(follow, dtype=torch.long, device=self.device)
        q = torch.zeros(len(follow), self.vocab_size, device=self.device)
        q[torch.arange(len(follow), device=self.device), tokens] = 1.0   # one-hot: q(x) = 1
        return Proposal(tokens, q)

    def update(self, n_accepted: int, features: torch.Tensor | None = None, start: int = 0) -> None:
        pass

    def release(self) -> None:
        pass


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

    def propose(self, ids: list[int], k: int) -> Proposal:
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

    def update(self, n_accepted: int, features: torch.Tensor | None = None, start: int = 0) -> None:
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


def _model_drafter(pair, cfg, gen: torch.Generator, positions: int) -> Drafter:
    if pair.draft_reads_features:
        return FeatureDrafter(pair.draft, pair.vocab_size, cfg, gen)
    return ModelDrafter(pair.draft, pair.vocab_size, cfg, gen, positions)


def _lookup_drafter(pair, cfg, gen: torch.Generator, positions: int) -> Drafter:
    return PromptLookupDrafter(pair.vocab_size, pair.device, cfg.lookup_ngram)


@dataclass(frozen=True)
class DrafterKind:
    """One registered drafter: the name a config gives, the words the page and a run's text use,
    whether it needs the pair's draft model, and how a run builds it: build(pair, cfg, gen, positions)."""
    name: str
    label: str
    uses_draft_model: bool
    build: Callable[..., Drafter]


MODEL, PROMPT_LOOKUP = "model", "prompt_lookup"
# The one list of drafters: config validation, the page's radio, the CLI's choices, a run's text
# and the bench all read it. The first is the default.
DRAFTERS = {kind.name: kind for kind in (
    DrafterKind(MODEL, "draft model", True, _model_drafter),
    DrafterKind(PROMPT_LOOKUP, "prompt lookup", False, _lookup_drafter),
)}
DEFAULT_DRAFTER = MODEL


def uses_draft_model(name: str) -> bool:
    """Whether the drafter of that name runs the pair's draft model (an unknown name: False)."""
    kind = DRAFTERS.get(name)
    return kind is not None and kind.uses_draft_model


def make_drafter(pair, cfg, gen: torch.Generator, positions: int) -> Drafter:
    """The drafter cfg.drafter names (cfg: the run's SpecConfig, validated against DRAFTERS)."""
    return DRAFTERS[cfg.drafter].build(pair, cfg, gen, positions)
