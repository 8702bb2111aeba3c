"""The speculative loop with a token tree instead of a chain (SpecInfer, Miao et al. 2024), as events.

Each round (`TreeRounds.step`), numbered as the chain's loop (speculative.py): (1) the tree drafter
proposes a tree of the configured shape (tree_drafter.py); (2) the target checks every node in one
pass, each node seeing the context and its ancestors, at the position of its depth
(runtime/tree_pass.py), which gives p at the root and at every node; (3) the verdict walks down
the tree (tree_accept.py: greedy follows the target's argmax, sampling uses recursive rejection
sampling); (4) both caches keep only the accepted path; (5) the tokens are committed and the
round's events built (`commit_tree_round`); (6) the tally and RoundEnd. A chain is the tree of
width 1 at every depth. The events are the chain's, with the tree in them: `Drafted` carries each
node's parent, depth and rank among its siblings, every `Accepted` / `Rejected` names its node and
rank, `Resampled` / `Bonus` the node they follow. Trees run eagerly (`CachedModel`, no CUDA graphs
or compiled steps: config.py refuses those), with the model drafter and the exact rule.
"""
from __future__ import annotations

from typing import Iterator

import torch

from ...errors import ConfigError
from ..metrics.measures import ChoiceTally, LaneTally
from ...runtime.cached_model import CachedModel, uncached
from ...runtime.pair import ModelPair
from ...runtime.timing import LaneClock, PhaseMarks
from ...runtime.tree_pass import ancestry, keep_path, masked_feed, visibility
from .config import SpecConfig, planned_nodes
from .events import Accepted, Bonus, Drafted, Event, Rejected, Resampled, RoundEnd
from .lane import run_lane
from .output import Output
from .sampling import make_generator
from .tree_accept import TreeVerdict, verify_tree
from .tree_drafter import TreeDrafter, TreeProposal, empty_tree


def run_tree(pair: ModelPair, out: Output, cfg: SpecConfig, cancel, lane: str) -> Iterator[Event]:
    """Tree speculative decoding of out's prompt: the events of every round, then `Done`."""
    if pair.draft is None or pair.draft_reads_features:
        raise ConfigError(f"a token tree needs a plain draft model; {pair.draft_name if pair.draft is not None else 'none'} "
                          f"cannot draft one here: leave tree unset")
    gen = make_generator(pair.device, cfg.seed)
    drafter = TreeDrafter(pair.draft, pair.vocab_size, cfg, gen)
    target = CachedModel(pair.target, pair.vocab_size)
    rounds = TreeRounds(pair, out, target, drafter, cfg, gen, lane)
    return run_lane(out, cancel, lane, LaneClock(pair.device), rounds.tally, rounds.step, target, drafter,
                    extra_stats=rounds.stats)


