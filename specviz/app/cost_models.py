"""This server's cost models: one per (pair, device, decode path, machine), kept while the server runs.

The engine's CostModel (engine/analysis/cost_model.py) holds the samples; this registry names them.
The machine is this host and the threads torch decodes with (a figure timed with 4 threads says
nothing of 1); the decode path is what the target's lane reports (`LaneStats.decode_path`), so a
race that fell back to eager steps never prices a CUDA-graph race. The load-time calibration is filed under the path a race on that device takes.
"""
from __future__ import annotations

import platform
import threading

import torch

from ..engine.analysis.cost_model import CostModel
from .run_records import DecodePath


def machine() -> str:
    """This host and the threads torch decodes with here."""
    threads = torch.get_num_threads()
    return f"{platform.node() or 'this host'}, {threads} thread{'s' if threads != 1 else ''}"


def default_path(device) -> str:
    """The decode path a race on `device` reports when nothing fell back (runtime/cached_model.py)."""
    return "CUDA graphs" if getattr(device, "type", str(device)) == "cuda" else "eager"


def path_of(done_stats) -> str:
    """A lane's decode path (`LaneStats.decode_path`). The draft's own step is not part of the key: the
    calibration times the draft through the same lean step a race takes (calibrate.py, cached_model)."""
    return str(DecodePath.parse(getattr(done_stats, "decode_path", None)))


class CostModels:
    def __init__(self):
        self._models: dict[tuple[str, str, str, str], CostModel] = {}
        self._latest: dict[str, CostModel] = {}       # pair key -> the model its latest race or timing fed
        self._lock = threading.Lock()

    def get(self, pair_key: str, device, path: str) -> CostModel:
        key = (pair_key, str(device), path, machine())
        with self._lock:
            model = self._models.setdefault(key, CostModel(key))
            self._latest[pair_key] = model
            return model

    def latest(self, pair_key: str) -> CostModel | None:
        """The model the pair's latest race or timing fed (what the page shows before the next race)."""
        return self._latest.get(pair_key)
