"""What the app's handlers share: the hosting profile (presets, limits) and the cache of
loaded pairs (read-only models). Per-user data never lives here: each run keeps its own
state in locals and gr.State.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.pair import ModelPair
from ..errors import ConfigError
from ..hosting.profile import Limits, Profile
from ..models.cache import PairCache
from ..models.loading import HUB_ID, load_pair
from ..models.presets import DEFAULT_PRESETS, Preset

CUSTOM = "custom"


@dataclass
class AppState:
    presets: dict[str, Preset] = field(default_factory=lambda: dict(DEFAULT_PRESETS))
    limits: Limits = field(default_factory=Limits)
    allow_custom_models: bool = False
    device: str = "auto"
    cache: PairCache | None = None
    max_prompt_chars: int = 50_000
    via_records: bool = False       # stream events as plain records (as across ZeroGPU's process boundary)

    def __post_init__(self):
        if self.cache is None:
            self.cache = PairCache(self.limits.max_loaded_pairs)

    @classmethod
    def from_profile(cls, profile: Profile, device: str = "auto") -> "AppState":
        return cls(presets=dict(profile.presets), limits=profile.limits,
                   allow_custom_models=profile.allow_custom_models, device=device)

    @property
    def max_new_tokens(self) -> int:
        return self.limits.max_new_tokens

    def preset(self, key) -> Preset:
        if not isinstance(key, str) or key not in self.presets:
            raise ConfigError(f"unknown model pair {str(key)[:80]!r}: pick one from the menu")
        return self.presets[key]

    def choose(self, key, custom_target=None, custom_draft=None) -> Preset:
        """The preset to run: a menu entry, or the visitor's own hub ids when the server allows them."""
        custom_target = (custom_target or "").strip() if isinstance(custom_target, str) else custom_target
        custom_draft = (custom_draft or "").strip() if isinstance(custom_draft, str) else custom_draft
        if key != CUSTOM and not custom_target and not custom_draft:
            return self.preset(key)
        if not self.allow_custom_models:
            raise ConfigError("custom models are turned off on this server: pick a model pair from the menu")
        for name, value in (("target", custom_target), ("draft", custom_draft)):
            if value and (not isinstance(value, str) or not HUB_ID.match(value) or ".." in value):
                raise ConfigError(f"the custom {name} must be a Hugging Face Hub id such as owner/name "
                                  f"(local paths are not accepted)")
        if not custom_target:
            raise ConfigError("type a target model id (owner/name) to use a custom pair")
        return Preset(f"{CUSTOM}:{custom_target}|{custom_draft or ''}", f"{custom_target} ← {custom_draft or 'no draft'}",
                      custom_target, custom_draft or None, 4, ())

    def pair(self, preset: Preset) -> ModelPair:
        return self.cache.get(preset.key, lambda: warm_up(load_pair(preset.target, preset.draft, device=self.device)))


def warm_up(pair: ModelPair) -> ModelPair:
    """One short race right after loading: first-call costs (kernel selection, allocator growth)
    are paid here, not by whichever lane of a visitor's race happens to run first."""
    from ..engine import SpecConfig, race
    drafter = "model" if pair.draft is not None else "prompt_lookup"
    for _ in race(pair, "Hello, world. Hello,", SpecConfig(k=4, max_new_tokens=12, drafter=drafter)):
        pass
    return pair
