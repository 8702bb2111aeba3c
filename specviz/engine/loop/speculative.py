"""The speculative decoding loop (Leviathan et al. 2023; Chen et al. 2023) as an event generator.

Each round (`Rounds.step`, steps numbered as in gpt-fast's `speculative_decode`): (1) the drafter
proposes k tokens; (2) the target scores them all in one forward pass, which also yields the
distribution after the last draft; (3) acceptance.py decides how many to keep and draws the
correction or bonus; (4) the caches are cropped to the accepted prefix; (5) the tokens are
committed and the round's events built (`commit_round`); (6) adaptive k; (7) the tally and RoundEnd. The round's compute, event
building included, runs on the lane's own clock (lane.py); the events are yielded afterwards,
so a consumer (or the other lane of a race) never counts against this lane. Closing the
generator stops the work at the next yield, within one round.
"""
from __future__ import annotations

import threading
from typing import Iterator

import torch

from ...errors import ConfigError
from .acceptance import Verdict, verify
from ...runtime.cached_model import ModelWithCache, cached_model, positions_needed, step_shapes, uncached
from .config import SpecConfig
from .drafters import DRAFTERS, Drafter, Proposal, make_drafter, uses_draft_model
from .events import Accepted, Bonus, Drafted, Event, Rejected, Resampled, RoundEnd
from .lane import run_lane
from ..metrics.measures import LaneTally
from .output import Output, encode_prompt
from ...runtime.pair import ModelPair
from .rules import get_rule
from .sampling import make_generator
from ...runtime.timing import LaneClock, PhaseMarks


def speculate(pair: ModelPair, prompt: str | list[int], config: SpecConfig | None = None,
              cancel: threading.Event | None = None, lane: str = "spec") -> Iterator[Event]:
    """Speculative decoding of prompt; yields the events of every round, then `Done`."""
    cfg = config or SpecConfig()
    if uses_draft_model(cfg.drafter) and pair.draft is None:
        raise ConfigError(f"{pair.target_name} was loaded without a draft model: use a drafter without one "
                          f"({', '.join(n for n, d in DRAFTERS.items() if not d.uses_draft_model)})")
    if cfg.fast and uses_draft_model(cfg.drafter) and pair.draft_reads_features:
        raise ConfigError(f"the fast path (static cache) cannot yet hand {pair.draft_name} the target's hidden "
                          f"states it reads: turn the fast path off for this pair")
    out = Output(pair, encode_prompt(pair, prompt), cfg)    # bad input fails here, before any work
    if cfg.tree is not None:
        from .tree_rounds import run_tree       # a token tree instead of a chain (tree_rounds.py)
        return run_tree(pair, out, cfg, cancel, lane)
    return _run(pair, out, cfg, cancel, lane)


def _run(pair: ModelPair, out: Output, cfg: SpecConfig, cancel, lane: str) -> Iterator[Event]:
    gen = make_generator(pair.device, cfg.seed)
    positions = positions_needed(out, cfg)
    drafter = make_drafter(pair, cfg, gen, positions)
    target = cached_model(pair.target, pair.vocab_size, cfg.fast, positions,
                          keep_hidden=drafter.reads_target_features, graphs=cfg.cuda_graphs,
                          shapes=step_shapes(cfg, "verify"))
    rounds = Rounds(pair, out, target, drafter, cfg, gen, lane)
    named = {"rule": "forced" if cfg.forced_acceptance is not None else cfg.rule,
             "rule_lossless": cfg.forced_acceptance is None and get_rule(cfg.rule).lossless}
    yield from run_lane(out, cancel, lane, LaneClock(pair.device), rounds.tally, rounds.step, target, drafter,
                        extra_stats=named)


