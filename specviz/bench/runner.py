"""Timed runs of each decoding method on one prompt, in one process, on one device.

Every method is timed the same way: wall clock around the whole call, the device
synchronized before each clock read. Methods on one prompt run in a rotating order, after
a warm-up run each, and the median over repeats is kept (machines are noisy; ratios taken
within one run are what we report). Each specviz run also keeps the seconds of its units of work (a
speculative lane's rounds, a plain lane's steps): with a single rotation, their spread is the interval
the verdict judges (engine/analysis/race_spread.py), as a single race's on the page.
"""
from __future__ import annotations

import logging
import statistics
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace

import torch

from ..engine import SpecConfig, decode_baseline, speculate
from ..engine.analysis import race_spread
from ..engine.metrics import measures
from ..runtime.lean_draft import LeanCachedModel, lean_weights
from ..engine.metrics.measures import LaneStats
from ..engine.loop.drafters import PROMPT_LOOKUP, uses_draft_model
from ..runtime.pair import ModelPair
from ..runtime.timing import synchronize


@dataclass
class Timing:
    tokens: int
    seconds: float
    stats: LaneStats | None = None     # the run's Done.stats (specviz runs; None for transformers')
    units: list[float] | None = None   # seconds of each round (speculative) or step (plain); None for transformers'

    @property
    def rate(self) -> float | None:
        """Tokens per second (measures.rate: None when nothing was timed or written)."""
        return measures.rate(self.tokens, self.seconds)


def _timed(pair: ModelPair, fn) -> tuple[float, object]:
    synchronize(pair.device)
    start = time.perf_counter()
    out = fn()
    synchronize(pair.device)
    return time.perf_counter() - start, out


def specviz_run(pair: ModelPair, ids: list[int], cfg: SpecConfig, speculative: bool) -> Timing:
    decode = speculate if speculative else decode_baseline
    seconds, events = _timed(pair, lambda: list(decode(pair, ids, cfg)))
    done = events[-1]
    return Timing(len(done.token_ids), seconds, done.stats, work_units(events, speculative))


def work_units(events: list, speculative: bool) -> list[float]:
    """The seconds of a run's units of work, as race_spread.py reads a race's: a speculative lane's
    rounds (draft and verify), a plain lane's steps (the gaps between its tokens on its own clock)."""
    if speculative:
        return race_spread.round_seconds([e for e in events if e.kind == "round_end"])
    return race_spread.steps([0.0] + [e.t for e in events if e.kind in measures.TOKEN_KINDS])


def hf_kwargs(cfg: SpecConfig) -> dict:
    """generate() settings equal to cfg's sampling (transformers' own defaults switched off)."""
    if cfg.greedy:
        return {"do_sample": False, "temperature": None, "top_k": None, "top_p": None}
    return {"do_sample": True, "temperature": cfg.temperature, "top_k": cfg.top_k or None,
            "top_p": cfg.top_p if cfg.top_p < 1 else None}


@torch.inference_mode()
def hf_generate(pair: ModelPair, ids: list[int], cfg: SpecConfig, **extra) -> list[int]:
    """transformers' `generate()` on the target with cfg's sampling: the new token ids (EOS kept)."""
    x = torch.tensor([ids], device=pair.device)
    out = pair.target.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=cfg.max_new_tokens,
                               pad_token_id=pair.tokenizer.pad_token_id or 0, **hf_kwargs(cfg), **extra)
    return out[0, len(ids):].tolist()


