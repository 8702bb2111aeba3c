"""ZeroGPU support: the decoding runs in a `@spaces.GPU` worker when the `spaces` package is
present (on a ZeroGPU Space it forks a GPU process per call and pickles what it yields).

So the GPU function takes plain arguments, reaches the loaded models through a module
global set at start (forked workers inherit it), and yields small event records, never
figures. Its duration estimate grows with max new tokens. Without `spaces` the decorator
is not applied and the app runs unchanged. app.py imports this module before torch
touches CUDA, as ZeroGPU requires.
"""
from __future__ import annotations

import os
from typing import Iterator

try:
    import spaces  # noqa: F401  (must be imported before torch initializes CUDA)
except ImportError:
    spaces = None

ON_ZEROGPU = spaces is not None and os.environ.get("SPACES_ZERO_GPU", "").lower() in ("1", "true")
APP = None  # the AppState, set by build_demo; forked GPU workers inherit it


def duration_s(preset_key: str, prompt_ids: list[int], config: dict) -> int:
    """Seconds to reserve: both lanes of a race, with room for loading on the first call."""
    return int(20 + 0.12 * config.get("max_new_tokens", 128))


def _race_records(preset_key: str, prompt_ids: list[int], config: dict) -> Iterator[dict]:
    from ..engine import SpecConfig, race, to_dict
    preset = APP.presets[preset_key] if preset_key in APP.presets else APP.choose("custom", *_custom(preset_key))
    pair = APP.pair(preset)
    cfg = SpecConfig(**{**config, "stop_strings": tuple(config.get("stop_strings", ()))})
    for event in race(pair, prompt_ids, cfg):
        yield to_dict(event)


def _custom(key: str) -> tuple[str, str]:
    target, _, draft = key.removeprefix("custom:").partition("|")
    return target, draft


race_records = spaces.GPU(duration=duration_s)(_race_records) if spaces is not None else _race_records
