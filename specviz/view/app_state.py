"""What the app's handlers share: the presets and the cache of loaded pairs (read-only models).

Per-user data never lives here: each run keeps its own state in locals and gr.State.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.pair import ModelPair
from ..errors import ConfigError
from ..models.cache import PairCache
from ..models.loading import load_pair
from ..models.presets import DEFAULT_PRESETS, Preset


@dataclass
class AppState:
    presets: dict[str, Preset] = field(default_factory=lambda: dict(DEFAULT_PRESETS))
    cache: PairCache = field(default_factory=PairCache)
    device: str = "auto"
    max_new_tokens: int = 512
    max_prompt_chars: int = 20_000

    def preset(self, key) -> Preset:
        if not isinstance(key, str) or key not in self.presets:
            raise ConfigError(f"unknown model pair {str(key)[:80]!r}: pick one from the menu")
        return self.presets[key]

    def pair(self, key: str) -> ModelPair:
        p = self.preset(key)
        return self.cache.get(p.key, lambda: load_pair(p.target, p.draft, device=self.device))