@contextmanager
def assistant_settings(model, cfg: SpecConfig):
    """The draft's own generation config set to cfg's rounds for the length of a call, then restored.

    transformers 5's assisted generation reads `num_assistant_tokens`, its schedule and
    `assistant_confidence_threshold` from the *assistant's* generation config, not from
    `generate()`'s arguments (candidate_generator.py); left alone they are 20 drafts a round and a
    0.4 confidence stop. Set here: k drafts, constant, and specviz's confidence stop (transformers'
    ConfidenceCriteria keeps the doubted token and drafts no more, as drafters.py does; it reads the
    draft's processed scores, the same softmax as specviz's when greedy)."""
    settings = {"num_assistant_tokens": cfg.k, "num_assistant_tokens_schedule": "constant",
                "assistant_confidence_threshold": cfg.confidence_stop}
    config = model.generation_config
    before = {name: getattr(config, name, None) for name in settings}
    for name, value in settings.items():
        setattr(config, name, value)
    generation_log = logging.getLogger("transformers.generation.utils")
    generation_log.addFilter(_not_assisted_own_call)
    try:
        yield
    finally:
        generation_log.removeFilter(_not_assisted_own_call)
        for name, value in before.items():
            setattr(config, name, value)


def _not_assisted_own_call(record: logging.LogRecord) -> bool:
    """False for the deprecation warning transformers 5 logs about its *own* call: assisted generation's
    candidate generator calls the assistant's generate() with both a generation_config and generation
    arguments (candidate_generator.py, `_generate_candidates`). Nothing a bench user passed, so not shown."""
    return not record.getMessage().startswith("Passing `generation_config` together with generation-related")


def hf_run(pair: ModelPair, ids: list[int], cfg: SpecConfig, assisted: bool) -> Timing:
    extra, rounds = {}, nullcontext()
    if assisted and cfg.drafter == PROMPT_LOOKUP:
        extra = {"prompt_lookup_num_tokens": cfg.k, "max_matching_ngram_size": cfg.lookup_ngram}
    elif assisted:
        extra, rounds = {"assistant_model": pair.draft}, assistant_settings(pair.draft, cfg)
    torch.manual_seed(cfg.seed)
    with rounds:
        seconds, new_ids = _timed(pair, lambda: hf_generate(pair, ids, cfg, **extra))
    return Timing(len(new_ids), seconds)


METHODS = {
    "specviz plain": lambda pair, ids, cfg: specviz_run(pair, ids, cfg, speculative=False),
    "specviz speculative": lambda pair, ids, cfg: specviz_run(pair, ids, cfg, speculative=True),
    "hf generate": lambda pair, ids, cfg: hf_run(pair, ids, cfg, assisted=False),
    "hf assisted": lambda pair, ids, cfg: hf_run(pair, ids, cfg, assisted=True),
    # The fast path (static cache + compiled steps), for both lanes alike.
    "specviz plain (fast)": lambda pair, ids, cfg: specviz_run(pair, ids, replace(cfg, fast=True), speculative=False),
    "specviz speculative (fast)": lambda pair, ids, cfg: specviz_run(pair, ids, replace(cfg, fast=True),
                                                                     speculative=True),
}
FAST_METHODS = ["specviz plain (fast)", "specviz speculative (fast)"]


def first_use_seconds(pair: ModelPair, ids: list[int], cfg: SpecConfig) -> dict:
    """Seconds of each fast method's first run (compiling its step shapes), before any timing."""
    return {name: _timed(pair, lambda: METHODS[name](pair, ids, cfg))[0] for name in FAST_METHODS}


def measure_prompt(pair: ModelPair, ids: list[int], cfg: SpecConfig, methods: list[str], repeats: int,
                   pair_for: dict[str, ModelPair] | None = None) -> dict:
    """{method: [Timing per repeat]} for one prompt: warm-up, then `repeats` rotations of the methods
    (`pair_for`: a method that runs on another pair, e.g. transformers' assisted generation with a
    plain draft when specviz's draft reads target features, which generate() cannot feed it).

    Within a rotation the methods run back to back, so ratios between methods are best taken
    per rotation (`paired_ratio`): a machine that slows down for a minute slows both sides."""
    pair_for = pair_for or {}
    for name in methods:
        METHODS[name](pair_for.get(name, pair), ids, cfg)     # warm-up (caches, allocator, kernels)
    runs: dict[str, list[Timing]] = {name: [] for name in methods}
    for r in range(repeats):
        order = methods[r % len(methods):] + methods[: r % len(methods)]
        for name in order:
            runs[name].append(METHODS[name](pair_for.get(name, pair), ids, cfg))
    return runs


