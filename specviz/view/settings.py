"""Turns the raw values a handler receives into a validated SpecConfig.

Gradio's API accepts anything a client sends, not only what the sliders allow, so every
value is checked here (type and range) and a bad one becomes a ConfigError whose message
the page shows.
"""
from __future__ import annotations

import math

from ..engine.config import SpecConfig
from ..errors import ConfigError


def as_int(name: str, value) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{name} must be a whole number, not {value!r}")
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise ConfigError(f"{name} must be a whole number, not {str(value)[:40]!r}")


def as_float(name: str, value) -> float:
    if isinstance(value, bool):
        raise ConfigError(f"{name} must be a number, not {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, not {str(value)[:40]!r}") from None
    if not math.isfinite(out):
        raise ConfigError(f"{name} must be a finite number")
    return out


def check_prompt(prompt, max_chars: int) -> str:
    if not isinstance(prompt, str):
        raise ConfigError("the prompt must be text")
    if not prompt.strip():
        raise ConfigError("the prompt is empty: type some text to continue")
    if len(prompt) > max_chars:
        raise ConfigError(f"the prompt is {len(prompt):,} characters long; the limit is {max_chars:,}")
    return prompt


def make_config(drafter, k, adaptive, temperature, top_k, top_p, max_new_tokens, seed,
                max_new_limit: int = 512) -> SpecConfig:
    max_new = as_int("max new tokens", max_new_tokens)
    if not 1 <= max_new <= max_new_limit:
        raise ConfigError(f"max new tokens must be between 1 and {max_new_limit}, not {max_new}")
    if not isinstance(adaptive, bool):
        raise ConfigError("adaptive k must be true or false")
    return SpecConfig(k=as_int("k", k), temperature=as_float("temperature", temperature),
                      top_k=as_int("top-k", top_k), top_p=as_float("top-p", top_p), max_new_tokens=max_new,
                      seed=as_int("seed", seed), drafter=drafter if isinstance(drafter, str) else repr(drafter),
                      adaptive_k=adaptive)
