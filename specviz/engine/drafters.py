"""Drafters: who proposes the round's tokens. As in transformers' candidate generators, a
drafter is `propose(ids, k)` and `update(n_accepted)`; `release()` ends its run.

- ModelDrafter: the draft LM samples k tokens one at a time from q (warped like the
  target's p), keeping its own KV cache across rounds. After a round it crops its cache to
  the accepted prefix; after an all-accepted round its cache lacks the last draft and the
  bonus, and the next `propose` feeds them first (the cache catches up).
- PromptLookupDrafter: no model. It finds the most recent earlier occurrence of the
  sequence's last n tokens (n = lookup_ngram down to 1) in prompt + output and proposes
  what followed it (Saxena 2023, "prompt lookup decoding"). Its q is one-hot.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import torch

from .cached_model import cached_model, uncached
from .config import SpecConfig
from .sampling import choose, warp


@dataclass
class Proposal:
    tokens: torch.Tensor   # (m,) long, on the pair's device; m <= k
    q: torch.Tensor        # (m, V) float32 draft probabilities of each step


class Drafter(Protocol):
    @property
    def forwards(self) -> int: ...      # draft-model forward passes so far (0 without a model)

    def propose(self, ids: list[int], k: int) -> Proposal: ...

    def update(self, n_accepted: int) -> None: ...

    def release(self) -> None: ...


class ModelDrafter:
    def __init__(self, model, vocab_size: int, cfg: SpecConfig, gen: torch.Generator, positions: int = 0):
        self.lm = cached_model(model, vocab_size, cfg.fast, positions)
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
        for _ in range(k):
            logits = self.lm.feed(x, keep=1)          # (1, V)
            q = warp(logits, self.cfg)
            x = choose(logits, q, self.cfg, self.gen)  # (1,): next draft token, fed next step
            tokens.append(x)
            qs.append(q)
        # The last draft is not fed: the cache holds ids + the first k-1 drafts.
        return Proposal(torch.cat(tokens), torch.cat(qs))

    def update(self, n_accepted: int) -> None:
        self.lm.crop(min(self.lm.length, self.context_len + n_accepted))

    def release(self) -> None:
        self.lm.release()


class PromptLookupDrafter:
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

    def update(self, n_accepted: int) -> None:
        pass

    def release(self) -> None:
        pass


def make_drafter(pair, cfg: SpecConfig, gen: torch.Generator, positions: int) -> Drafter:
    if cfg.drafter == "model":
        return ModelDrafter(pair.draft, pair.vocab_size, cfg, gen, positions)
    return PromptLookupDrafter(pair.vocab_size, pair.device, cfg.lookup_ngram)
