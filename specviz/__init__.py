"""specviz: speculative decoding, visualized.

Public API: `load_pair`, `SpecConfig`, `speculate`, `decode_baseline`, `race` (see README).
"""
from .engine import SpecConfig, decode_baseline, race, speculate
from .errors import ConfigError, LoadError, SpecvizError
from .models.loading import load_pair

__all__ = ["load_pair", "SpecConfig", "speculate", "decode_baseline", "race",
           "SpecvizError", "ConfigError", "LoadError"]
