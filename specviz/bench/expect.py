"""What a pair is measured to do on prompts it never saw, per kind of prompt (chat, code).

For each prompt of the files (benchmarks/unseen-prompts.json by default: prompts used for nothing but
figures), one greedy speculative run through the benchmark's runner (bench/runner.py: the engine's own
lane, the draft stepped as the page steps it). Per kind, the acceptance rate is the pooled one of
engine/metrics/measures.py:

    a(kind) = sum over the kind's prompts of accepted / sum of judged,   judged = accepted + rejected

(drafts after a round's first rejection are never judged). Greedy and fp32, a is a count, not a timing:
any machine, busy or not, gives the same a for the same draft step. `speedup=True` also times plain and
speculative decoding in rotation, as the benchmark does (runner.measure_prompt, after a warm-up): per
prompt the median over rotations of rate(speculative) / rate(plain), per kind the median over its
prompts. That is a timing: only a quiet machine's is worth writing down; without it the speedup is None.
A pair whose target has no chat template (the bundled Python model) is measured on its prompts that
are not sent as chat: its figures hold "code" only.
"""
from __future__ import annotations

import os
import shlex
from datetime import datetime, timezone
from pathlib import Path

from ..engine import SpecConfig
from ..engine.metrics import measures
from ..models.expect import KINDS, draft_fingerprint
from ..paths import ROOT
from ..runtime.lean_draft import ENV as DRAFT_STEP_ENV
from ..runtime.pair import ModelPair
from .prompts import load_prompts, prompt_ids
from .runner import measure_prompt, median, paired_ratio, specviz_run
from .suite import machine

FIGURES_PROMPTS = ["benchmarks/unseen-prompts.json"]     # prompts used for nothing but figures
LANES = ["specviz plain", "specviz speculative"]
TEXT_SHOWN = 60                                          # characters of a prompt kept in the per-prompt rows


def kind_prompts(files: list[str], chat_template: bool) -> list[dict]:
    """The prompts of `files` whose kind is chat or code, each tagged with its file (as given); a prompt
    sent as chat is left out when the target has no chat template."""
    out = []
    for name in files:
        # A repository file named from elsewhere (a test, another folder) is read from the repository.
        path = name if Path(name).exists() or not (ROOT / name).exists() else str(ROOT / name)
        for prompt in load_prompts(path):
            if prompt["kind"] in KINDS and (chat_template or not prompt["chat"]):
                out.append({**prompt, "file": name})
    return out


def measure(pair: ModelPair, prompts: list[dict], cfg: SpecConfig, speedup: bool = False, repeats: int = 3,
            log=print) -> dict:
    """{"kinds": {kind: figures}, "per_prompt": [...], "draft_step": how the draft stepped} for greedy `cfg`."""
    if not cfg.greedy:
        raise ValueError("the expected figures are greedy: temperature 0")
    rows, paths = [], set()
    for n, prompt in enumerate(prompts):
        ids = prompt_ids(pair, prompt)
        ratio = None
        if speedup:
            runs = measure_prompt(pair, ids, cfg, LANES, repeats)
            run = runs["specviz speculative"][0]
            ratio = paired_ratio(runs["specviz speculative"], runs["specviz plain"])
        else:
            run = specviz_run(pair, ids, cfg, speculative=True)
        tally = run.stats.tally
        paths.add(run.stats.draft_path or "")
        row = {"file": prompt["file"], "kind": prompt["kind"], "text": prompt["text"][:TEXT_SHOWN],
               "accepted": tally.accepted, "judged": tally.accepted + tally.rejected,
               "acceptance": _round(measures.acceptance_rate(tally)), "tokens": tally.tokens,
               "speedup": _round(ratio)}
        rows.append((row, tally))
        log(f"prompt {n + 1}/{len(prompts)} ({prompt['kind']}): a = {row['accepted']}/{row['judged']}"
            + (f", speedup {ratio:.2f}x" if ratio else ""))
    kinds = {}
    for kind in KINDS:
        mine = [(row, tally) for row, tally in rows if row["kind"] == kind]
        if not mine:
            continue
        pooled = measures.pool(t for _, t in mine)
        kinds[kind] = {"acceptance": _round(measures.acceptance_rate(pooled)), "accepted": pooled.accepted,
                       "judged": pooled.accepted + pooled.rejected, "prompts": len(mine),
                       "speedup": _round(median([row["speedup"] for row, _ in mine])) if speedup else None}
    return {"kinds": kinds, "per_prompt": [row for row, _ in rows], "draft_step": sorted(paths - {""})}


def record(pair_key: str, draft_folder: str | Path, files: list[str], cfg: SpecConfig, measured: dict,
           command: str) -> dict:
    """expect.json's content (models/expect.py reads it): the pair, the draft's fingerprint, the settings,
    where and when, and the figures per kind."""
    return {"pair": pair_key, "draft_fingerprint": draft_fingerprint(draft_folder), "prompts": list(files),
            "k": cfg.k, "temperature": cfg.temperature, "max_new_tokens": cfg.max_new_tokens, "command": command,
            "measured": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "machine": machine_line(),
            "draft_step": ", ".join(measured["draft_step"]) or None,
            "kinds": measured["kinds"], "per_prompt": measured["per_prompt"]}


def machine_line() -> str:
    m = machine()
    return (f"{m['processor']}, {m['cpus']} CPUs, torch {m['torch']} ({m['torch_threads']} threads)"
            + (f", {m['gpu']}" if "gpu" in m else ""))


def relative(path: str | Path) -> str:
    """A path as the repository names it (relative to its root) where it is inside it."""
    path = Path(path).resolve()
    try:
        return path.relative_to(ROOT.resolve()).as_posix()
    except ValueError:
        return str(path)


def lines(figures: dict) -> list[str]:
    """The figures per kind as a few readable lines."""
    out = []
    for kind, f in figures["kinds"].items():
        speed = f", speedup {f['speedup']:.2f}x" if f.get("speedup") else ""
        out.append(f"{kind}: a = {f['acceptance']:.3f} ({f['accepted']}/{f['judged']} drafts judged, "
                   f"{f['prompts']} prompts){speed}")
    return out


def _round(x: float | None, places: int = 4) -> float | None:
    return None if x is None else round(x, places)


def command(preset_key: str, files: list[str], max_new_tokens: int, draft: str | None = None,
            k: int | None = None, speedup_repeats: int | None = None) -> str:
    """The scripts/pair_expect.py command that measures the same thing again (a record's "command"),
    with the draft step pinned where SPECVIZ_DRAFT_STEP pinned it in this process."""
    step = os.environ.get(DRAFT_STEP_ENV)
    parts = ([f"{DRAFT_STEP_ENV}={step}"] if step else []) + ["python", "scripts/pair_expect.py", "--preset", preset_key]
    parts += (["--draft", draft] if draft else []) + ["--prompts", *files] + (["--k", str(k)] if k else [])
    parts += ["--max-new-tokens", str(max_new_tokens)]
    parts += ["--speedup", "--repeats", str(speedup_repeats)] if speedup_repeats else []
    return " ".join(shlex.quote(p) for p in parts)
