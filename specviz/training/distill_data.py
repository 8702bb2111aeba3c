"""The data stages of the SmolLM2 draft's training: questions, prompts, then on-policy shards.

Each stage writes its output into the work folder and is skipped when that output exists; the
on-policy stage writes one shard per batch, so an interrupted run resumes at the next shard.
Shards group prompts of one kind and one temperature, sorted by length (little padding).
Decoding: 60% greedy (what the benchmark and the app's default measure), 20% at T = 0.7 and 20%
at T = 1.0, so the draft also learns the target's spread, not only its argmax.
"""
from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ..models.chat import chat_ids
from .corpus import split_corpus
from .draft_prompts import PromptSpec, code_prefixes, is_validation, mix, prose_prefixes, template_requests
from .onpolicy import Record, generate_records

TEMPERATURES = [0.0, 0.0, 0.0, 0.7, 1.0]   # drawn per shard: 60% greedy


def open_user_turn(tokenizer) -> list[int]:
    """The chat template up to the start of a user message's text (for self-instruct)."""
    marker = "\u2063"   # an invisible separator that never occurs in the template itself
    text = tokenizer.apply_chat_template([{"role": "user", "content": marker}], tokenize=False)
    return tokenizer(text[: text.index(marker)], add_special_tokens=False)["input_ids"]


def self_instruct(model, tokenizer, count: int, batch: int, log: Callable[[str], None], seed: int = 0) -> list[str]:
    """`count` user requests written by the model itself (T = 1, cut at the end of the turn)."""
    head, end = open_user_turn(tokenizer), tokenizer.eos_token_id
    questions: list[str] = []
    for b in range(0, count, batch):
        for rec in generate_records(model, [head] * min(batch, count - b), 48, 1.0, {end}, end, keep=1, seed=seed + b):
            if rec.generated and rec.generated[-1] == end:   # a finished request, not one cut at 48 tokens
                text = tokenizer.decode(rec.generated[:-1]).strip()
                if 3 <= len(text.split()) <= 40:
                    questions.append(text)
        log(f"self-instruct: {len(questions)} requests from {b + min(batch, count - b)} tries")
    return questions


def prompt_ids(tokenizer, spec: PromptSpec) -> list[int]:
    return chat_ids(tokenizer, spec.text) if spec.chat else tokenizer(spec.text, add_special_tokens=False)["input_ids"]


def plan_shards(specs: list[PromptSpec], batch: int, seed: int = 0,
                passes: list[float] | None = None) -> list[dict]:
    """Group the training prompts into shards: one kind and temperature each, similar lengths.

    Without `passes`, each group of prompts is written once at a temperature drawn from
    TEMPERATURES (a CPU's budget); with `passes` (e.g. [0.0, 0.7, 1.0], a GPU's), once per
    temperature listed, pass by pass, so a time budget that runs out still leaves whole passes.
    """
    rng = random.Random(seed)
    train = [s for s in specs if not is_validation(s.text)]
    groups = []
    for kind in ("chat", "code", "prose"):
        ordered = sorted((s for s in train if s.kind == kind), key=lambda s: len(s.text))
        groups += [(kind, [s.text for s in ordered[i:i + batch]]) for i in range(0, len(ordered), batch)]
    shards = []
    for temperatures in ([None] if passes is None else [[t] for t in passes]):
        this_pass = [{"kind": kind, "temperature": rng.choice(temperatures or TEMPERATURES), "prompts": prompts}
                     for kind, prompts in groups]
        rng.shuffle(this_pass)
        shards += this_pass
    return shards


def save_shard(path: Path, records: list[Record], kind: str, precision: str = "fp32") -> None:
    np.savez(path.with_suffix(".tmp.npz"), kind=kind, temperature=records[0].temperature, precision=precision,
             prompt_lens=np.array([len(r.prompt_ids) for r in records]),
             gen_lens=np.array([len(r.generated) for r in records]),
             prompts=np.concatenate([np.array(r.prompt_ids, dtype=np.int32) for r in records]),
             generated=np.concatenate([np.array(r.generated, dtype=np.int32) for r in records]),
             top_ids=np.concatenate([r.top_ids for r in records]), top_logp=np.concatenate([r.top_logp for r in records]))
    path.with_suffix(".tmp.npz").replace(path)   # a shard appears whole or not at all


