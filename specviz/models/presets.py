"""Model-pair presets: what the app offers in its "model pair" menu.

A preset names a target and a draft (hub ids or folders; None = the bundled pair), the k
that suits it, and example prompts in its domain. The hosting profile (spaces.yaml) can
replace this list; without one, the bundled pair is the only preset.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets"

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
    chat: bool = False                 # wrap prompts in the target's chat template by default (instruct models)


# Easy and hard tokens side by side: boilerplate and lists the draft guesses, facts it cannot.
SMOLLM2_EXAMPLES = (
    "Write a Python function that checks whether a number is prime.",
    "List five tips for staying focused while studying.",
    "What is the capital of Australia, and why is it not Sydney?",
    "Write a short, polite email asking a colleague to review my report.",
    "Explain what a hash table is in three sentences.",
)
BUNDLED = Preset("bundled", "specviz-code · bundled pair (Python, CPU-friendly)", None, None, 4, BUNDLED_EXAMPLES)
SMOLLM2 = Preset("smollm2", "SmolLM2-135M-Instruct + specviz's distilled 2-layer draft (fetch once)",
                 "HuggingFaceTB/SmolLM2-135M-Instruct", str(ASSETS / "models" / "smollm2-draft"), 2,
                 SMOLLM2_EXAMPLES, chat=True)
DEFAULT_PRESETS = {BUNDLED.key: BUNDLED, SMOLLM2.key: SMOLLM2}


def get_preset(key: str) -> Preset:
    from ..errors import ConfigError
    if key not in DEFAULT_PRESETS:
        raise ConfigError(f"unknown preset {key!r}: choose one of {', '.join(DEFAULT_PRESETS)}")
    return DEFAULT_PRESETS[key]


def load_preset(key: str, device: str = "auto", dtype: str = "auto"):
    """The ModelPair of a preset (`specviz.load_preset("smollm2")`)."""
    from .loading import load_pair
    preset = get_preset(key)
    return load_pair(preset.target, preset.draft, device=device, dtype=dtype)
