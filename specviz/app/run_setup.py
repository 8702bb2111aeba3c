"""What a run ran with, in one line of words: the "Ran:" line under a race's verdict (view/handlers.py)
and under each workshop answer (app/workshop.py).

A visitor may change the menu mid-race, and a room compares answers: the line names the pair and every
setting that changes what was decoded, leaving out those at their "off" value. Plain text; the view
escapes it.
"""
from __future__ import annotations

from ..engine import SpecConfig
from ..engine.loop.drafters import DEFAULT_DRAFTER, DRAFTERS

PROMPT_SHOWN = 48          # characters of a prompt's first line quoted in the line


def settings_text(cfg: SpecConfig) -> str:
    """'k = 3, greedy, 96 new tokens at most'; sampling adds its seed and filters, and so on."""
    parts = [f"{DRAFTERS[cfg.drafter].label} drafting"] if cfg.drafter != DEFAULT_DRAFTER else []
    # Under adaptive k, cfg.k is only where k starts (engine/loop/config.py); a token tree leaves k unused.
    if cfg.tree:
        budget = f" (at most {cfg.tree_budget} nodes)" if cfg.tree_budget else ""
        parts.append(f"token tree {','.join(map(str, cfg.tree))}{budget}")
    else:
        parts.append(f"adaptive k from {cfg.k} ({cfg.k_min}–{cfg.k_max})" if cfg.adaptive_k else f"k = {cfg.k}")
    if cfg.greedy:
        parts.append("greedy")
    else:
        parts.append(f"temperature {cfg.temperature:g}, seed {cfg.seed}")
        if cfg.top_k:
            parts.append(f"top-k {cfg.top_k}")
        if cfg.top_p < 1:
            parts.append(f"top-p {cfg.top_p:g}")
    if cfg.draft_temperature is not None:
        parts.append(f"the draft sampling at temperature {cfg.draft_temperature:g}"
                     + (f" (seed {cfg.seed})" if cfg.greedy else ""))
    if cfg.confidence_stop:
        parts.append(f"drafting stops below p = {cfg.confidence_stop:g}")
    if cfg.rule != "exact":
        parts.append(f"rule {cfg.rule}")
    parts.append(f"{cfg.max_new_tokens} new tokens at most")
    return ", ".join(parts)


def ran_text(label: str, settings: str, prompt: str | None = None) -> str:
    """'<pair> · <settings> · prompt “<its first line …>”' (the prompt left out when none is given)."""
    text = f"{label} · {settings}"
    lines = (prompt or "").strip().splitlines()
    if not lines:
        return text
    first = lines[0].strip()
    cut = len(first) > PROMPT_SHOWN or len(lines) > 1
    return text + f" · prompt “{first[:PROMPT_SHOWN].rstrip()}{' …' if cut else ''}”"
