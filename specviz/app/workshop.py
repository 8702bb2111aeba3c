"""The workshop's exercises: predict first, then run, then the measured answer and why.

Each exercise names the pair it needs by role (`text`: meaningful text, the SmolLM2 pair when
it is fetched, else the first preset; `fast`: the bundled pair when present), runs real
measured decoding through app/gpu_calls.py (so on ZeroGPU it runs on the GPU worker), and returns
an `Outcome`: the measured value (comparable with the learner's prediction), and a two-sentence
"why" written from that run's own figures. Nothing here is precomputed or estimated.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..engine import SpecConfig
from ..engine.loop.drafters import PROMPT_LOOKUP
from ..engine.metrics import measures
from ..engine.loop.events import from_dict
from ..models.fetch import FETCHABLE, fetched
from ..engine.analysis.lossless import draft_contrast, samples_to_separate, verdict_line
from ..engine.analysis.ledger import Ledger, of_race, race_tallies
from ..engine.analysis.repeat import repeated
from ..engine.metrics.theory import priced_v
from ..engine.analysis.stats import RunStats
from . import gpu_calls
from .state import AppState
from .settings import MAX_SAMPLES, SAMPLES_STEP, prompt_ids
from .run_setup import ran_text, settings_text
from .sweep import SWEEP_KS, Sweep
from ..engine.analysis.token_kinds import KINDS, KindTally

RENAME_PROMPT = ("def total_price(items):\n    total = 0\n    for item in items:\n        total += item.price * "
                 "item.quantity\n    return total\n\n\n# The same function, with `total` renamed to `running_sum`:\n"
                 "def total_price(items):\n")


@dataclass
class Outcome:
    value: float | str           # the measured answer, in the prediction's terms
    shown: str                   # that answer as the page shows it
    why: str                     # two sentences from the run's own figures
    # What the answer's chart shows, as data: ("race", RunStats), ("lossless", (result, tokenizer)),
    # ("sweep", Sweep) or ("kinds", table); the view draws it (view/tabs/workshop.py). None: no chart.
    chart: tuple[str, object] | None = None
    ran: str = ""                # what was run: the pair, its settings, the prompt (app/run_setup.py)


@dataclass(frozen=True)
class Exercise:
    key: str
    title: str
    question: str                # what the learner predicts
    choices: tuple[str, ...]     # () for a number
    run: Callable[..., Outcome]  # run(app), or run(app, repeat=n) where `repeatable`
    repeatable: bool = False     # a measured speedup: "repeat 3x" gives the median of n races with the range
    # The prompt the run decodes, shown under the question (prompt(app); it depends on the host's pairs).
    prompt: Callable[[AppState], str] | None = None


# --- running ------------------------------------------------------------------------------
def pick(app: AppState, role: str) -> str:
    """The preset key for a role: `text` (meaningful text) or `fast` (speed matters more)."""
    keys = list(app.pairs.presets)
    if role == "text":
        for key, preset in app.pairs.presets.items():
            if preset.target in FETCHABLE and (fetched(preset.target) or app.pairs.loaded(key)):
                return key
    return "bundled" if "bundled" in app.pairs.presets else keys[0]


def _ids(app: AppState, key: str, prompt: str | None = None) -> list[int]:
    preset = app.pairs.preset(key)
    pair = app.pairs.pair(preset)
    return prompt_ids(pair, prompt or preset.examples[0], app.limits, chat=preset.chat)


def config(app: AppState, key: str, **settings) -> SpecConfig:
    """An exercise's settings: the pair's k and 64 new tokens unless it says otherwise."""
    return SpecConfig(**{"k": app.pairs.preset(key).k, "max_new_tokens": 64, **settings})


def race_stats(app: AppState, key: str, prompt: str | None = None, **settings) -> RunStats:
    """One measured race (both lanes) through the decoding worker, folded into RunStats."""
    cfg = config(app, key, **settings)
    ids = _ids(app, key, prompt)
    stats = RunStats(cfg.k)
    for record in app.decoders.sliced(gpu_calls.race_records(gpu_calls.handle(app), key, ids, cfg.to_dict())):
        stats.add(from_dict(record))
    if set(stats.done) == {"spec", "base"}:              # a finished race joins the pair's cost model
        preset = app.pairs.preset(key)
        app.advisor.fold_race(preset, app.pairs.pair(preset),
                              *race_tallies(stats),
                              stats.done["spec"], bool(cfg.tree))
    return stats


def _advice_words(app: AppState, key: str) -> str:
    """The k the race tab's note offers for this pair (the cost model's advice), so the two never disagree
    unsaid; "" where the host does not advise."""
    advice = app.advisor.advice.get(key)
    if advice is None:
        return ""
    if advice.k is None:
        return f" The k note under the slider advises no k yet: {advice.advice.reason}."
    lo, hi = advice.advice.within
    return (f" Another prediction: the k note under the slider, from what is typical here across races, advises "
            f"k = {advice.k}{'' if lo == hi else f' (k = {lo} to {hi} within its noise)'} for the draft's usual a.")


def race_ledger(stats: RunStats) -> Ledger:
    """The race's own ledger (engine/analysis/ledger.py), from the lanes the race tab's ledger reads (the
    engine's Done.stats, else the fold): the exercise's passes, a, tau, c and v are the figures the race tab's
    why and box give for a race, never recomputed here; the cost model is for predictions."""
    return of_race(stats, tallies=race_tallies(stats))


def race_why(led: Ledger, k_setting: int) -> str:
    """The race exercise's why from the race's ledger: passes, a and tau, then what a round cost, each part
    with its own value. A race whose timings price no round (a pass timed cheaper than a step, or none
    timed) says so in the ledger's words instead of pricing it with a stand-in c or v."""
    head = (f"The target checked the drafts in {led.spec.target_passes} passes where plain decoding needed "
            f"{led.plain.target_passes}: ")
    if led.a is None or led.tau is None:
        return head + "no draft was judged, so there is no acceptance rate to give."
    head += f"it accepted {led.a:.0%} of the drafts it judged, so each pass yielded {led.tau:.2f} tokens."
    if not led.priced:
        return f"{head} {led.cause.removeprefix(led.plain_words).strip()}"
    k, c, v = led.k, led.c, priced_v(led.v)       # the pass priced as the ledger prices it: never below a step
    shown_v = f"v = {v:.2f}" if v == led.v else f"v = {led.v:.2f} measured, priced at {v:.2f}"
    # A round costs k c + v plain steps (drafting, then one verify pass): each part with its own value,
    # then the bigger share of the extra over one step named.
    most = (f"Most of the extra is the verify pass: checking up to {k_setting + 1} tokens at once costs more than "
            f"one plain step here." if v - 1 >= k * c else
            f"Most of the extra is drafting: {k:.3g} draft steps come before every pass.")
    return (f"{head} The speedup is smaller than that because a round costs {k * c + v:.2f} plain steps, not 1: "
            f"{k:.3g} draft steps at c = {c:.3f} each ({k * c:.2f}), then a verify pass at {shown_v}. {most}")


def ran(app: AppState, key: str, *runs: dict, prompt: str | None = None, settings: str | None = None) -> str:
    """The answer's "Ran:" line: the pair, each run's settings (`runs`: the keyword settings given to
    race_stats, in order), or `settings` in words, and the prompt (default: the pair's first example)."""
    text = settings or "; then ".join(settings_text(config(app, key, **run)) for run in runs)
    return ran_text(app.pairs.preset(key).label, text, prompt or app.pairs.preset(key).examples[0])


def _num(x: float | None, fmt: str = ".2f") -> str:
    """A figure as the why prints it: "—" where the run measured none (never a 0.00 standing in for it)."""
    return "—" if x is None else format(x, fmt)


def _passes(stats: RunStats) -> tuple[int, int]:
    return stats.tallies["spec"].rounds, stats.tallies["base"].tokens


# --- the exercises --------------------------------------------------------------------------
def race(app: AppState, repeat: int = 1) -> Outcome:
    key, run = pick(app, "fast"), {"max_new_tokens": 96}
    runs = [race_stats(app, key, **run) for _ in range(max(1, repeat))]
    stats = runs[0]                                # the first race's figures; the answer is the median's
    rep = repeated([r.measured_speedup() for r in runs]) if len(runs) > 1 else None
    led = race_ledger(stats)                       # this race's record: the race tab's why gives the same
    s = rep.median if rep else led.speedup
    repeated_line = f"{rep.line()} The passes and costs below are the first race's. " if rep else ""
    return Outcome(round(s, 2), f"{s:.2f}×" + (f" (median of {len(runs)}, range {rep.low:.2f}-{rep.high:.2f}×)"
                                              if rep else ""),
                   repeated_line + race_why(led, stats.k), ("race", stats), ran=ran(app, key, *([run] * len(runs))))


def passes_prompt(app: AppState) -> str:
    """The passes exercise's prompt: its pair's last example (the question shows it)."""
    return app.pairs.preset(pick(app, "fast")).examples[-1]


def passes(app: AppState) -> Outcome:
    key, run = pick(app, "fast"), {"max_new_tokens": 96}
    prompt = passes_prompt(app)
    stats = race_stats(app, key, prompt=prompt, **run)
    spec, base = _passes(stats)
    return Outcome(spec, f"{spec} target passes (plain decoding: {base})",
                   f"Each round is one target pass that keeps the accepted drafts plus one token of its own, so "
                   f"{stats.tallies['spec'].tokens} tokens took {spec} rounds ({stats.tokens_per_round:.2f} a round). "
                   f"Plain decoding needs one pass per token: {base}.",
                   ran=ran(app, key, run, prompt=prompt))


def identity(app: AppState) -> Outcome:
    key, run = pick(app, "text"), {"max_new_tokens": 64}
    stats = race_stats(app, key, **run)
    n = min(stats.tallies["spec"].tokens, stats.tallies["base"].tokens)
    texts = stats.texts
    identical = texts["spec"] == texts["base"]
    answer = "identical" if identical else "a few tokens differ"
    first = _first_difference(texts["spec"], texts["base"])
    return Outcome(answer, ("identical, token for token" if identical
                            else f"they part at character {first}"),
                   f"Greedy verification keeps a draft only if it is the target's own top choice, and replaces the "
                   f"first one that is not with that top choice; so all {n} tokens are the ones plain decoding "
                   f"writes{'' if identical else ' (here a rounding difference split them)'}. "
                   f"{stats.tallies['spec'].rejected} drafts were rejected on the way, none of them reached the text.",
                   ran=ran(app, key, run))


def lossless(app: AppState) -> Outcome:
    key = pick(app, "fast")
    ids = _ids(app, key)
    cfg = config(app, key, temperature=1.0, max_new_tokens=2)
    result = list(app.decoders.sliced(gpu_calls.lossless_results(gpu_calls.handle(app), key, ids, cfg.to_dict(), 300, 1)))[-1]
    to_p, to_q, noise = result.tv_to_target(), result.tv_draft(), result.tv_noise()
    closer = "the target's p" if to_q is None or to_p < to_q else "the draft's q"
    # The Lossless tab's words for the same numbers: its verdict (a chi-square test at ALPHA), the distance
    # read against what noise alone gives (300 samples of p itself are never exactly p), and its contrast
    # with the draft's own distance.
    contrast = "" if to_q is None else " " + draft_contrast(
        to_q, noise, result.consistent(), final=True,
        needed=samples_to_separate(result.p, to_q, SAMPLES_STEP, MAX_SAMPLES), most=MAX_SAMPLES)
    return Outcome(closer, f"{closer}: distance {to_p:.3f} to p" + ("" if to_q is None else f", {to_q:.3f} to q"),
                   f"{verdict_line(result.p_value())} 300 first tokens, sampled through speculative decoding at "
                   f"temperature 1, are {to_p:.3f} away from the target's exact probabilities, where 300 samples "
                   f"drawn from p itself would be about {noise:.3f} away by chance alone: a distance is expected, "
                   f"the test says whether it is more than chance.{contrast} The drafts came from q, but rejections "
                   f"resample from max(0, p - q), which puts back exactly the mass q lacked.",
                   ("lossless", (result, app.pairs.pair(app.pairs.preset(key)).tokenizer)),
                   ran=ran(app, key, settings=f"k = {cfg.k}, temperature 1, the first new token sampled 300 times"))


def temperature(app: AppState) -> Outcome:
    key = pick(app, "fast")
    cold_run, hot_run = {"max_new_tokens": 64}, {"max_new_tokens": 64, "temperature": 1.0, "seed": 1}
    greedy, hot = race_stats(app, key, **cold_run), race_stats(app, key, **hot_run)
    a0, a1 = greedy.acceptance_rate, hot.acceptance_rate
    return Outcome(round(a1, 2), f"a = {a1:.2f} at temperature 1.0 (greedy: {a0:.2f})",
                   f"Greedy accepts a draft only when both models' top choices agree; at temperature 1 it is kept "
                   f"with probability min(1, p/q), which rewards overlap of whole distributions. Here that moved a "
                   f"from {a0:.2f} to {a1:.2f}, and the speedup from {greedy.measured_speedup():.2f}× to "
                   f"{hot.measured_speedup():.2f}×.",
                   ran=ran(app, key, cold_run, hot_run))


def best_k(app: AppState) -> Outcome:
    key = pick(app, "fast")
    sweep = Sweep()
    ids = _ids(app, key)
    for k in SWEEP_KS:
        cfg = config(app, key, k=k, max_new_tokens=48)
        sweep.add_race(k, list(app.decoders.sliced(gpu_calls.race_records(gpu_calls.handle(app), key, ids, cfg.to_dict()))))
    best, predicted, near = sweep.best_measured(), sweep.best_theory(), sweep.within_noise()
    span = f"k = {near[0]}" if len(near) == 1 else f"k = {', '.join(map(str, near))}"
    # Graded as a choice: any k whose speedup is within the sweep's measured noise of the best is right.
    # One answer, measured: the races' best, with the ks within their noise. The formula's best and the k
    # note's are predictions, said under their own names after it, never as a second answer.
    return Outcome([str(k) for k in near],
                   f"k = {best} measured; within noise ({sweep.noise():.0%}): {span}",
                   f"The answer is what the races measured: k = {best}, and {span} within their noise. Larger k wins "
                   f"more tokens per target pass, but each extra draft step costs c = {_num(sweep.c)} and is "
                   f"accepted only with probability a = {_num(sweep.a)} given the ones before it. A prediction, not "
                   f"a second answer: the formula drawn from those races' figures (and a verify pass costing "
                   f"{_num(sweep.v)} plain steps) expects its best k at {predicted}.{_advice_words(app, key)}",
                   ("sweep", sweep),
                   ran=ran(app, key, settings=f"k = {SWEEP_KS[0]} to {SWEEP_KS[-1]}, greedy, 48 new tokens at most each"))


def lookup(app: AppState) -> Outcome:
    key = pick(app, "fast")
    model_run, lookup_run = {"max_new_tokens": 48}, {"max_new_tokens": 48, "drafter": PROMPT_LOOKUP}
    by_model = race_stats(app, key, prompt=RENAME_PROMPT, **model_run)
    by_lookup = race_stats(app, key, prompt=RENAME_PROMPT, **lookup_run)
    s_model, s_lookup = by_model.measured_speedup(), by_lookup.measured_speedup()
    winner = ("about the same" if abs(s_model - s_lookup) < 0.1 * max(s_model, s_lookup)
              else "prompt lookup" if s_lookup > s_model else "the draft model")
    return Outcome(winner, f"prompt lookup {s_lookup:.2f}×, draft model {s_model:.2f}×",
                   f"The prompt asks for a function the prompt already contains, so copying its next n-gram is a "
                   f"free and often right guess: prompt lookup had a = {_num(by_lookup.acceptance_rate)} at no "
                   f"draft cost, the draft model a = {_num(by_model.acceptance_rate)} at c = "
                   f"{_num(by_model.cost_ratio())}.",
                   ran=ran(app, key, model_run, lookup_run, prompt=RENAME_PROMPT))


def bad_draft(app: AppState) -> Outcome:
    key = pick(app, "fast")
    good_run, bad_run = {"max_new_tokens": 64}, {"max_new_tokens": 64, "draft_temperature": 2.0, "seed": 3}
    good, bad = race_stats(app, key, **good_run), race_stats(app, key, **bad_run)
    texts = bad.texts
    same = "identical to" if texts["spec"] == texts["base"] else "different from"
    s = bad.measured_speedup()
    return Outcome(round(s, 2), f"{s:.2f}× (the trained draft, sampling normally: {good.measured_speedup():.2f}×)",
                   f"Sampling at temperature 2, the draft's guesses were accepted {bad.acceptance_rate:.0%} of the "
                   f"time instead of {good.acceptance_rate:.0%}, so most rounds paid for k draft steps and kept "
                   f"little. Its output is still {same} plain decoding's: only the target decides what is kept.",
                   ran=ran(app, key, good_run, bad_run))


def cost(app: AppState) -> Outcome:
    from ..engine.metrics import theory
    key, run = pick(app, "fast"), {"max_new_tokens": 96}
    stats = race_stats(app, key, **run)
    a, c, v, k = stats.acceptance_rate, stats.cost_ratio(), stats.verify_ratio(), stats.k
    if None in (a, c, v):
        return Outcome("", "too little was measured", "The race judged no draft or timed no step: run it again "
                       "with a longer reply.", ran=ran(app, key, run))
    # Both priced with this race's measured verify pass v: only the draft's cost c differs.
    at_c, at_1 = theory.expected_speedup(min(a, 0.999), k, c, v), theory.expected_speedup(min(a, 0.999), k, 1.0, v)
    return Outcome(round(c, 3), f"c = {c:.3f}",
                   f"Timed in this race: one draft step took {c:.3f} of a plain target step. With the same a = "
                   f"{a:.2f} and k = {k}, the theory gives {at_c:.2f}× at this c but {at_1:.2f}× if a draft step "
                   f"cost as much as a target step: a draft must be far cheaper than the target, not just agree.",
                   ran=ran(app, key, run))


TREE_SHAPE = (2, 2, 1, 1)     # the tree exercise's shape: as deep as a chain of k = 4, 14 nodes


def tree_or_chain(app: AppState) -> Outcome:
    """The tree 2,2,1,1 raced against the chain of its depth (k = 4), each against plain decoding, greedy:
    which paid on this machine, and why (engine/analysis/tree_ledger.py, both lanes measured)."""
    from ..engine.analysis import tree_ledger
    key = pick(app, "fast")
    depth = len(TREE_SHAPE)
    chain_run, tree_run = {"k": depth, "max_new_tokens": 64}, {"tree": TREE_SHAPE, "max_new_tokens": 64}
    chain, tree = race_stats(app, key, **chain_run), race_stats(app, key, **tree_run)
    by_choice = getattr(tree.done.get("spec"), "by_choice", None) or []      # Done.stats (LaneStats)
    cmp = tree_ledger.compare_sides(tree_ledger.side(tree.tallies["spec"], tree.tallies["base"]),
                                    tree_ledger.side(chain.tallies["spec"], chain.tallies["base"]), depth,
                                    tree_ledger.second_choice_rate(by_choice))
    ran_line = ran(app, key, chain_run, tree_run)
    if cmp.verdict == "unmeasured":
        return Outcome("", "too little was measured", cmp.cause, ran=ran_line)
    answer = {"tree paid": "the tree", "chain paid": "the chain"}.get(cmp.verdict, "about the same")
    same = tree.texts["spec"] == chain.texts["spec"] == tree.texts["base"]
    return Outcome(answer, f"tree {cmp.tree.speedup:.2f}×, chain {cmp.chain.speedup:.2f}×",
                   f"{cmp.cause} Both wrote {'the same text as plain decoding' if same else 'their text'}: a tree "
                   f"changes how many tokens a pass may keep, never which ones (greedy keeps the target's argmax).",
                   ("race", tree), ran=ran_line)


BLOCK_SEEDS = 4    # the block exercise's sampled runs per rule (same seeds for both), pooled
BLOCK_ANSWERS = ("at T = 1 only", "at T = 0 only", "at both", "at neither")


def _kept(app: AppState, key: str, rules: tuple[str, ...], seeds, **settings) -> dict[str, measures.LaneTally]:
    """Each rule's speculative tally, pooled over the same seeds (counts only: no plain lane, no timing)."""
    ids, tallies = _ids(app, key), {}
    for rule in rules:
        tally = tallies[rule] = measures.LaneTally()
        for seed in seeds:
            cfg = config(app, key, rule=rule, seed=seed, **settings)
            for record in app.decoders.sliced(gpu_calls.run_stream(gpu_calls.handle(app), key, ids, cfg.to_dict())):
                tally.add(from_dict(record))
    return tallies


def block_rule(app: AppState) -> Outcome:
    """Token-wise against block verification (engine/loop/block.py), drafts kept per round, at temperature
    0 (one greedy run each) and 1 (BLOCK_SEEDS runs each, same seeds), on the same prompt and pair."""
    key = pick(app, "fast")
    rules = ("exact", "block")
    cold = _kept(app, key, rules, [0], max_new_tokens=64)
    hot = _kept(app, key, rules, range(BLOCK_SEEDS), max_new_tokens=64, temperature=1.0)
    kept = {(t, r): measures.kept_per_round(tallies[r]) or 0.0 for t, tallies in ((0, cold), (1, hot)) for r in rules}
    helps = {t: kept[(t, "block")] > kept[(t, "exact")] + 1e-9 for t in (0, 1)}
    answer = BLOCK_ANSWERS[0 if helps[1] and not helps[0] else 1 if helps[0] and not helps[1] else 2 if helps[0] else 3]
    each = lambda t: f"{kept[(t, 'exact')]:.2f} token-wise, {kept[(t, 'block')]:.2f} block"      # noqa: E731
    return Outcome(answer, f"drafts kept per round at T = 0: {each(0)}; at T = 1: {each(1)}",
                   f"At temperature 0 both rules keep exactly the drafts that match the target's most likely token "
                   f"(block verification's weights are then 1 or 0), so they kept {each(0)} per round. At temperature "
                   f"1 the block rule keeps a prefix whenever the target's leftover mass over the whole block allows, "
                   f"not only when every draft passes its own test: {each(1)} over {hot['block'].rounds} and "
                   f"{hot['exact'].rounds} rounds, and both outputs follow the target's distribution.",
                   ran=ran(app, key, settings=f"k = {config(app, key).k}, exact then block, greedy (64 new tokens "
                                              f"at most); then temperature 1, seeds 0 to {BLOCK_SEEDS - 1} each"))


MIN_JUDGED = 5     # a kind counts for the kinds exercise once the target judged this many of its drafts


def token_kinds(app: AppState) -> Outcome:
    key = pick(app, "fast")
    run = {"max_new_tokens": 96}
    cfg = config(app, key, **run)
    tally = KindTally()
    for record in app.decoders.sliced(gpu_calls.run_stream(gpu_calls.handle(app), key, _ids(app, key), cfg.to_dict())):
        tally.add(from_dict(record))
    rows = sorted((r for r in tally.table() if r["judged"] >= MIN_JUDGED), key=lambda r: -r["acceptance_rate"])
    if not rows:
        return Outcome("", "too few drafts judged to tell", f"The run judged fewer than {MIN_JUDGED} drafts of "
                       "any kind, too few to tell which kind the draft gets right.", ("kinds", tally.table()),
                       ran=ran(app, key, run))
    best, worst = rows[0], rows[-1]
    name = lambda r: r["kind"].replace("_", " ")      # noqa: E731
    each = lambda r: f"{name(r)} {r['acceptance_rate']:.0%} ({r['accepted']} of {r['judged']})"      # noqa: E731
    return Outcome(name(best), each(best),
                   f"Of the drafts the target judged in this run, it kept {each(best)}, and {each(worst)} (kinds "
                   f"judged fewer than {MIN_JUDGED} times left out). A draft is kept where the text leaves the target "
                   f"little choice and lost where it must choose, so here {name(best)} was the most predictable kind "
                   f"of token for this pair and {name(worst)} the least.", ("kinds", tally.table()),
                   ran=ran(app, key, run))


def _first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


EXERCISES = (
    Exercise("race", "The race", "How many times faster than plain decoding will speculative decoding be "
             "(96 new tokens, greedy)?", (), race, repeatable=True),
    Exercise("passes", "Target passes saved", "The speculative lane writes 96 greedy tokens after the prompt "
             "below. How many forward passes of the target will it need?", (), passes, prompt=passes_prompt),
    Exercise("identity", "Greedy identity", "Greedy speculative decoding against greedy plain decoding of the "
             "same prompt: how will the two texts compare?", ("identical", "a few tokens differ",
                                                               "quite different"), identity),
    Exercise("lossless", "Sampling stays lossless", "Sample the first token 300 times through speculative "
             "decoding at temperature 1. Whose distribution will the counts follow?",
             ("the target's p", "the draft's q", "halfway between"), lossless),
    Exercise("temperature", "Temperature and acceptance", "At temperature 1.0 instead of greedy, what acceptance "
             "rate a (0 to 1) will the draft reach?", (), temperature),
    Exercise("best-k", "The best k", "Racing k = 1 to 8 on one prompt, which k will give the highest measured "
             "speedup? (Any k within the races' own timing noise of the best counts.)",
             tuple(str(k) for k in SWEEP_KS), best_k),
    Exercise("lookup", "Prompt lookup against the draft model", "The prompt asks for a function it already "
             "contains, renamed. Which drafter will be faster?", ("prompt lookup", "the draft model",
                                                                  "about the same"), lookup),
    Exercise("bad-draft", "A deliberately bad draft", "The draft now samples at temperature 2 (a poor guesser). "
             "What speedup will speculative decoding reach?", (), bad_draft),
    Exercise("cost", "The cost ratio c", "One draft step costs what fraction c of a target step (0 to 1)?",
             (), cost),
    Exercise("kinds", "Which tokens the draft gets right", "96 greedy tokens from the pair's first example: "
             "which kind of token does the draft get right most often (the highest share kept, of kinds judged "
             f"{MIN_JUDGED} times or more)?",
             tuple(k.replace("_", " ") for k in KINDS), token_kinds),
    Exercise("tree", "A token tree against a chain", "The draft now proposes a tree 2,2,1,1 (two guesses for "
             "each of the first two tokens, 14 nodes, checked in one pass) instead of a chain of k = 4. On this "
             "machine, which will be faster against plain decoding?", ("the tree", "the chain", "about the same"),
             tree_or_chain),
    Exercise("block", "Block verification", "Block verification judges the k drafts of a round together instead of "
             "one by one, with the same output distribution. Will it keep more drafts per round than token-by-token "
             "checking at temperature 0? At temperature 1?", BLOCK_ANSWERS, block_rule),
)
BY_KEY = {e.key: e for e in EXERCISES}
