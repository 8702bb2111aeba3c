"""The k advice and the cost models, as one role: what this server measured of each pair's costs, and
the k it offers for it (app/k_advice.py).

A pair that loads is timed in the background in a decoding slot (engine/analysis/calibrate.py); every
finished race and step-mode run then adds its own c and v to its pair's cost model (app/cost_models.py:
one per pair, device, decode path and machine), and the advice follows. The why, the ledger, Explain,
the tree box and the workshop read the same models. Off by default (`enabled`): a served app turns it
on (app.py), so tests' timings are not shared with a calibration.
"""
from __future__ import annotations

import logging
import threading

from ..engine.analysis.calibrate import measure_costs
from ..engine.analysis.cost_model import CostModel
from ..engine.metrics.measures import LaneTally
from ..models.presets import Preset
from ..runtime.pair import ModelPair
from .cost_models import CostModels, default_path, path_of
from .decoders import Decoders
from .k_advice import KAdvice, from_model
from .pair_cache import PairCache
from .pair_expect import assumed_a_words

log = logging.getLogger(__name__)


class Advisor:
    """Per pair key: its k advice (`advice`), whether it is being measured (`advising`), its cost models."""

    def __init__(self, decoders: Decoders, cache: PairCache, k_range: tuple[int, int], enabled: bool = False):
        self.decoders = decoders          # the timing waits for a slot, so neither it nor a race is disturbed
        self.cache = cache                # is a pair still loading (its advice then is pending)?
        self.k_range = k_range
        self.enabled = enabled
        self.advice: dict[str, KAdvice] = {}      # preset key -> the k measured for it here
        self.advising: set[str] = set()            # preset keys being measured now
        self.costs = CostModels()
        self.seen_a: dict[str, float] = {}         # preset key -> the a its latest race here accepted

    def measure_later(self, preset: Preset, pair: ModelPair) -> threading.Thread | None:
        """Time a freshly loaded pair in the background (Pairs.on_loaded): the visitor whose pick loaded
        it does not wait for the timing, and the timing waits for a decoding slot. Returns the timing's
        thread (None: nothing to time), which a background warm-up waits for (Pairs.preload)."""
        if not self.enabled or preset.acceptance is None or pair.draft is None:
            return None
        self.advising.add(preset.key)        # before the pair is cached: pending from load to advice
        timing = threading.Thread(target=self._measure, args=(preset, pair), daemon=True, name="k-advice")
        timing.start()
        return timing

    def _measure(self, preset: Preset, pair: ModelPair) -> None:
        try:
            with self.decoders.hold():
                costs = measure_costs(pair, self.k_range[1])
            model = self.costs.get(preset.key, pair.device, default_path(pair.device))
            model.seed(costs)
            self._readvise(preset, model)
        except Exception:          # noqa: BLE001 - advice is optional: the preset's k stays offered
            log.warning("could not measure %s on this machine; offering its preset k", preset.key, exc_info=True)
        finally:
            self.advising.discard(preset.key)

    def _readvise(self, preset: Preset, model: CostModel) -> None:
        if self.enabled and preset.acceptance is not None:
            self.advice[preset.key] = from_model(model, preset.acceptance, self.k_range, assumed_a_words(preset))

    def fold_race(self, preset: Preset, pair: ModelPair, spec: LaneTally, plain: LaneTally, spec_stats,
                  tree: bool = False) -> CostModel:
        """A finished race's own c and v into its pair's cost model (the advice follows it); returns the
        model, which this race's why, ledger and tree box then read."""
        model = self.costs.get(preset.key, pair.device, path_of(spec_stats))
        model.add_race(spec, plain, tree)
        if spec.accepted + spec.rejected:
            self.seen_a[preset.key] = spec.accepted / (spec.accepted + spec.rejected)
        self._readvise(preset, model)
        return model

    def fold_step_run(self, preset: Preset, pair: ModelPair, spec_stats, tree: bool = False) -> CostModel:
        """A finished step-mode run's draft steps and passes into its pair's cost model (priced in the
        model's plain step: the run had no plain lane); the advice follows it."""
        model = self.costs.get(preset.key, pair.device, path_of(spec_stats))
        if model.add_step_run(spec_stats.tally, tree):
            self._readvise(preset, model)
        return model

    def pending(self, preset: Preset) -> bool:
        """Will this pair's k advice arrive without another visitor action (it is loading or being measured)?"""
        if not self.enabled or preset.acceptance is None or preset.key in self.advice:
            return False
        return preset.key in self.advising or self.cache.loading(preset.key)

    def suggested_k(self, preset: Preset) -> int:
        """The k the page offers for a pair: measured here once it was loaded, else the preset's."""
        advice = self.advice.get(preset.key)
        return advice.k if advice is not None and advice.k is not None else preset.k

    def k_note(self, preset: Preset) -> str:
        """One line on where the offered k comes from: the advice (a prediction, with the a it assumes and
        the latest race's where it differs), or, before the pair was measured here, that the pair's own k
        is offered unmeasured ("" where nothing is measured at all: advice off, or no held-out a)."""
        advice = self.advice.get(preset.key)
        if advice is not None:
            return advice.line(self.seen_a.get(preset.key))
        if not self.enabled or preset.acceptance is None:
            return ""
        return (f"k = {preset.k} is this pair's own setting: not measured on this machine yet"
                f"{' (being measured now)' if self.pending(preset) else ''}.")
