"""The speculative decoding loop (Leviathan et al. 2023; Chen et al. 2023) as an event generator.

Each round: (1) the drafter proposes k tokens; (2) the target scores them all in one
forward pass, which also yields the distribution after the last draft; (3) acceptance.py
decides how many to keep and draws the correction or bonus; (4) the caches are cropped to
the accepted prefix; (5) the round's events are emitted. The round's compute, event
building included, runs on the lane's own clock; the events are yielded afterwards, so a
consumer (or the other lane of a race) never counts against this lane. Closing the
generator stops the work at the next yield, within one round.
"""
from __future__ import annotations

import threading
from typing import Iterator

import torch

from ..errors import ConfigError
from .acceptance import verify
from .cached_model import cached_model, positions_needed
from .config import SpecConfig
from .drafters import ModelDrafter, PromptLookupDrafter, Proposal
from .events import Accepted, Bonus, Done, Drafted, Event, Rejected, Resampled, RoundEnd
from .output import Output, encode_prompt
from .pair import ModelPair
from .sampling import make_generator
from .summary import Totals
from .timing import LaneClock, PhaseMarks, run_lane


def speculate(pair: ModelPair, prompt: str | list[int], config: SpecConfig | None = None,
              cancel: threading.Event | None = None, lane: str = "spec") -> Iterator[Event]:
    """Speculative decoding of prompt; yields the events of every round, then `Done`."""
    config = config or SpecConfig()
    if config.drafter == "model" and pair.draft is None:
        raise ConfigError(f"{pair.target_name} was loaded without a draft model: use the prompt_lookup drafter")
    out = Output(pair, encode_prompt(pair, prompt), config)
    return _run(pair, out, config, cancel, lane)


def _run(pair: ModelPair, out: Output, cfg: SpecConfig, cancel, lane: str) -> Iterator[Event]:
    gen = make_generator(pair.device, cfg.seed)
    positions = positions_needed(out, cfg)
    target = cached_model(pair.target, pair.vocab_size, cfg.fast, positions)
    if cfg.drafter == "model":
        drafter = ModelDrafter(pair.draft, pair.vocab_size, cfg, gen, positions)
    else:
        drafter = PromptLookupDrafter(pair.vocab_size, pair.device, cfg.lookup_ngram)
    clock, totals, k = LaneClock(pair.device), Totals(), [cfg.k]   # k changes between rounds (adaptive)

    def step(clock: LaneClock) -> list[Event]:
        events, k[0] = _round(pair, out, target, drafter, cfg, gen, clock, totals, k[0], lane)
        return events

    try:
        yield from run_lane(out, cancel, step, clock)
    finally:                       # also when the consumer closes the lane early
        target.release()
        drafter.release()
    totals.target_forwards, totals.draft_forwards = target.forwards, drafter.forwards
    yield Done(text=out.text, token_ids=out.generated, stop_reason=out.stop_reason or "max_tokens",
               stats=totals.summary(clock.total), lane=lane, t=clock.total)


@torch.inference_mode()
def _round(pair, out: Output, target: CachedModel, drafter, cfg: SpecConfig, gen, clock: LaneClock,
           totals: Totals, k: int, lane: str) -> tuple[list[Event], int]:
    r = totals.rounds + 1
    phases = PhaseMarks(pair.device)     # draft | verify | bookkeeping, with no extra device sync
    before = len(out.ids)
    # A round emits at most k + 1 tokens: draft no more than the lane may still add, minus the bonus.
    k_round = min(k, out.remaining - 1)

    # 1. Draft.
    proposal = drafter.propose(out.ids, k_round) if k_round > 0 else _empty(pair)
    m = proposal.tokens.numel()
    phases.mark()

    # 2. One target pass over the uncached tokens and the drafts; keep the last m + 1 positions:
    #    row i is the target's distribution for draft i, row m the one after all drafts.
    fresh = torch.tensor(out.ids[target.length:], dtype=torch.long, device=target.device)
    logits = target.feed(torch.cat([fresh, proposal.tokens]), keep=m + 1)   # (m+1, V)

    # 3. Accept/reject; draw the correction or the bonus. One device-to-host read.
    v = verify(proposal.tokens, proposal.q, logits, cfg, gen)
    drafts = v.drafts
    phases.mark()
    verified_at = clock.read()

    # 4. Roll both caches back to the accepted prefix (the new token is fed next round).
    target.crop(before + v.n_accepted)
    drafter.update(v.n_accepted)

    # 5. Commit tokens in order and build the round's events; a stop rule may end it early.
    tok = out.detok
    events: list[Event] = [Drafted(r, drafts, [tok.piece_of(d) for d in drafts], v.q, lane, verified_at)]
    accepted = rejected = 0
    rule = "forced" if cfg.forced_acceptance is not None else "argmax" if cfg.greedy else "ratio"
    for i in range(v.n_accepted):
        if out.stop_reason:
            break
        piece = out.append(drafts[i])
        accepted += 1
        events.append(Accepted(r, i, drafts[i], piece, v.p[i], v.q[i], v.accept_prob[i],
                               v.u[i] if v.u else None, rule, out.n_generated - 1, lane, verified_at))
    if not out.stop_reason:
        n = v.n_accepted
        if n < m:
            rejected = 1
            events.append(Rejected(r, n, drafts[n], tok.piece_of(drafts[n]), v.p[n], v.q[n], v.accept_prob[n],
                                   v.u[n] if v.u else None, rule, m - n - 1, lane, verified_at))
            piece = out.append(v.next_token)
            top = [(i, tok.piece_of(i), pr) for i, pr in v.top]
            events.append(Resampled(r, n, v.next_token, piece, v.next_prob, v.next_p, top,
                                    out.n_generated - 1, lane, verified_at))
        else:
            piece = out.append(v.next_token)
            events.append(Bonus(r, n, v.next_token, piece, v.next_p, out.n_generated - 1, lane, verified_at))

    emitted = len(out.ids) - before
    totals.add_round(drafted=m, accepted=accepted, emitted=emitted, rejected=rejected)
    if m == k_round == k and emitted == accepted + 1:      # a full round, not cut by a stop rule
        totals.full_rounds += 1
        totals.full_round_tokens += emitted
    # Adaptive k: one more after a fully accepted round, one fewer after a rejection.
    if cfg.adaptive_k and m == k_round > 0:
        k = min(k + 1, cfg.k_max) if v.n_accepted == m else max(k - 1, cfg.k_min)
    phases.mark()
    draft_s, verify_s, bookkeeping_s = phases.seconds()
    totals.draft_s += draft_s
    totals.verify_s += verify_s
    now = clock.read()
    events.append(RoundEnd(r, m, accepted, emitted, draft_s, verify_s, bookkeeping_s,
                           totals.tokens, totals.drafted, totals.accepted, out.text, k, lane, now))
    return events, k


def _empty(pair: ModelPair) -> Proposal:
    return Proposal(torch.zeros(0, dtype=torch.long, device=pair.device),
                    torch.zeros(0, pair.vocab_size, device=pair.device))
