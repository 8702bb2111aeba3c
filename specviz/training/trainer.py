"""Time-budgeted, resumable training loops for the bundled pair.

`train_lm` trains a causal LM on a flat token stream, either on the next token
(cross-entropy) or, given a teacher, by distillation: it minimises KL(p_teacher || q_student)
over every position, so the student learns the teacher's whole next-token distribution
(a draft that imitates its target is accepted more often; Leviathan et al. 2023, sec. 3).
The learning rate follows linear warm-up then cosine decay over the *time* budget, so a
run can be stopped and resumed from its checkpoint and still ends on the planned schedule.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F


@dataclass
class TrainSettings:
    budget_s: float          # wall-clock seconds of training (summed over resumed runs)
    batch_size: int = 16     # windows per step
    seq_len: int = 256       # tokens per window
    lr: float = 2e-3         # peak learning rate
    min_lr_ratio: float = 0.05  # final lr = lr * min_lr_ratio
    warmup_steps: int = 100
    weight_decay: float = 0.1
    eval_every_s: float = 120.0
    checkpoint_every_s: float = 60.0
    seed: int = 0


def sample_windows(data: torch.Tensor, batch: int, seq_len: int, gen: torch.Generator) -> torch.Tensor:
    """batch random windows of seq_len + 1 tokens from the 1-D stream data: (batch, seq_len+1)."""
    starts = torch.randint(0, data.numel() - seq_len - 1, (batch,), generator=gen)
    return torch.stack([data[s : s + seq_len + 1] for s in starts.tolist()])


def fixed_eval_windows(data: torch.Tensor, count: int, seq_len: int) -> torch.Tensor:
    """count evenly spaced windows (same every call), (count, seq_len+1)."""
    stride = max(1, (data.numel() - seq_len - 1) // count)
    return torch.stack([data[i * stride : i * stride + seq_len + 1] for i in range(count)])


def step_loss(model, windows: torch.Tensor, teacher=None) -> torch.Tensor:
    """Mean next-token cross-entropy, or mean KL(teacher || model) when a teacher is given."""
    inputs, targets = windows[:, :-1], windows[:, 1:]
    logits = model(input_ids=inputs).logits.float()          # (B, T, V)
    if teacher is None:
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
    with torch.no_grad():
        teacher_logp = F.log_softmax(teacher(input_ids=inputs).logits.float(), dim=-1)
    student_logp = F.log_softmax(logits, dim=-1)
    # KL(p || q) = sum_v p(v) (log p(v) - log q(v)), averaged over positions.
    kl = (teacher_logp.exp() * (teacher_logp - student_logp)).sum(-1)
    return kl.mean()


@torch.no_grad()
def evaluate(model, windows: torch.Tensor, teacher=None, chunk: int = 8) -> dict:
    """Held-out cross-entropy (nats/token); with a teacher also greedy agreement with it."""
    model.eval()
    total, agree, count = 0.0, 0, 0
    for i in range(0, windows.size(0), chunk):
        w = windows[i : i + chunk]
        logits = model(input_ids=w[:, :-1]).logits.float()
        total += F.cross_entropy(logits.reshape(-1, logits.size(-1)), w[:, 1:].reshape(-1), reduction="sum").item()
        if teacher is not None:
            t_logits = teacher(input_ids=w[:, :-1]).logits
            agree += (t_logits.argmax(-1) == logits.argmax(-1)).sum().item()
        count += w[:, 1:].numel()
    model.train()
    out = {"heldout_loss": total / count}
    if teacher is not None:
        out["greedy_agreement"] = agree / count
    return out


def resume(checkpoint: str, model, opt, gen: torch.Generator, log, device: str = "cpu") -> tuple[int, float, list, dict | None]:
    """(step, elapsed seconds, eval history, best validated weights) from the checkpoint, loading its
    states; zeros and None if none."""
    if not os.path.exists(checkpoint):
        return 0, 0.0, [], None
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)   # load_state_dict copies to the model's device
    missing, unexpected = model.load_state_dict(state["model"], strict=False)
    if unexpected or set(missing) - set(getattr(model, "BORROWED_KEYS", ())):   # only borrowed tensors may be absent
        raise RuntimeError(f"{checkpoint} does not fit this model: missing {missing}, unexpected {unexpected}")
    opt.load_state_dict(state["optimizer"])
    gen.set_state(state["generator"])
    log(f"resumed from {checkpoint}: step {state['step']}, {state['elapsed_s'] / 60:.1f} min done")
    return state["step"], state["elapsed_s"], state["history"], state.get("best")


def save_checkpoint(checkpoint: str, model, opt, gen: torch.Generator, step: int, elapsed: float, history: list,
                    best: dict | None = None) -> None:
    """Model (trainable state only when the model says so), optimizer, sampler, progress and the best
    validated weights so far (keep_best); atomically."""
    own = getattr(model, "own_state_dict", model.state_dict)()
    tmp = checkpoint + ".tmp"
    torch.save({"model": own, "optimizer": opt.state_dict(), "generator": gen.get_state(),
                "step": step, "elapsed_s": elapsed, "history": history, "best": best}, tmp)
    os.replace(tmp, checkpoint)   # atomic: an interrupted save never corrupts the checkpoint


def lr_at(settings: TrainSettings, step: int, elapsed_s: float) -> float:
    """Linear warm-up over warmup_steps, then cosine decay over the time budget."""
    if step < settings.warmup_steps:
        return settings.lr * (step + 1) / settings.warmup_steps
    frac = min(1.0, elapsed_s / settings.budget_s)
    floor = settings.lr * settings.min_lr_ratio
    return floor + 0.5 * (settings.lr - floor) * (1 + math.cos(math.pi * frac))


def train_steps(model, params: list, groups: list[dict], settings: TrainSettings, checkpoint: str,
                step_loss_fn: Callable[[torch.Generator], tuple[torch.Tensor, dict]],
                validate_fn: Callable[[], dict], log: Callable[[str], None] = print, device: str = "cpu",
                keep_best: str | None = None) -> dict:
    """The time-budgeted loop of the drafts' distillations, resumable from `checkpoint`.

    groups: AdamW parameter groups, each with an `lr_scale` (its lr = the schedule's x lr_scale);
    step_loss_fn(gen) -> (loss, metrics incl. "tokens"); validate_fn() -> held-out metrics.
    Logs every metric averaged over each minute, validates every eval_every_s, checkpoints
    every checkpoint_every_s; returns steps, elapsed seconds, the validation history and the step
    whose weights the model ends with. keep_best: a held-out metric (higher is better); the model
    ends with the weights of the validation where it was highest (early stopping: a draft trained
    past its data's worth overfits, e.g. the GPU run in shared/models peaked at 0.640 and ended at 0.625)."""
    opt = torch.optim.AdamW(groups, lr=settings.lr, betas=(0.9, 0.95), weight_decay=settings.weight_decay)
    gen = torch.Generator().manual_seed(settings.seed)
    step, elapsed, history, best = resume(checkpoint, model, opt, gen, log, device=device)
    trained = {id(p) for p in params}
    named = [(n, p) for n, p in model.named_parameters() if id(p) in trained]
    model.train()
    last_log = last_eval = last_ckpt = time.monotonic()
    window: dict[str, float] = {}
    n_window = 0
    while elapsed < settings.budget_s:
        t0 = time.monotonic()
        for group in opt.param_groups:
            group["lr"] = lr_at(settings, step, elapsed) * group.get("lr_scale", 1.0)
        loss, metrics = step_loss_fn(gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        now = time.monotonic()
        elapsed += now - t0
        for k, v in {"loss": loss.item(), **metrics}.items():
            window[k] = window.get(k, 0.0) + v
        n_window += 1
        if now - last_log >= 60 or elapsed >= settings.budget_s:
            tokens = window.pop("tokens", 0)
            log(f"step {step:6d}  " + "  ".join(f"{k} {v / n_window:.3f}" for k, v in window.items())
                + f"  {tokens / (now - last_log):,.0f} tok/s  {elapsed / 60:5.1f}/{settings.budget_s / 60:.0f} min")
            window, n_window, last_log = {}, 0, now
        if now - last_eval >= settings.eval_every_s or elapsed >= settings.budget_s:
            held_out = validate_fn()
            model.train()
            history.append({"step": step, "elapsed_s": round(elapsed, 1), **held_out})
            log("validation  " + "  ".join(f"{k} {v:.4f}" for k, v in held_out.items()))
            if keep_best and (best is None or held_out[keep_best] > best["value"]):
                best = {"step": step, "value": held_out[keep_best],
                        "params": {n: p.detach().to("cpu", copy=True) for n, p in named}}
            last_eval = time.monotonic()
        if now - last_ckpt >= settings.checkpoint_every_s:
            save_checkpoint(checkpoint, model, opt, gen, step, elapsed, history, best)
            last_ckpt = time.monotonic()
    save_checkpoint(checkpoint, model, opt, gen, step, elapsed, history, best)
    kept = step
    if keep_best and best is not None and best["step"] != step:
        with torch.no_grad():
            for n, p in named:
                p.copy_(best["params"][n])
        kept = best["step"]
        log(f"kept the weights of step {kept}: the best held-out {keep_best}, {best['value']:.4f}")
    model.eval()
    return {"steps": step, "elapsed_s": elapsed, "history": history, "kept_step": kept}


def train_lm(model, train_data, eval_data, settings: TrainSettings, checkpoint: str,
             teacher=None, log: Callable[[str], None] = print, device: str = "cpu") -> dict:
    """Train model in place until the time budget is spent; resume from checkpoint if present."""
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, betas=(0.9, 0.95),
                            weight_decay=settings.weight_decay)
    gen = torch.Generator().manual_seed(settings.seed)
    step, elapsed, history, _ = resume(checkpoint, model, opt, gen, log, device)

    def save():
        save_checkpoint(checkpoint, model, opt, gen, step, elapsed, history)

    eval_windows = fixed_eval_windows(eval_data, 32, settings.seq_len).to(device)
    model.train()
    last_eval = last_ckpt = last_log = time.monotonic()
    tokens_since_log, loss_sum, loss_n = 0, 0.0, 0
    while elapsed < settings.budget_s:
        t0 = time.monotonic()
        for group in opt.param_groups:
            group["lr"] = lr_at(settings, step, elapsed)
        windows = sample_windows(train_data, settings.batch_size, settings.seq_len, gen).to(device)
        loss = step_loss(model, windows, teacher)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_sum, loss_n = loss_sum + loss.item(), loss_n + 1
        step += 1
        tokens_since_log += windows[:, 1:].numel()
        now = time.monotonic()
        elapsed += now - t0
        if now - last_log >= 20 or elapsed >= settings.budget_s:
            rate = tokens_since_log / (now - last_log)
            log(f"step {step:6d}  loss {loss_sum / loss_n:.3f}  {rate:,.0f} tok/s  "
                f"lr {lr_at(settings, step, elapsed):.2e}  {elapsed / 60:5.1f}/{settings.budget_s / 60:.1f} min "
                f"({max(0.0, settings.budget_s - elapsed) / 60:.1f} min left)")
            last_log, tokens_since_log, loss_sum, loss_n = now, 0, 0.0, 0
        if now - last_eval >= settings.eval_every_s or elapsed >= settings.budget_s:
            metrics = evaluate(model, eval_windows, teacher)
            history.append({"step": step, "elapsed_s": round(elapsed, 1), **metrics})
            log("eval  " + "  ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
            last_eval = time.monotonic()
        if now - last_ckpt >= settings.checkpoint_every_s:
            save()
            last_ckpt = time.monotonic()
    save()
    model.eval()
    return {"steps": step, "elapsed_s": elapsed, "history": history}
