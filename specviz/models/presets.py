"""Model-pair presets: what the app offers in its "model pair" menu.

A preset names a target and a draft (hub ids or folders; None = the bundled pair), the k
that suits it, and example prompts in its domain. The hosting profile (spaces.yaml) can
replace this list; without one, the bundled pair is the only preset.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Prompts end mid-line or after a colon, not with a newline: the tokenizer merges a newline with
# the next line's indentation, so a prompt ending in a bare newline reads as "a top-level line
# comes next" and the model starts a new class or import.
BUNDLED_EXAMPLES = (
    "def fibonacci(n):",
    "class Stack:\n    \"\"\"A last-in, first-out stack.\"\"\"\n\n    def __init__(self):",
    "import os\nimport sys\n\n\ndef main(argv=None):",
    "    def __repr__(self):\n        return",
    "for key, value in sorted(mapping.items()):",
)


@dataclass(frozen=True)
class Preset:
    key: str
    label: str
    target: str | None = None          # None: the bundled pair
    draft: str | None = None
    k: int = 4
    examples: tuple[str, ...] = field(default_factory=tuple)


BUNDLED = Preset("bundled", "specviz-code · bundled pair (Python, CPU-friendly)", None, None, 4, BUNDLED_EXAMPLES)
DEFAULT_PRESETS = {BUNDLED.key: BUNDLED}
