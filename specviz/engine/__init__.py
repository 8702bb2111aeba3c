"""The speculative decoding engine: sans-I/O generators of typed events (no UI, no printing)."""
from .baseline import decode_baseline
from .config import SpecConfig
from .events import Event, to_dict
from .pair import ModelPair
from .race import race
from .speculative import speculate

__all__ = ["SpecConfig", "ModelPair", "Event", "to_dict", "speculate", "decode_baseline", "race"]