class Rounds:
    """One lane's rounds: the models, the k of the next round (adaptive k changes it) and the tally."""

    def __init__(self, pair: ModelPair, out: Output, target: ModelWithCache, drafter: Drafter, cfg: SpecConfig,
                 gen: torch.Generator, lane: str):
        self.pair, self.out, self.target, self.drafter = pair, out, target, drafter
        self.cfg, self.gen, self.lane = cfg, gen, lane
        self.k = cfg.k
        self.tally = LaneTally()
        # The verdicts' label: the exact rule keeps its "ratio" / "argmax"; any other rule its own name.
        self.rule = ("forced" if cfg.forced_acceptance is not None else "argmax" if cfg.greedy
                     else "ratio" if cfg.rule == "exact" else cfg.rule)

    @torch.inference_mode()
    def step(self, clock: LaneClock) -> list[Event]:
        """One round, numbered as in the papers; the phase marks split its time for the tally."""
        out, cfg, r = self.out, self.cfg, self.tally.rounds + 1
        phases = PhaseMarks(self.pair.device)     # draft | target pass | acceptance | bookkeeping, no extra sync
        before = len(out.ids)
        # A round emits at most k + 1 tokens: draft no more than the lane may still add, minus the bonus.
        planned = min(self.k, out.remaining - 1)

        # 1. Draft: up to `planned` tokens x_1..x_m, each with the draft distribution q_i it came from.
        proposal = self.drafter.propose(out.ids, planned) if planned > 0 else empty_proposal(self.pair)
        m = proposal.tokens.numel()
        phases.mark()

        # 2. One target pass over the uncached tokens and the drafts; keep the last m + 1 positions:
        #    row i is p_i, the target's distribution for draft i, row m the one after all drafts.
        fed_from = self.target.length
        logits = self.target.feed(torch.cat([uncached(self.target, out.ids), proposal.tokens]), keep=m + 1)
        phases.mark()

        # 3. Keep x_i with probability min(1, p_i / q_i) until the first rejection; draw the correction
        #    from norm(max(0, p - q)) there, or the bonus from p_m. One device-to-host read.
        v = verify(proposal.tokens, proposal.q, logits, cfg, self.gen)
        phases.mark()
        at = clock.read()

        # 4. Roll both caches back to the accepted prefix (the new token is fed next round).
        self.target.crop(before + v.n_accepted)
        self.drafter.update(v.n_accepted, self.target.hidden if self.drafter.reads_target_features else None,
                            fed_from)

        # 5. Commit the tokens in order, building the round's events; a stop rule may end it early.
        events = commit_round(out, v, r, m, self.rule, self.lane, at)
        accepted = sum(e.kind == "accepted" for e in events)
        emitted = len(out.ids) - before

        # 6. Adaptive k: one more after a fully accepted round, one fewer after a rejection.
        k_used = self.k
        if cfg.adaptive_k and m == planned > 0:
            self.k = min(self.k + 1, cfg.k_max) if v.n_accepted == m else max(self.k - 1, cfg.k_min)
        phases.mark()

        # 7. Tally the round and close it with RoundEnd (its phases' seconds and the running totals).
        draft_s, target_s, accept_s, bookkeeping_s = phases.seconds()
        for event in events:
            self.tally.add(event)
        end = RoundEnd(round=r, drafted=m, accepted=accepted, emitted=emitted, draft_s=draft_s,
                       verify_s=target_s + accept_s, target_s=target_s, accept_s=accept_s,
                       bookkeeping_s=bookkeeping_s, total_tokens=self.tally.tokens,
                       total_drafted=self.tally.drafted + m, total_accepted=self.tally.accepted, text=out.text,
                       k_next=self.k,
                       # Full: drafted the k planned for it, and no stop rule cut it short.
                       full=m == planned == k_used and emitted == accepted + 1,
                       lane=self.lane, t=clock.read())
        self.tally.add(end)
        events.append(end)
        return events


def commit_round(out: Output, v: Verdict, r: int, m: int, rule: str, lane: str, at: float) -> list[Event]:
    """Append round r's tokens to out and return its events: Drafted, an Accepted per kept draft, then
    Rejected + Resampled at the first rejection or Bonus after m accepted drafts. A stop rule (EOS, a
    stop string, the token budget) firing on a token ends the round there."""
    tok, drafts = out.detok, v.drafts

    def picture(i: int) -> dict:
        """Row i's p-and-q picture, pieces decoded (display only)."""
        if not v.pictures:
            return {}
        return {"picture": [(t, tok.piece_of(t), pr, qr) for t, pr, qr in v.pictures[i]],
                "overlap": v.overlap[i] if i < len(v.overlap) else None}

    events: list[Event] = [Drafted(round=r, token_ids=drafts, pieces=[tok.piece_of(d) for d in drafts], q=v.q,
                                   lane=lane, t=at)]
    for i in range(v.n_accepted):
        if out.stop_reason:
            return events
        piece = out.append(drafts[i])
        events.append(Accepted(round=r, position=i, token_id=drafts[i], piece=piece, p=v.p[i], q=v.q[i],
                               accept_prob=v.accept_prob[i], u=v.u[i] if v.u else None, rule=rule,
                               index=out.n_generated - 1, lane=lane, t=at, **picture(i)))
    if out.stop_reason:
        return events
    n = v.n_accepted
    if n < m:
        events.append(Rejected(round=r, position=n, token_id=drafts[n], piece=tok.piece_of(drafts[n]),
                               p=v.p[n], q=v.q[n], accept_prob=v.accept_prob[n], u=v.u[n] if v.u else None,
                               rule=rule, discarded=m - n - 1, lane=lane, t=at, **picture(n)))
        piece = out.append(v.next_token)
        events.append(Resampled(round=r, position=n, token_id=v.next_token, piece=piece, prob=v.next_prob,
                                p=v.next_p, top_residual=[(i, tok.piece_of(i), pr) for i, pr in v.top],
                                index=out.n_generated - 1, lane=lane, t=at, **picture(n)))
    else:
        piece = out.append(v.next_token)
        events.append(Bonus(round=r, position=n, token_id=v.next_token, piece=piece, p=v.next_p,
                            index=out.n_generated - 1, lane=lane, t=at, **picture(n)))
    return events


def empty_proposal(pair: ModelPair) -> Proposal:
    """No drafts (one token left to emit, or k = 0 planned): the round is a plain target step."""
    return Proposal(torch.zeros(0, dtype=torch.long, device=pair.device),
                    torch.zeros(0, pair.vocab_size, device=pair.device))
