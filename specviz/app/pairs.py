"""The model pairs a server offers, as one role: the menu (presets, and a visitor's own hub ids when
the server allows them), the cache of loaded pairs (read-only models) and their loading.

A custom pair is registered under its own key, so the decoding functions (app/gpu_calls.py) look every
pair up by key alone. On ZeroGPU every preset is loaded at start (`load_all`) and kept: the GPU worker
is forked from this process, and a pair loaded here later would not be in it. A pair that loads is
warmed up, then handed to `on_loaded` (the k advice times it: app/advisor.py); a background warm-up
(`preload`) ends once that timing has, since it holds the decoding slot the first race needs.
"""
from __future__ import annotations

import logging
import threading
from typing import Callable

from ..engine.loop.drafters import MODEL, PROMPT_LOOKUP
from .warming import Warming
from ..errors import ConfigError, LoadError, SpecvizError
from ..models.fetch import FETCHABLE, fetch_hint, fetched
from ..models.loading import HUB_ID, is_local, load_pair
from ..models.presets import Preset
from ..runtime.pair import ModelPair
from .fetches import Fetches
from .pair_cache import PairCache
from .side_work import SideWork
from .visitor_text import for_visitor

CUSTOM = "custom"
log = logging.getLogger(__name__)
TIMING_WAIT_S = 120.0         # a background warm-up waits this long at most for the pair's timing (app/advisor.py)
FAILED_LOAD_MEMORY_S = 60.0    # a pair that failed to load fails at once for this long (then is tried again)


class Pairs:
    """The menu's presets, the custom pairs chosen since, and the loaded pairs (`cache`)."""

    def __init__(self, presets: dict[str, Preset], keep: int, device: str = "auto", side_work: SideWork | None = None,
                 allow_custom_models: bool = False, allow_local_model_paths: bool = False, on_zerogpu: bool = False):
        self.presets = presets
        self.device = device
        self.allow_custom_models = allow_custom_models
        self.allow_local_model_paths = allow_local_model_paths   # custom ids may name server folders (spaces.yaml)
        self.on_zerogpu = on_zerogpu       # no GPU in this process: load at start, warm up in the worker
        # In-process work beside the races (a pair loading, a fetched model's conversion): a race that
        # overlapped it says so (app/side_work.py).
        self.side_work = side_work or SideWork()
        self.warming = Warming()        # pairs loading in the background now (app/warming.py)
        self.fetches = Fetches(self.side_work)
        self.custom: dict[str, Preset] = {}
        self._custom_lock = threading.Lock()
        self.cache = PairCache(max(keep, len(presets)) if on_zerogpu else keep, remember_failures_s=FAILED_LOAD_MEMORY_S)
        self.on_loaded: Callable[[Preset, ModelPair], threading.Thread | None] | None = None
        self._timing: dict[str, threading.Thread] = {}      # preset key -> its timing, while a warm-up waits

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

    def default_preset(self) -> Preset:
        """The menu's first choice: a real (fetched) model when there is one, else the first preset."""
        for preset in self.presets.values():
            if preset.target in FETCHABLE and fetched(preset.target) is not None:
                return preset
        return next(iter(self.presets.values()))

    def menu_label(self, preset: Preset) -> str:
        """The pair's name in the menu, marked when it needs the network: a hub model that is neither
        fetched here nor in the Hugging Face cache (offline, picking it could only fail)."""
        return preset.label + (" · needs the network" if needs_network(preset) else "")

    def start_fetches(self) -> None:
        """Fetch the menu's registry-package targets in the background (app/fetches.py)."""
        self.fetches.start(self.presets.values())

    def loaded(self, key: str) -> bool:
        return self.cache.cached(key)

    def pair(self, preset: Preset) -> ModelPair:
        if not self.cache.cached(preset.key):
            self.fetches.check_ready(preset)
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
        if self.on_zerogpu:           # warmed up in the GPU worker instead (app/gpu_calls.py)
            return pair
        warm_up(pair)
        if self.on_loaded is not None:      # before the pair is cached: the advice is pending from load on
            timing = self.on_loaded(preset, pair)
            if timing is not None:          # the pair's timing holds a decoding slot: a warm-up waits for it
                self._timing[preset.key] = timing
        return pair

    def preload(self, preset: Preset) -> None:
        """Load (and so measure) a pair in the background, so the first visitor finds it ready; while it
        loads, `warming` says so and how long it is likely to take (app/warming.py)."""
        self.warming.began(preset.key, preset.label)

        def load():
            ok = False
            try:
                self.pair(preset)
                timing = self._timing.pop(preset.key, None)
                if timing is not None:      # the machine's timing of the pair holds the decoding slot: the
                    timing.join(TIMING_WAIT_S)    # warm-up ends after it, so the first race starts at once
                ok = True
            except SpecvizError:
                pass              # the visitor who picks it gets the error, in one line
            finally:
                self.warming.ended(preset.key, ok)
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
