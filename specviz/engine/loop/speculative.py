"""The speculative decoding loop (Leviathan et al. 2023; Chen et al. 2023) as an event generator, for a
chain of drafts and a token tree alike (SpecInfer, Miao et al. 2024): a chain is the tree of width one.

Each round (`Rounds.step`, steps numbered as in gpt-fast's `speculative_decode`): (1) the drafter
proposes a tree of the round's widths (a chain of k: k ones); (2) the target checks every node in one
pass (runtime/tree_pass.py: a chain's is the ordinary causal pass), which gives p at the root and after
every node; (3) the judge (acceptance.py) walks down from the root and draws the correction or bonus,
with one device-to-host read; (4) both caches keep only the accepted path (a chain's: a crop); (5)
adaptive k (chains); (6) the next round's draft, when its tokens are certain (ahead.py: on CUDA the
device drafts while the host goes on); (7) the tokens are committed and the round's events built
(`commit_round`); (8) the tally and RoundEnd. The round's compute, event building included, runs on
the lane's own clock (lane.py); the events are yielded afterwards, so a consumer (or the other lane of
a race) never counts against this lane. Closing the generator stops the work at the next yield, within one round.
A tree's events are a chain's with the tree in them: `Drafted` carries each node's parent, depth and
rank among its siblings, every `Accepted` / `Rejected` names its node and rank, `Resampled` / `Bonus`
the node they follow; a chain's leave those fields None.
"""
from __future__ import annotations

import threading
from typing import Iterator

import torch

from ...errors import ConfigError
from .acceptance import Verdict, judge
from .ahead import Ahead, committed, drafts_ahead
from ...runtime.cached_model import ModelWithCache, cached_model, positions_needed, step_shapes, uncached
from ...runtime.tree_pass import feed_proposal, keep_path
from .config import SpecConfig, planned_nodes
from .drafters import DRAFTERS, Drafter, make_drafter, uses_draft_model
from .events import Accepted, Bonus, Drafted, Event, Rejected, Resampled, RoundEnd
from .lane import run_lane
from ..metrics.measures import ChoiceTally, LaneTally
from .output import Output, encode_prompt
from ...runtime.pair import ModelPair
from .proposal import Proposal, empty
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
    if cfg.tree is not None and max(cfg.tree) > 1 and uses_draft_model(cfg.drafter) and pair.draft_reads_features:
        raise ConfigError(f"{pair.draft_name} reads the target's hidden states, which a tree's pass does not give "
                          f"for every node's children: draft a chain with it (leave tree unset)")
    out = Output(pair, encode_prompt(pair, prompt), cfg)    # bad input fails here, before any work
    return _run(pair, out, cfg, cancel, lane, drafts_ahead(pair.device))


def _run(pair: ModelPair, out: Output, cfg: SpecConfig, cancel, lane: str, ahead: bool) -> Iterator[Event]:
    gen = make_generator(pair.device, cfg.seed)
    positions = positions_needed(out, cfg)
    drafter = make_drafter(pair, cfg, gen, positions)
    target = cached_model(pair.target, pair.vocab_size, cfg.fast, positions,
                          keep_hidden=drafter.reads_target_features, graphs=cfg.cuda_graphs,
                          shapes=step_shapes(cfg, "verify"))
    rounds = Rounds(pair, out, target, drafter, cfg, gen, lane, ahead, cancel)
    yield from run_lane(out, cancel, lane, LaneClock(pair.device), rounds.tally, rounds.step, target, drafter,
                        extra_stats=rounds.stats)


