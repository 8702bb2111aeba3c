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

from ..engine.output import encode_prompt
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
    --chat/--no-chat switch or the preset's) applies to the prompts that do not say."""
    if path is None:
        items = builtin_prompts()
    elif path.endswith(".json"):
        items = [{"kind": "file", "text": i} if isinstance(i, str) else {"kind": i.get("kind", "file"), **i}
                 for i in json.loads(Path(path).read_text(encoding="utf-8"))]
    else:
        raw = Path(path).read_text(encoding="utf-8")
        items = [{"kind": "file", "text": t.strip("\n") + "\n"} for t in re.split(r"^---$", raw, flags=re.M) if t.strip()]
    return [{"kind": i["kind"], "text": i["text"], "chat": bool(i.get("chat", chat))} for i in items]


def prompt_ids(pair, prompt: dict) -> list[int]:
    """One prompt of a set as the target's token ids: through its chat template when the prompt says
    "chat", else the raw text; validated against the pair (encode_prompt)."""
    text = prompt["text"]
    return encode_prompt(pair, chat_ids(pair.tokenizer, text, pair.target_name) if prompt.get("chat") else text)
