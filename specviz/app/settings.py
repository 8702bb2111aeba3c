"""Turns the raw values a handler receives into a validated SpecConfig and prompt.

Gradio's API accepts anything a client sends, not only what the sliders allow. Here each value is
coerced to its type (ASCII digits only, no huge numbers) and the hosting profile's own limits are
applied (k and max new tokens); every other rule and bound is `SpecConfig`'s (engine/loop/config.py),
checked there once, and its refusal is shown in the page's words (`PAGE_WORDS`): one ConfigError whose
message the page (or the API error) shows.
"""
from __future__ import annotations

import math
import re

from ..engine.loop.config import SEED_MAX, SpecConfig, parse_tree, tree_nodes
from ..engine.loop.output import EMPTY_PROMPT, encode_prompt
from ..errors import ConfigError
from .profile import Limits
from ..models.chat import chat_ids
from .form_table import BY_NAME, CHAIN, FORM_FIELDS, HOST, PAGE_WORDS, span

MAX_STOP_STRINGS, MAX_STOP_LEN = 4, 64
MIN_SAMPLES, MAX_SAMPLES, SAMPLES_STEP = 50, 2000, 50    # the lossless check's samples: its range and step
PAGE_TREE_NODES = 64      # a token tree's nodes at most from the page (step mode draws every one)
MAX_SEED = SEED_MAX       # SpecConfig's (share links read it)
# The form's fields SpecConfig takes under the same name (chat, the pair and the prompt are the request's).
ENGINE_FIELDS = tuple(name for name in FORM_FIELDS if name in SpecConfig.__dataclass_fields__)


# A number sent as text: ASCII digits only (Python's int() and float() also read "２", "٣" and "1_0").
WHOLE = re.compile(r"[+-]?[0-9]{1,18}")
DECIMAL = re.compile(r"[+-]?([0-9]{1,30}(\.[0-9]{0,30})?|\.[0-9]{1,30})([eE][+-]?[0-9]{1,3})?")
HUGE = 10**15             # no field takes a whole number this large: it is refused as such, shortly


def as_int(name: str, value) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{name} must be a whole number, not {value!r}")
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        value = int(value)
    if isinstance(value, str) and WHOLE.fullmatch(value.strip()):
        value = int(value.strip())
    if isinstance(value, int):
        if abs(value) >= HUGE:
            raise ConfigError(f"{name} is out of range, not {short_number(value)}")
        return value
    raise ConfigError(f"{name} must be a whole number (ASCII digits), not {str(value)[:40]!r}")


def short_number(value) -> str:
    """A number as a short line: 1e+308, not its 309 digits."""
    try:
        return f"{float(value):.3g}"
    except OverflowError:
        return f"a number of {len(str(abs(int(value))))} digits"


def as_float(name: str, value) -> float:
    if isinstance(value, bool):
        raise ConfigError(f"{name} must be a number, not {value!r}")
    if isinstance(value, str) and not DECIMAL.fullmatch(value.strip()):
        raise ConfigError(f"{name} must be a number (ASCII digits), not {value[:40]!r}")
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
        raise ConfigError(EMPTY_PROMPT)
    if len(prompt) > max_chars:
        raise ConfigError(f"the prompt is {len(prompt):,} characters long; this server accepts at most {max_chars:,}")
    if any("\ud800" <= ch <= "\udfff" for ch in prompt):
        raise ConfigError("the prompt contains a lone surrogate code point (broken UTF-16): send valid Unicode text")
    return prompt


def prompt_ids(pair, prompt: str, limits: Limits, chat: bool = False) -> list[int]:
    """Tokenize (through the target's chat template for instruct presets); a prompt over the
    token limit is refused (never cut silently)."""
    wrap = chat and getattr(pair.tokenizer, "chat_template", None) and isinstance(prompt, str) and prompt.strip()
    # Tokenized once: through the template, or as it is (where empty or non-text prompts fail).
    ids = encode_prompt(pair, chat_ids(pair.tokenizer, prompt) if wrap else prompt, check_length=False)
    # One limit, one message: the server's, or the models' where that is smaller.
    most = min(limits.max_prompt_tokens, pair.max_prompt_tokens)
    if len(ids) > most:
        raise ConfigError(f"the prompt is {len(ids):,} tokens long; this server accepts at most {most:,}: shorten it")
    return ids