class TreeRounds:
    """One lane's tree rounds: the models, the tally, and the per-depth tally of first / second choices."""

    def __init__(self, pair: ModelPair, out: Output, target: CachedModel, drafter: TreeDrafter, cfg: SpecConfig,
                 gen: torch.Generator, lane: str):
        self.pair, self.out, self.target, self.drafter = pair, out, target, drafter
        self.cfg, self.gen, self.lane = cfg, gen, lane
        self.tally, self.choices = LaneTally(), ChoiceTally()
        self.rule = "argmax" if cfg.greedy else "ratio"
        # Read by run_lane when the lane ends (Done.stats): by_choice is refreshed after every round.
        self.stats = {"rule": cfg.rule, "rule_lossless": True, "tree": list(cfg.tree), "tree_budget": cfg.tree_budget,
                      "by_choice": []}

    @torch.inference_mode()
    def step(self, clock: LaneClock) -> list[Event]:
        out, cfg, r = self.out, self.cfg, self.tally.rounds + 1
        phases = PhaseMarks(self.pair.device)
        before = len(out.ids)
        # A round emits at most depth + 1 tokens: no deeper than the lane may still add, minus the bonus.
        shape = cfg.tree[: max(0, min(len(cfg.tree), out.remaining - 1))]

        # 1. Draft the tree: nodes with their tokens, parents, depths, ranks and the q each was drawn from.
        tree = self.drafter.propose(out.ids, shape) if shape else empty_tree(self.pair.vocab_size, self.pair.device)
        phases.mark()

        # 2. One target pass: the uncached tokens (causal), then every node (context + ancestors, position
        #    by depth). Row 0 of the kept logits is p at the root, row i + 1 at node i.
        fresh = uncached(self.target, out.ids)
        base = self.target.length
        positions = torch.cat([torch.arange(base, before),
                               torch.tensor([before - 1 + d for d in tree.depths], dtype=torch.long)])
        logits = masked_feed(self.target, torch.cat([fresh, tree.tokens]), positions,
                             visibility(base, fresh.numel(), ancestry(tree.parents)), keep=tree.size + 1)
        phases.mark()

        # 3. Walk down the tree: judge each node's children in rank order; a correction or a bonus ends it.
        verdict = verify_tree(tree, logits, cfg, self.gen)
        phases.mark()
        at = clock.read()

        # 4. Both caches keep the context and the accepted path (node i sat at slot before + i).
        keep_path(self.target, before, verdict.path)
        if shape:
            self.drafter.update(verdict.path)

        # 5. Commit the tokens in order, building the round's events; a stop rule may end it early.
        events = commit_tree_round(out, tree, verdict, r, self.rule, self.lane, at)
        accepted = sum(e.kind == "accepted" for e in events)
        rejected = [e for e in events if e.kind == "rejected"]
        emitted = len(out.ids) - before
        phases.mark()

        # 6. Tally the round and close it with RoundEnd.
        draft_s, target_s, accept_s, bookkeeping_s = phases.seconds()
        for event in events:
            self.tally.add(event)
            self.choices.add(event)
        self.stats["by_choice"] = self.choices.rows()
        end = RoundEnd(round=r, drafted=tree.size, accepted=accepted, emitted=emitted, draft_s=draft_s,
                       verify_s=target_s + accept_s, target_s=target_s, accept_s=accept_s,
                       bookkeeping_s=bookkeeping_s, total_tokens=self.tally.tokens,
                       total_drafted=self.tally.drafted + tree.size, total_accepted=self.tally.accepted,
                       text=out.text, k_next=len(cfg.tree),
                       full=tree.size == planned_nodes(cfg) and emitted == accepted + 1,
                       unjudged=tree.size - accepted - len(rejected) - sum(e.discarded for e in rejected),
                       lane=self.lane, t=clock.read())
        self.tally.add(end)
        events.append(end)
        return events


def commit_tree_round(out: Output, tree: TreeProposal, v: TreeVerdict, r: int, rule: str, lane: str,
                      at: float) -> list[Event]:
    """Append round r's tokens to out and return its events: Drafted (the tree), an Accepted or Rejected
    per judged node in the order judged, then Resampled (every child of the last node rejected) or
    Bonus (it has none). A stop rule firing on a token ends the round there."""
    tok = out.detok
    ids = v.tokens                          # read from the device once, by verify_tree
    events: list[Event] = [Drafted(round=r, token_ids=ids, pieces=[tok.piece_of(t) for t in ids], q=v.q_own,
                                   parents=list(tree.parents), depths=list(tree.depths),
                                   choices=list(tree.choices), lane=lane, t=at)]
    for j in v.judged:
        if out.stop_reason:
            return events
        node = j.node
        common = dict(round=r, position=tree.depths[node] - 1, token_id=ids[node], p=j.p, q=j.q,
                      accept_prob=j.accept_prob, u=j.u, rule=rule, node=node, choice=tree.choices[node],
                      lane=lane, t=at)
        if j.accepted:
            piece = out.append(ids[node])
            events.append(Accepted(piece=piece, index=out.n_generated - 1, **common))
        else:
            events.append(Rejected(piece=tok.piece_of(ids[node]), discarded=tree.subtree(node), **common))
    if out.stop_reason:
        return events
    position = len(v.path)
    piece = out.append(v.next_token)
    if v.corrected:
        events.append(Resampled(round=r, position=position, token_id=v.next_token, piece=piece, prob=v.next_prob,
                                p=v.next_p, top_residual=[(i, tok.piece_of(i), pr) for i, pr in v.top],
                                index=out.n_generated - 1, parent=v.parent, lane=lane, t=at))
    else:
        events.append(Bonus(round=r, position=position, token_id=v.next_token, piece=piece, p=v.next_p,
                            index=out.n_generated - 1, parent=v.parent, lane=lane, t=at))
    return events
