"""specviz: speculative decoding, visualized.

Public API: `load_pair`, `load_preset`, `SpecConfig`, `speculate`, `decode_baseline`, `race` (see README).
"""
from .engine import SpecConfig, decode_baseline, race, speculate
from .errors import ConfigError, LoadError, SpecvizError
from .models.loading import load_pair
from .models.presets import load_preset

__all__ = ["load_pair", "load_preset", "SpecConfig", "speculate", "decode_baseline", "race",
           "SpecvizError", "ConfigError", "LoadError"]