def stop_strings(text) -> tuple[str, ...]:
    """One stop string per line of the box (blank lines ignored)."""
    if text is None or text == "":
        return ()
    if not isinstance(text, str):
        raise ConfigError("stop strings must be text, one per line")
    lines = tuple(line for line in text.split("\n") if line.strip())
    if len(lines) > MAX_STOP_STRINGS or any(len(line) > MAX_STOP_LEN for line in lines):
        raise ConfigError(f"at most {MAX_STOP_STRINGS} stop strings of up to {MAX_STOP_LEN} characters each")
    return lines


def draft_shape(text) -> tuple[int, ...] | None:
    """The form's "draft shape" box: "" or "chain" -> None (a chain of k); "2,2,1,1" -> (2, 2, 1, 1), the
    candidates per depth of a token tree (spaces allowed). A bad shape is refused in one line."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise ConfigError("draft shape must be text: chain, or candidates per depth such as 2,2,1,1")
    text = text.strip().lower().replace(" ", "")
    if text in ("", CHAIN):
        return None
    if len(text) > 80 or not re.fullmatch(r"[0-9,]+", text):       # ASCII digits only ("２,２" is refused)
        raise ConfigError(f"draft shape must be chain, or candidates per depth such as 2,2,1,1, not {text[:40]!r}")
    try:
        shape = parse_tree(text)
    except ConfigError:
        raise ConfigError(f"draft shape must be chain, or candidates per depth such as 2,2,1,1, not {text[:40]!r}") from None
    if any(w < 1 for w in shape) or not shape:
        raise ConfigError(f"draft shape: every depth needs at least one candidate, not {text[:40]!r}")
    if tree_nodes(shape) > PAGE_TREE_NODES:
        raise ConfigError(f"draft shape {text[:40]} has {tree_nodes(shape)} nodes; this page draws at most "
                          f"{PAGE_TREE_NODES}: narrow or shorten it")
    return shape


def in_page_words(err: ConfigError, words: str | None = None) -> ConfigError:
    """SpecConfig's refusal with the field named as the page names it, or as `words` (the same error otherwise,
    and where the refusal names no field)."""
    words = words or PAGE_WORDS.get(err.field)
    if not words or not err.field:         # a refusal that names no field is shown as it is
        return err
    return ConfigError(str(err).replace(err.field, words, 1), field=err.field)


def check(name: str, value, limits: Limits = Limits(), words: str | None = None):
    """One form field's value as SpecConfig takes it: coerced by its kind (form_table.SETTINGS), within the
    hosting profile's limit where its slider's top is the host's (k, max new tokens). A refusal names the
    field as `words` (default: the page's words). SpecConfig's own bounds are checked by `make_config`, or
    for this field alone by `check_alone`."""
    setting = BY_NAME[name]
    words = words or setting.words
    if setting.kind == "shape":
        return draft_shape(value)
    if setting.kind == "stops":
        return stop_strings(value)
    if setting.kind == "int":
        value = as_int(words, value)
    elif setting.kind == "float":
        value = as_float(words, value)
    bounds = span(setting, limits) if setting.span is not None and setting.span[1] == HOST else None
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise ConfigError(f"{words} must be between {bounds[0]} and {bounds[1]}, not {value}", field=name)
    return value


def check_alone(name: str, value, limits: Limits = Limits(), words: str | None = None):
    """`check`, then SpecConfig's own check of this one field (the others at their defaults): what a share
    link reads, so that a link accepts exactly the values Run accepts."""
    value = check(name, value, limits, words)
    if name not in ENGINE_FIELDS:          # chat: the request's own (a switch, checked as read)
        return value
    try:
        SpecConfig(**{name: value})
    except ConfigError as err:
        raise in_page_words(err, words) from None
    return value


def make_config(values: dict, limits: Limits = Limits()) -> SpecConfig:
    """The form's values (RunRequest's names; the confidence stop already resolved) as one SpecConfig,
    built once: each coerced by `check`, k and max new tokens within the hosting profile's, every
    other bound SpecConfig's own."""
    checked = {name: check(name, values[name], limits) for name in ENGINE_FIELDS}
    checked.update(k_min=limits.k_range[0], k_max=limits.k_range[1])
    try:
        return SpecConfig(**checked)
    except ConfigError as err:
        raise in_page_words(err) from None
