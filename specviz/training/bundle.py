"""Builds the bundled model pair from scratch: tokenizer, target, then a distilled draft.

Stages run in order and each one is skipped when its output exists, so an interrupted
`python -m specviz train-models` resumes where it stopped (mid-stage from the stage's
checkpoint in the work folder). The target is a deep, narrow Llama: on a CPU at batch 1
a forward pass costs roughly a fixed amount per layer, so many thin layers make the
target clearly costlier than a one-layer draft (cost ratio about 0.1) for the same
training FLOPs. The draft shares the tokenizer and starts from the target's embeddings.
"""
from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

from .corpus import split_corpus
from .tokenizer_train import train_tokenizer
from .trainer import TrainSettings, evaluate, fixed_eval_windows, train_lm


@dataclass(frozen=True)
class Shape:
    layers: int
    width: int
    ffn: int
    heads: int


@dataclass(frozen=True)
class SizePreset:
    vocab: int
    target: Shape
    draft: Shape
    batch_size: int
    seq_len: int


SIZES = {
    # The shipped pair: ~7.9 M-parameter target, ~1.5 M draft; under 10 MB a file in fp16.
    "bundled": SizePreset(4096, Shape(16, 192, 512, 3), Shape(1, 192, 512, 3), batch_size=16, seq_len=256),
    # For a GPU: a bigger pair by the same recipe.
    "large": SizePreset(4096, Shape(24, 512, 1376, 8), Shape(2, 512, 1376, 8), batch_size=64, seq_len=512),
    # For tests: seconds on a CPU.
    "tiny": SizePreset(300, Shape(2, 32, 64, 2), Shape(1, 32, 64, 2), batch_size=4, seq_len=32),
}
MAX_SHARD = "9MB"  # each safetensors file stays under 10 MB (a Space repo takes it without LFS)


def llama_config(shape: Shape, tokenizer) -> LlamaConfig:
    return LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=shape.width, intermediate_size=shape.ffn,
        num_hidden_layers=shape.layers, num_attention_heads=shape.heads, num_key_value_heads=shape.heads,
        max_position_embeddings=2048, tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )


def token_stream(texts: list[str], tokenizer) -> torch.Tensor:
    """One flat stream: <|bos|> document <|eos|> for every document (BOS comes from the tokenizer)."""
    ids: list[int] = []
    for enc in tokenizer(texts)["input_ids"]:
        ids.extend(enc)
        ids.append(tokenizer.eos_token_id)
    return torch.tensor(ids, dtype=torch.long)


def save_model(model, tokenizer, out: Path) -> None:
    """fp16 safetensors, sharded under 10 MB a file, plus the tokenizer; loaders upcast on CPU."""
    out.mkdir(parents=True, exist_ok=True)
    model.to(torch.float16).save_pretrained(out, max_shard_size=MAX_SHARD)
    model.to(torch.float32)
    tokenizer.save_pretrained(out)


def build_pair(out_dir: str, work_dir: str, size: str = "bundled", device: str = "cpu",
               target_minutes: float = 60.0, draft_minutes: float = 20.0, max_files: int | None = None,
               seed: int = 0, log: Callable[[str], None] = print) -> dict:
    """Build (or resume building) the pair into out_dir/target and out_dir/draft."""
    preset = SIZES[size]
    out, work = Path(out_dir), Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    train_texts, heldout_texts = split_corpus(max_files=max_files)
    log(f"corpus: {len(train_texts)} training files, {len(heldout_texts)} held out")

    tok_dir = work / "tokenizer"
    if not tok_dir.exists():
        t0 = time.monotonic()
        train_tokenizer(train_texts, preset.vocab).save_pretrained(tok_dir)
        log(f"tokenizer: {preset.vocab} entries in {time.monotonic() - t0:.1f}s")
    tokenizer = AutoTokenizer.from_pretrained(tok_dir)
    streams = work / "streams.pt"
    if not streams.exists():
        torch.save({"train": token_stream(train_texts, tokenizer), "heldout": token_stream(heldout_texts, tokenizer)}, streams)
    data = torch.load(streams)
    log(f"tokens: {data['train'].numel():,} training, {data['heldout'].numel():,} held out")

    def settings(minutes: float, lr: float) -> TrainSettings:
        return TrainSettings(budget_s=minutes * 60, batch_size=preset.batch_size, seq_len=preset.seq_len, lr=lr,
                             seed=seed, warmup_steps=100 if size != "tiny" else 2)

    report = {"size": size, "preset": asdict(preset), "device": device, "python": platform.python_version(),
              "torch_threads": torch.get_num_threads()}
    target_dir, draft_dir = out / "target", out / "draft"
    if not (target_dir / "config.json").exists():
        torch.manual_seed(seed)
        target = LlamaForCausalLM(llama_config(preset.target, tokenizer)).to(device)
        log(f"target: {sum(p.numel() for p in target.parameters()) / 1e6:.2f} M parameters")
        report["target"] = train_lm(target, data["train"], data["heldout"], settings(target_minutes, 2e-3),
                                    str(work / "target.ckpt"), log=log, device=device)
        save_model(target, tokenizer, target_dir)
        (work / "target_report.json").write_text(json.dumps(report["target"]))
    teacher = LlamaForCausalLM.from_pretrained(target_dir, dtype=torch.float32).to(device).eval()
    if not (draft_dir / "config.json").exists():
        torch.manual_seed(seed + 1)
        draft = LlamaForCausalLM(llama_config(preset.draft, tokenizer)).to(device)
        if preset.draft.width == preset.target.width:
            # Start from the target's token embeddings (tied with its output head) and final norm.
            draft.model.embed_tokens.weight.data.copy_(teacher.model.embed_tokens.weight.data)
            draft.model.norm.weight.data.copy_(teacher.model.norm.weight.data)
        log(f"draft: {sum(p.numel() for p in draft.parameters()) / 1e6:.2f} M parameters, distilled from the target")
        report["draft"] = train_lm(draft, data["train"], data["heldout"], settings(draft_minutes, 3e-3),
                                   str(work / "draft.ckpt"), teacher=teacher, log=log, device=device)
        save_model(draft, tokenizer, draft_dir)
        (work / "draft_report.json").write_text(json.dumps(report["draft"]))
    draft = LlamaForCausalLM.from_pretrained(draft_dir, dtype=torch.float32).to(device).eval()
    windows = fixed_eval_windows(data["heldout"], 32, preset.seq_len).to(device)
    report["final"] = {"target": evaluate(teacher, windows), "draft": evaluate(draft, windows, teacher=teacher)}
    log(f"final (saved weights): target held-out loss {report['final']['target']['heldout_loss']:.3f}; "
        f"draft loss {report['final']['draft']['heldout_loss']:.3f}, "
        f"greedy agreement {report['final']['draft']['greedy_agreement']:.3f}")
    for name in ("target", "draft"):
        path = work / f"{name}_report.json"
        if name not in report and path.exists():
            report[name] = json.loads(path.read_text())
    (out / "training.json").write_text(json.dumps(report, indent=1))
    return report