def build_prompts(work: Path, model, tokenizer, questions: int, log, seed: int = 0,
                  batch: int = 64, seen: set[str] = frozenset(),
                  stored: set[tuple[int, ...]] = frozenset()) -> list[PromptSpec]:
    """Stage 1 and 2: self-instruct requests, then the prompt mix (cached in the work folder).

    seen: prompt texts other work folders planned; they are left out of the mix, so a second folder
    adds new sequences instead of repeating the templated requests greedily. A mix already cached
    here is kept as it is; if it holds any of them, that is said.
    stored: the prompts (as token ids) the committed store holds already (accumulate.stored_prompts): those
    texts are left out of the mix too, so a sitting without the earlier work folders adds new sequences."""
    questions_file, prompts_file = work / "questions.json", work / "prompts.json"
    if not questions_file.exists():
        t0 = time.monotonic()
        questions = self_instruct(model, tokenizer, count=questions, batch=batch, log=log, seed=seed)
        questions_file.write_text(json.dumps(questions, indent=0))
        log(f"self-instruct: {len(questions)} requests kept in {time.monotonic() - t0:.0f} s")
    if not prompts_file.exists():
        train_texts, _ = split_corpus()
        asked, code, prose = json.loads(questions_file.read_text()), code_prefixes(train_texts), prose_prefixes()
        if stored:
            pools = [("chat", t) for t in template_requests() + asked] + [("code", t) for t in code] + \
                    [("prose", t) for t in prose]
            kept = {text for kind, text in pools if tuple(prompt_ids(tokenizer, PromptSpec(kind, text))) in stored}
            log(f"prompts: {len(kept)} of the candidates are in the store already: left out")
            seen = set(seen) | kept
        specs = mix(asked, code, prose, seed, seen)
        prompts_file.write_text(json.dumps([[s.kind, s.text] for s in specs], indent=0))
    specs = [PromptSpec(kind, text) for kind, text in json.loads(prompts_file.read_text())]
    repeated = sum(s.text in seen for s in specs)
    if repeated:
        log(f"prompts: {repeated} of this folder's cached prompts were planned by another work folder too "
            f"(the mix was made without --also-work-dir); delete {prompts_file} to plan it again")
    return specs


def generate_shards(work: Path, model, tokenizer, specs: list[PromptSpec], batch: int, max_new_tokens: int,
                    budget_s: float, log, seed: int = 0, passes: list[float] | None = None,
                    precision: str = "fp32", on_saved: Callable[[Path], None] | None = None,
                    part: tuple[int, int] = (0, 1)) -> list[Path]:
    """Stage 3: on-policy shards until every prompt is done or the time budget is spent.
    precision: how the caller runs the target's matmuls ("fp32" or "bf16" autocast), written in each shard.
    on_saved: called with each new shard's path once it is written (the data stage keeps it in the store).
    part: (r, n): only the shards whose index is r modulo n, so n processes (one thread each) can share one
    plan and folder; a single process with two threads loses most of its rate beside other work."""
    r, n = part
    folder = work / "onpolicy"
    folder.mkdir(exist_ok=True)
    shards = plan_shards(specs, batch, seed, passes)
    started, made = time.monotonic(), 0
    eos = {tokenizer.eos_token_id}
    for i, shard in enumerate(shards):
        path = folder / f"shard-{i:04d}.npz"
        if i % n != r or path.exists():
            continue
        if time.monotonic() - started > budget_s:
            log(f"on-policy: time budget spent after {made} new shards")
            break
        t0 = time.monotonic()
        ids = [prompt_ids(tokenizer, PromptSpec(shard["kind"], t)) for t in shard["prompts"]]
        records = generate_records(model, ids, max_new_tokens, shard["temperature"], eos, tokenizer.eos_token_id,
                                   seed=seed + i)
        save_shard(path, records, shard["kind"], precision)
        if on_saved is not None:
            on_saved(path)
        made += 1
        tokens = sum(len(r.generated) for r in records)
        log(f"on-policy shard {i + 1}/{len(shards)} ({shard['kind']}, T={shard['temperature']}): "
            f"{tokens} tokens, {tokens / (time.monotonic() - t0):.0f} tok/s")
    return sorted(folder.glob("shard-*.npz"))
