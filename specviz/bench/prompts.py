"""The benchmark's prompt sets.

The built-in set has three kinds: code continuation (cut from held-out standard-library
files, which the bundled models never trained on), repetitive/input-grounded text (where
the continuation repeats what the prompt already holds, prompt lookup's home ground), and
free text (docstring prose). `--prompts FILE` reads a JSON list of strings or of
{"kind", "text", "chat"} objects (chat: wrapped in the target's chat template), or a text file with prompts separated by lines holding only ---.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..engine.loop.output import encode_prompt
from ..errors import ConfigError
from ..models.chat import chat_ids
from ..models.stdlib_split import is_heldout, read_source, source_files, stdlib_root

DEF_LINE = re.compile(r"^[ \t]*def \w+\(.*\):[ \t]*$", re.M)

GROUNDED = [
    "COLORS = {\n    'red': (255, 0, 0),\n    'green': (0, 255, 0),\n    'blue': (0, 0, 255),\n}\n\n"
    "def color_names():\n    return ['red', 'green', 'blue']\n\n\nCOLOURS = {\n    'red': (255, 0, 0),",
    "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n\n"
    "    def __repr__(self):\n        return f'Point({self.x!r}, {self.y!r})'\n\n\n"
    "class Size:\n    def __init__(self, width, height):\n        self.width = width",
]
FREE_TEXT = [
    '"""Utilities for reading configuration files.\n\nThis module provides a small parser for',
]


def heldout_code_prompts(count: int = 4, context_chars: int = 600) -> list[str]:
    """Prompts that end on a `def` line of held-out stdlib files (after its colon, without the
    newline, which the tokenizer would otherwise split from the next line's indentation)."""
    root = stdlib_root()
    prompts = []
    for path in source_files(root):
        if not is_heldout(path.relative_to(root).as_posix()):
            continue
        text = read_source(path) or ""
        match = next((m for m in DEF_LINE.finditer(text) if m.start() > context_chars), None)
        if match is None:
            continue
        start = text.rfind("\n", 0, match.end() - context_chars) + 1
        prompts.append(text[start : match.end()].rstrip())
        if len(prompts) == count:
            break
    return prompts


def builtin_prompts() -> list[dict]:
    return ([{"kind": "code", "text": t} for t in heldout_code_prompts()]
            + [{"kind": "grounded", "text": t} for t in GROUNDED]
            + [{"kind": "free text", "text": t} for t in FREE_TEXT])


def load_prompts(path: str | None, chat: bool | None = None) -> list[dict]:
    """The prompts of a file (or the built-in set). A prompt's own "chat" key wins; `chat` (the
    --chat/--no-chat switch or the preset's) applies to the prompts that do not say.
    A file that is missing, malformed or empty is a ConfigError naming what is wrong, before any model loads."""
    if path is None:
        items = builtin_prompts()
    else:
        try:
            raw = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ConfigError(f"--prompts {path}: cannot read it ({err.__class__.__name__}: "
                              f"{getattr(err, 'strerror', None) or err})") from None
        if path.endswith(".json"):
            items = _json_prompts(path, raw)
        else:
            items = [{"kind": "file", "text": t.strip("\n") + "\n"} for t in re.split(r"^---$", raw, flags=re.M)
                     if t.strip()]
        if not items:
            raise ConfigError(f"--prompts {path}: it holds no prompts")
    return [{"kind": i["kind"], "text": i["text"], "chat": bool(i.get("chat", chat))} for i in items]


def _json_prompts(path: str, raw: str) -> list[dict]:
    """A JSON list whose items are strings or {"text", optional "kind" and "chat"} objects."""
    shape = 'a JSON list of strings or of {"kind", "text", "chat"} objects'
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ConfigError(f"--prompts {path}: not valid JSON ({err.msg} at line {err.lineno}); it must be {shape}") from None
    if not isinstance(data, list):
        kind = {"dict": "object", "str": "string", "int": "number", "float": "number", "bool": "boolean",
                "NoneType": "null"}.get(type(data).__name__, type(data).__name__)
        raise ConfigError(f"--prompts {path}: it must be {shape}, not a JSON {kind}")
    items = []
    for n, item in enumerate(data):
        if isinstance(item, str):
            item = {"text": item}
        if not (isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"].strip()):
            raise ConfigError(f"--prompts {path}: item {n} is not a non-empty string or an object with a \"text\"")
        items.append({"kind": str(item.get("kind", "file")), **{k: v for k, v in item.items() if k != "kind"}})
    return items


def prompt_ids(pair, prompt: dict) -> list[int]:
    """One prompt of a set as the target's token ids: through its chat template when the prompt says
    "chat", else the raw text; validated against the pair (encode_prompt)."""
    text = prompt["text"]
    return encode_prompt(pair, chat_ids(pair.tokenizer, text, pair.target_name) if prompt.get("chat") else text)
