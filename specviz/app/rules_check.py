"""The rules tab's logic: each registered acceptance rule judged on one position, and raced.

For the first position of a prompt it takes the target's p and the draft's q, keeps the tokens that
carry nearly all their mass (renormalized there), and gives each rule's exact output law
(rules.output_distribution) with its total variation to p, its expected acceptance in closed form,
and a Monte-Carlo check (rules.simulate, chi-square p-value from engine/analysis/lossless.py): exact,
block and sample_match pass, lossy rules fail when their distance is larger than the draws' noise (at
one position the block rule is the exact rule; it differs over a chain's block). Each rule is then
raced against plain decoding through the app's decoding slots (a, a_d, tau, drafts kept per round,
speedup from engine/metrics/measures.py). The view (view/tabs/rules.py) draws the rows; this computes them.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ..engine.analysis.lossless import ALPHA, chi_square_pvalue   # one significance level for every verdict
from ..engine.analysis.stats import RunStats
from ..engine.loop.events import from_dict
from ..engine.loop.rules import REGISTRY, get_rule, output_distribution, simulate
from ..engine.metrics import measures
from . import gpu_calls
from .state import AppState

RULES = tuple(entry.shown for entry in REGISTRY.values())     # one row per registered rule
DRAWS = 4000                   # Monte-Carlo draws of the first position per rule
COVER, SUPPORT_CAP = 0.9999, 1024   # the first position's tokens: this much of p and of q, at most this many


@dataclass
class FirstPosition:
    """The first position's p and q on the tokens that carry nearly all their mass, renormalized there."""
    ids: list[int]                 # vocabulary ids of the support, most likely first
    p: torch.Tensor                # (S,) float64
    q: torch.Tensor                # (S,) float64
    cover_p: float                 # the share of p (and of q) the support held before renormalizing
    cover_q: float


@dataclass
class RuleRow:
    name: str
    lossless: bool
    description: str
    expected: float | None = None  # first position: E[accept] in closed form
    tv: float | None = None        # first position: total variation between the rule's exact output law and p
    mc_p: float | None = None      # Monte-Carlo chi-square p-value against p
    a: float | None = None
    a_d: float | None = None
    tau: float | None = None
    kept: float | None = None      # drafts kept per round (accepted / rounds)
    speedup: float | None = None
    tokens: int = 0
    recorded: str | None = None    # the rule the run's Done.stats names

    @property
    def mc_passed(self) -> bool | None:
        return None if self.mc_p is None else self.mc_p >= ALPHA


def first_position(p: torch.Tensor, q: torch.Tensor) -> FirstPosition:
    """The most likely tokens of p + q until both are covered to COVER (at most SUPPORT_CAP)."""
    p, q = p.double().flatten(), q.double().flatten()
    order = torch.argsort(p + q, descending=True)
    both = torch.minimum(torch.cumsum(p[order], 0), torch.cumsum(q[order], 0))
    n = int(min(SUPPORT_CAP, int((both < COVER).sum()) + 1, p.numel()))
    idx = order[:n]
    cover_p, cover_q = float(p[idx].sum()), float(q[idx].sum())
    return FirstPosition(idx.tolist(), p[idx] / cover_p, q[idx] / cover_q, cover_p, cover_q)


def check_rule(row: RuleRow, fp: FirstPosition, draws: int, seed: int) -> torch.Tensor:
    """Fill the row's first-position figures; returns the rule's exact output law on the support."""
    rule = get_rule(row.name)
    law = output_distribution(rule, fp.p, fp.q)
    row.expected = float(rule.expected_acceptance(fp.p, fp.q))
    row.tv = 0.5 * float((law - fp.p).abs().sum())
    emitted, _ = simulate(rule, fp.p, fp.q, draws, torch.Generator().manual_seed(seed))
    counts = torch.bincount(emitted, minlength=fp.p.numel())
    row.mc_p = chi_square_pvalue(counts.tolist(), fp.p.tolist())
    return law


def race_rule(app: AppState, run, row: RuleRow, stop) -> None:
    """Race the row's rule against plain decoding through the app's slots; fill a, a_d, tau, speedup."""
    cfg = replace(run.config, rule=row.name)
    stats = RunStats(cfg.k)
    records = gpu_calls.race_records(gpu_calls.handle(app), run.preset.key, run.ids, cfg.to_dict())
    for record in app.decoders.sliced(records, stop):
        stats.add(from_dict(record))
    t = stats.tallies["spec"]
    row.a, row.a_d, row.tau = (measures.acceptance_rate(t), measures.draft_acceptance_rate(t),
                               measures.mean_acceptance_length(t))
    row.kept = measures.kept_per_round(t)
    row.speedup, row.tokens = stats.measured_speedup(), t.tokens
    row.recorded = getattr(stats.done.get("spec"), "rule", None)


def rule_rows() -> list[RuleRow]:
    """One empty row per registered rule, in the registry's order."""
    return [RuleRow(rule.name, rule.lossless, rule.description) for rule in map(get_rule, RULES)]


def check_first_position(rows: list[RuleRow], p: torch.Tensor, q: torch.Tensor, draws: int,
                         seed: int) -> tuple[FirstPosition, list[torch.Tensor]]:
    """Fill every row's first-position figures; returns the support and each rule's exact law on it."""
    fp = first_position(p, q)
    return fp, [check_rule(row, fp, draws, seed) for row in rows]