def median_timing(timings: list[Timing]) -> Timing:
    ordered = sorted(timings, key=lambda t: t.rate or 0.0)
    return ordered[len(ordered) // 2]


def paired_ratio(a: list[Timing], b: list[Timing]) -> float | None:
    """Median over rotations of rate(a) / rate(b), each pair measured in the same rotation."""
    return median([x.rate / y.rate for x, y in zip(a, b) if x.rate and y.rate])


def phase_breakdown(pair: ModelPair, ids: list[int], cfg: SpecConfig) -> dict:
    """Where a speculative round's time goes: the models' feeds timed by wrapping each cache path's
    `feed` (eager, lean draft, CUDA graphs, torch.compile), synchronized before and after. Not the
    models' `forward`: a graph replay never calls it, and a synchronize inside a forward being
    captured would break the capture (a feed captures before its step, never during a synchronize)."""
    from ..runtime.cached_model import CachedModel
    from ..runtime.graph_model import GraphCachedModel
    from ..runtime.static_model import StaticCachedModel
    spent = {"draft forward": 0.0, "target forward": 0.0}
    originals = []

    def wrap(owner):
        original = owner.feed
        originals.append((owner, "feed", original))

        def timed(self, *args, **kwargs):
            draft = owner is LeanCachedModel or (pair.draft is not None and getattr(self, "model", None) is pair.draft)
            synchronize(pair.device)
            start = time.perf_counter()
            out = original(self, *args, **kwargs)
            synchronize(pair.device)
            spent["draft forward" if draft else "target forward"] += time.perf_counter() - start
            return out
        owner.feed = timed

    for owner in (CachedModel, GraphCachedModel, StaticCachedModel, LeanCachedModel):
        wrap(owner)
    if pair.draft is not None and uses_draft_model(cfg.drafter):
        # A draft on the CPU steps through the lean path (runtime/lean_draft.py); its weights are
        # built (and their format timed) here, before the clock starts, outside any round.
        lean_weights(pair.draft)
    try:
        events = list(speculate(pair, ids, cfg))
    finally:
        for owner, name, original in reversed(originals):
            setattr(owner, name, original)
    ends = [e for e in events if e.kind == "round_end"]
    draft = sum(e.draft_s for e in ends)
    verify = sum(e.verify_s for e in ends)
    book = sum(e.bookkeeping_s for e in ends)
    total = draft + verify + book
    parts = {
        "draft forward": spent["draft forward"],
        "draft sampling": max(0.0, draft - spent["draft forward"]),
        "target forward": spent["target forward"],
        "acceptance and sampling": max(0.0, verify - spent["target forward"]),
        "cache, detokenizing and events": book,
    }
    return {"rounds": len(ends), "seconds_per_round": total / max(1, len(ends)),
            "share": {k: v / total for k, v in parts.items()} if total else {},
            "outside_forwards": (total - spent["draft forward"] - spent["target forward"]) / total if total else 0.0}


def median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def paired_cost_ratio(spec_runs, plain_runs) -> float | None:
    """c: seconds per draft step in the speculative lane / seconds per token of plain decoding,
    each rotation's pair taken together, median over rotations."""
    return median([measures.per_plain_step(s.stats.tally.draft_s, s.stats.tally.drafted, p.rate)
                   for s, p in zip(spec_runs, plain_runs) if s.stats.tally.drafted and p.rate])


def paired_verify_ratio(spec_runs, plain_runs) -> float | None:
    """v: seconds per verify phase (target pass over k + 1 tokens, then acceptance) / seconds per
    plain token, paired the same way."""
    return median([measures.per_plain_step(s.stats.tally.verify_s, s.stats.tally.rounds, p.rate)
                   for s, p in zip(spec_runs, plain_runs) if s.stats.tally.rounds and p.rate])
