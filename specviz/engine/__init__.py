"""The speculative decoding engine: sans-I/O generators of typed events (no UI, no printing).

Rooms by role, imports pointing down only: analysis/ (measuring and explaining runs) -> loop/
(the decoding loop) -> metrics/ (every figure's definition), all over specviz/runtime/ (running
models fast), the package below the engine.
"""
from .loop.baseline import decode_baseline
from .loop.config import SpecConfig
from .loop.events import Event, to_dict
from .loop.race import race
from .loop.speculative import speculate
from ..runtime.pair import ModelPair

__all__ = ["SpecConfig", "ModelPair", "Event", "to_dict", "speculate", "decode_baseline", "race"]
