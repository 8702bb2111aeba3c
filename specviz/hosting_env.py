"""What the environment says about the host, read in one place: is this a ZeroGPU Space?

Hugging Face sets SPACES_ZERO_GPU on a ZeroGPU Space (there the process has no GPU; one appears
per `@spaces.GPU` call). The model loader (dtype, placement), the profile (tier detection) and
app/zerogpu.py (whether to wrap calls) all ask `zerogpu_space`. Only the standard library here:
app/zerogpu.py reads it before torch is imported.
"""
from __future__ import annotations

import os
from typing import Mapping


def zerogpu_space(env: Mapping[str, str] | None = None) -> bool:
    """SPACES_ZERO_GPU is 1 or true (any case) in env (default: this process's environment)."""
    env = os.environ if env is None else env
    return env.get("SPACES_ZERO_GPU", "").lower() in ("1", "true")