class Rounds:
    """One lane's rounds: the models, the shape of the next round (adaptive k changes a chain's k), the
    tally, for a tree the per-depth tally of first / second choices, and the next round's draft when it
    was made ahead (`draft_ahead`: ahead.py)."""

    def __init__(self, pair: ModelPair, out: Output, target: ModelWithCache, drafter: Drafter, cfg: SpecConfig,
                 gen: torch.Generator, lane: str, draft_ahead: bool = False, cancel: threading.Event | None = None):
        self.pair, self.out, self.target, self.drafter = pair, out, target, drafter
        self.cfg, self.gen, self.lane = cfg, gen, lane
        self.draft_ahead, self.cancel = draft_ahead, cancel
        self.ahead: Ahead | None = None      # the next round's draft, made during this one
        self.k = cfg.k
        self.tally = LaneTally()
        self.tree = cfg.tree is not None
        self.choices = ChoiceTally() if self.tree else None
        # The verdicts' label: the exact rule keeps its "ratio" / "argmax"; any other rule its own name.
        self.rule = ("forced" if cfg.forced_acceptance is not None else "argmax" if cfg.greedy
                     else "ratio" if cfg.rule == "exact" else cfg.rule)
        # Read by run_lane when the lane ends (Done.stats); a tree's by_choice is refreshed every round.
        self.stats = {"rule": "forced" if cfg.forced_acceptance is not None else cfg.rule,
                      "rule_lossless": cfg.forced_acceptance is None and get_rule(cfg.rule).lossless}
        if self.tree:
            self.stats.update(tree=list(cfg.tree), tree_budget=cfg.tree_budget, by_choice=[])
            self.full_nodes = planned_nodes(cfg)

    @torch.inference_mode()
    def step(self, clock: LaneClock) -> list[Event]:
        """One round, numbered as in the papers; the phase marks split its time for the tally."""
        out, cfg, r = self.out, self.cfg, self.tally.rounds + 1
        before = len(out.ids)
        widths = self._widths(out.remaining)

        # 1. Draft: a tree of those widths (a chain: one node a depth), each node with the q it came from;
        #    made during the previous round when its tokens were certain (ahead.py), else now.
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            proposal, phases = ahead.take(out.ids, widths)
        else:
            phases = PhaseMarks(self.pair.device)     # draft | target pass | acceptance | bookkeeping, no extra sync
            proposal = self._propose(out.ids, widths)
            phases.mark()
        n = proposal.size

        # 2. One target pass over the uncached tokens and every node; row 0 of the logits is p at the
        #    root (the last committed token), row i + 1 p after node i.
        fed_from = self.target.length
        logits = feed_proposal(self.target, uncached(self.target, out.ids), proposal, fed_from)
        phases.mark()

        # 3. Judge: from the root, keep a child with min(1, r/q) (r: p less the siblings rejected before
        #    it), until a node's children are all rejected (correction from r) or it has none (bonus).
        v = judge(proposal, logits, cfg, self.gen, read=phases.read)   # the round's one sync
        phases.mark()
        at = clock.read()

        # 4. Both caches keep the context and the accepted path (the new token is fed next round).
        keep_path(self.target, before, v.path)
        self.drafter.update(v.path, self.target.hidden if self.drafter.reads_target_features else None, fed_from)

        # 5. Adaptive k (a chain): one more after a fully accepted round, one fewer after a rejection.
        k_used = self.k
        if cfg.adaptive_k and n == len(widths) > 0:
            self.k = min(self.k + 1, cfg.k_max) if len(v.path) == n else max(self.k - 1, cfg.k_min)

        # 6. The next round's draft, launched before this round's events are built (on CUDA the device
        #    drafts while the host builds them); its time is its own round's, not this one's.
        if self.draft_ahead:
            phases.pause()
            self.ahead = self._ahead(v)
            phases.resume()

        # 7. Commit the tokens in order, building the round's events; a stop rule may end it early.
        events = commit_round(out, proposal, v, r, self.rule, self.lane, at, self.tree)
        accepted = sum(e.kind == "accepted" for e in events)
        rejected = [e for e in events if e.kind == "rejected"]
        emitted = len(out.ids) - before
        phases.mark()

        # 8. Tally the round and close it with RoundEnd (its phases' seconds and the running totals).
        draft_s, target_s, accept_s, bookkeeping_s = phases.seconds()
        for event in events:
            self.tally.add(event)
        if self.tree:
            for event in events:
                self.choices.add(event)
            self.stats["by_choice"] = self.choices.rows()
        end = RoundEnd(round=r, drafted=n, accepted=accepted, emitted=emitted, draft_s=draft_s,
                       verify_s=target_s + accept_s, target_s=target_s, accept_s=accept_s,
                       bookkeeping_s=bookkeeping_s, total_tokens=self.tally.tokens,
                       total_drafted=self.tally.drafted + n, total_accepted=self.tally.accepted, text=out.text,
                       k_next=len(cfg.tree) if self.tree else self.k,
                       # Full: drafted the whole shape planned for it, and no stop rule cut it short.
                       full=n == (self.full_nodes if self.tree else k_used) and emitted == accepted + 1,
                       unjudged=n - accepted - len(rejected) - sum(e.discarded for e in rejected),
                       block=list(zip(v.weights, v.accept_prob, v.u)) if v.weights is not None else None,
                       lane=self.lane, t=clock.read())
        self.tally.add(end)
        events.append(end)
        return events

    def _widths(self, remaining: int) -> tuple[int, ...]:
        """The shape a round drafts when the lane may still add `remaining` tokens: a round emits at most
        depth + 1 tokens, so it drafts no deeper than that, minus the bonus."""
        shape = self.cfg.tree if self.tree else (1,) * self.k
        return tuple(shape[: max(0, min(len(shape), remaining - 1))])

    def _propose(self, ids: list[int], widths: tuple[int, ...]) -> Proposal:
        return self.drafter.propose(ids, widths) if widths else empty(self.pair.vocab_size, self.pair.device)

    def _ahead(self, v: Verdict) -> Ahead | None:
        """The next round's draft, made now from the tokens this round will commit, when that round is
        certain to draft from them (None: it is not, or it drafts nothing). Called after both caches kept
        the accepted path and adaptive k moved, before the events: the drafter and the random generator
        see what they would see after the events."""
        tokens = committed(v)
        widths = self._widths(self.out.remaining - len(tokens))
        if not widths or any(t in self.out.eos for t in tokens):   # the run ends here, or drafts nothing next
            return None
        if self.cancel is not None and self.cancel.is_set():        # Stop already pressed: no next round
            return None
        ids = self.out.ids + tokens
        phases = PhaseMarks(self.pair.device)
        proposal = self.drafter.propose(ids, widths)
        phases.mark()
        return Ahead(ids, widths, proposal, phases)


