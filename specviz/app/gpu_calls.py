"""The decoding the page asks for, as functions of plain values: on ZeroGPU, what runs on the GPU.

Each takes an app's handle (`handle(app)`, a string), a preset key, prompt token ids and a
SpecConfig as a dict, and returns or yields event records (dicts) or CPU results: all picklable,
never figures, so they can cross ZeroGPU's process boundary (app/zerogpu.py). The handle names
the app in this process's registry, filled when the page is built (ui.build_demo) and never
rebound: ZeroGPU forks its worker from the main process, so every app and every pair the worker
may need is there at start (app.py), and each pair is warmed up here, once per worker process,
on the worker's own device.
"""
from __future__ import annotations

from typing import Iterator

from ..engine import SpecConfig, race, speculate, to_dict
from ..runtime.pair import ModelPair
from ..runtime.graph_model import POOL
from .zerogpu import ON_ZEROGPU, gpu
from ..engine.analysis.lossless import LosslessResult, lossless_check
from .pairs import warm_up
from .state import AppState

_APPS: dict[str, AppState] = {}    # every app this process serves, by handle (a forked worker inherits it)
_warm: set[str] = set()     # keys warmed up in this process (a ZeroGPU worker warms its own)

# Seconds reserved on ZeroGPU (an estimate: the GPU is held for at most this long per call).
# First call in a worker: the pair is moved to the GPU and warmed up; then each new token costs
# one step in each lane. Tiny on a GPU for the presets shipped (7B at ~30 tok/s per lane is
# ~0.07 s a token for both lanes); the margin covers a busy GPU slice.
FIRST_CALL_S = 20
RACE_S_PER_TOKEN = 0.12
RUN_S_PER_TOKEN = 0.06
LOSSLESS_S_PER_SAMPLE = 0.02


def handle(app: AppState) -> str:
    """The picklable name under which the functions below find `app` (registered on first use)."""
    name = f"app-{id(app)}"             # the registry holds the app, so its id is not reused meanwhile
    _APPS.setdefault(name, app)
    return name


def _pair(app: str, key: str) -> ModelPair:
    if ON_ZEROGPU:
        # Each GPU call starts with no graph or static cache from an earlier one: between calls
        # ZeroGPU may move or release the worker's device memory, which a pooled cache's graphs
        # would still read (the weights' addresses are checked; a cache's own are not).
        POOL.clear()
    state = _APPS[app]
    pair = state.pairs.pair(state.pairs.known(key))
    if state.on_zerogpu and key not in _warm:      # ZeroGPU: warm up on the worker's GPU, not at start
        # Inside the call's decoding slot (the page runs these functions in app.decoders.sliced), so its CUDA
        # graphs are captured here too, once per worker process and pair, whichever function came first.
        warm_up(pair, graphs=None)
        _warm.add(key)
    return pair


def _config(config: dict) -> SpecConfig:
    return SpecConfig(**{**config, "stop_strings": tuple(config.get("stop_strings", ()))})


def _race_s(app: str, key: str, ids: list[int], config: dict) -> int:
    return int(FIRST_CALL_S + RACE_S_PER_TOKEN * config.get("max_new_tokens", 128))


def _run_s(app: str, key: str, ids: list[int], config: dict) -> int:
    return int(FIRST_CALL_S + RUN_S_PER_TOKEN * config.get("max_new_tokens", 128))


def _lossless_s(app: str, key: str, ids: list[int], config: dict, samples: int, report_every: int = 25) -> int:
    return int(FIRST_CALL_S + LOSSLESS_S_PER_SAMPLE * samples)


@gpu(duration=_race_s)
def race_records(app: str, key: str, ids: list[int], config: dict) -> Iterator[dict]:
    """Both lanes' events, as records. Closing this generator stops the race within one round."""
    for event in race(_pair(app, key), ids, _config(config)):
        yield to_dict(event)


@gpu(duration=_run_s)
def run_records(app: str, key: str, ids: list[int], config: dict) -> list[dict]:
    """One whole speculative run's events, as records (step mode, the /generate API)."""
    return [to_dict(event) for event in speculate(_pair(app, key), ids, _config(config))]


@gpu(duration=_run_s)
def run_stream(app: str, key: str, ids: list[int], config: dict) -> Iterator[dict]:
    """One speculative run's events, as records, one by one (so the caller can run it in slices
    and stop it: closing this generator stops the run within one round)."""
    for event in speculate(_pair(app, key), ids, _config(config)):
        yield to_dict(event)


@gpu(duration=_lossless_s)
def lossless_results(app: str, key: str, ids: list[int], config: dict, samples: int,
                     report_every: int = 25) -> Iterator[LosslessResult]:
    """The lossless check's growing tallies (its distributions are already on the CPU), every
    `report_every` samples: 1 lets the caller run it in slices and stop it after any sample."""
    yield from lossless_check(_pair(app, key), ids, _config(config), samples, report_every)
