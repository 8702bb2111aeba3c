"""What the app's handlers share, split by role: `pairs` (the menu, custom pairs, loaded pairs and
their fetches: app/pairs.py), `decoders` (the device's decoding slots: app/decoders.py) and `advisor`
(the cost models and the k advice: app/advisor.py), with the host's `limits`. A tab reads the roles
it uses and hands the whole state to its handlers, which pass it to the app layer's request functions
(app/request.py); the Explain tab is handed the advisor and the presets alone.

Per-user data never lives here: each run keeps its own state in locals and gr.State.
"""
from __future__ import annotations

from ..models.presets import Preset, tier_presets
from .advisor import Advisor
from .decoders import Decoders
from .pairs import CUSTOM, Pairs, warm_up  # noqa: F401  (the names callers of this module know)
from .profile import Limits, Profile
from .side_work import SideWork
from .slots import SLICE_S


class AppState:
    """One server's shared state, built from the host's settings (spaces.yaml's profile, or a test's)."""

    def __init__(self, presets: dict[str, Preset] | None = None, limits: Limits | None = None, device: str = "auto",
                 allow_custom_models: bool = False, allow_local_model_paths: bool = False,
                 max_prompt_chars: int = 50_000, via_records: bool = False, on_zerogpu: bool = False,
                 slice_s: float = SLICE_S, advise_k: bool = False, side_work: SideWork | None = None,
                 servers: tuple = ()):
        self.limits = limits or Limits()
        # Serving engines the host listed (remote/servers.py: `app.py --server`, spaces.yaml `servers:`); the
        # Server tab shows them.
        self.servers = tuple(servers)
        self.max_prompt_chars = max_prompt_chars
        self.via_records = via_records     # stream events as plain records (as across ZeroGPU's process boundary)
        self.on_zerogpu = on_zerogpu       # no GPU in this process: load at start, warm up in the worker
        # In-process work beside the races (a fetched model's conversion, a pair loading): a race that
        # overlapped it says so, as it does for other programs' load (app/side_work.py).
        self.side_work = side_work or SideWork()
        self.pairs = Pairs(tier_presets() if presets is None else presets, self.limits.max_loaded_pairs, device,
                           self.side_work, allow_custom_models, allow_local_model_paths, on_zerogpu)
        self.decoders = Decoders(self.limits.concurrency_per_device, slice_s)
        # Measure each loaded pair's costs on this machine and offer the k they favour: on for a served
        # app (app.py), off by default so tests' timings are not shared with a calibration.
        self.advisor = Advisor(self.decoders, self.pairs.cache, self.limits.k_range, advise_k)
        self.pairs.on_loaded = self.advisor.measure_later

    @classmethod
    def from_profile(cls, profile: Profile, device: str = "auto", on_zerogpu: bool = False,
                     servers: tuple | None = None) -> "AppState":
        """The app a profile describes; `servers` (app.py: spaces.yaml's and --server's) default to the profile's."""
        return cls(presets=dict(profile.presets), limits=profile.limits,
                   servers=profile.servers if servers is None else servers,
                   allow_custom_models=profile.allow_custom_models and not on_zerogpu, device=device,
                   allow_local_model_paths=profile.allow_local_model_paths, on_zerogpu=on_zerogpu)
