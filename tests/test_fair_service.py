"""Issue 27: no visitor can hold the app.

Each test here failed on the code before its fix: tiny temperatures and top-p crashed a run
with NaN probabilities; long jobs (lossless, step decode, /generate, workshop) held the only
decoding slot to the end and ignored Stop; one session could fill the whole queue; a failed
load was forgotten and tried again by every visitor; rejected values logged tracebacks.
"""
from __future__ import annotations

import pytest
import torch

from specviz.engine.config import MIN_TEMPERATURE, SpecConfig
from specviz.engine.sampling import warp
from specviz.errors import ConfigError


# --- 4: sampling parameters that underflow -------------------------------------------------
@pytest.mark.parametrize("field", ["temperature", "draft_temperature"])
def test_a_temperature_below_the_minimum_is_refused_in_one_line(field):
    with pytest.raises(ConfigError, match=f"^{field} must be 0 .greedy. or at least {MIN_TEMPERATURE:g}") as err:
        SpecConfig(**{field: 1e-39})
    assert "\n" not in str(err.value)
    SpecConfig(**{field: MIN_TEMPERATURE})      # the minimum itself is fine


def test_a_tiny_top_p_keeps_the_most_likely_token():
    logits = torch.tensor([[3.0, 1.0, -2.0, 0.5]])
    for top_p in (1e-300, 1e-45, 1e-9):
        probs = warp(logits, SpecConfig(temperature=1.0, top_p=top_p))
        assert torch.isfinite(probs).all() and probs[0, 0] == 1.0
    probs = warp(torch.tensor([[80.0, -80.0, 0.0]]), SpecConfig(temperature=MIN_TEMPERATURE, top_p=1e-300))
    assert torch.isfinite(probs).all() and probs[0, 0] == 1.0