def commit_round(out: Output, proposal: Proposal, v: Verdict, r: int, rule: str, lane: str, at: float,
                 tree: bool) -> list[Event]:
    """Append round r's tokens to out and return its events: Drafted, an Accepted or Rejected per judged
    node in the order judged, then Resampled (every child of the last node judged rejected) or Bonus
    (it has none left to judge). A stop rule (EOS, a stop string, the token budget) firing on a token
    ends the round there. `tree`: the events name nodes, ranks and parents (a chain's leave them None)."""
    tok, ids, pictures = out.detok, v.tokens, v.pictures
    shape = dict(parents=list(proposal.parents), depths=list(proposal.depths),
                 choices=list(proposal.choices)) if tree else {}
    events: list[Event] = [Drafted(round=r, token_ids=ids, pieces=[tok.piece_of(t) for t in ids], q=v.q,
                                   lane=lane, t=at, **shape)]
    last = v.judged[-1] if v.corrected else None
    for node in v.judged:
        if out.stop_reason:
            return events
        common = dict(round=r, position=proposal.depths[node] - 1, token_id=ids[node], p=v.p[node], q=v.q[node],
                      accept_prob=v.accept_prob[node], u=v.u[node] if v.u else None, rule=rule, lane=lane, t=at,
                      **(dict(weight=v.weights[node], kept=len(v.path)) if v.weights is not None else {}),
                      picture=_named(tok, pictures.node(node, ids[node], v.p[node], v.q[node], node == last)),
                      overlap=pictures.overlap[node],
                      **(dict(node=node, choice=proposal.choices[node]) if tree else {}))
        if v.ok[node]:
            piece = out.append(ids[node])
            events.append(Accepted(piece=piece, index=out.n_generated - 1, **common))
        else:
            events.append(Rejected(piece=tok.piece_of(ids[node]), discarded=proposal.subtree(node), **common))
    if out.stop_reason:
        return events
    position, after = len(v.path), dict(parent=v.parent) if tree else {}
    piece = out.append(v.next_token)
    if v.corrected:
        events.append(Resampled(round=r, position=position, token_id=v.next_token, piece=piece, prob=v.next_prob,
                                p=v.next_p, top_residual=[(i, tok.piece_of(i), pr) for i, pr in v.top],
                                weight=([1.0] + v.weights)[len(v.path)] if v.weights is not None else None,   # w_tau, w_0 = 1
                                index=out.n_generated - 1, lane=lane, t=at, overlap=pictures.overlap[last],
                                picture=_named(tok, pictures.node(last, ids[last], v.p[last], v.q[last], True)),
                                **after))
    else:
        events.append(Bonus(round=r, position=position, token_id=v.next_token, piece=piece, p=v.next_p,
                            index=out.n_generated - 1, lane=lane, t=at,
                            picture=_named(tok, pictures.row(v.parent + 1)), **after))
    return events


def _named(tok, picture: list) -> list:
    """A picture's (id, p, q) entries with each id's piece decoded (display only)."""
    return [(t, tok.piece_of(t), pr, qr) for t, pr, qr in picture]
