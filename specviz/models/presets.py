"""Model-pair presets: what the app's "model pair" menu, `--preset` and `specviz.load_preset` offer.

They are written once, in spaces.yaml (a list per hardware tier, beside the server's limits that
app/profile.py reads). A preset names a target and a draft (hub ids, `bundled` for the pair in
assets/models, or an assets/ folder), the k that suits it, example prompts in its domain, and
`chat` for instruct models. `parse_presets` validates one tier's list (every mistake a ProfileError
naming its key); `tier_presets` gives a tier's presets; `get_preset` finds a key in any tier, the
first tier that lists it winning (a key names one pair in every tier: tests/test_profile.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from ..engine.loop.config import CONFIDENCE_STOP_MAX
from ..errors import ConfigError, ProfileError
from .. import paths
from .expect import held_out_acceptance
from .loading import HUB_ID


@dataclass(frozen=True)
class Preset:
    key: str
    label: str
    target: str | None = None          # None: the bundled pair
    draft: str | None = None
    k: int = 4
    examples: tuple[str, ...] = field(default_factory=tuple)
    chat: bool = False                 # wrap prompts in the target's chat template by default (instruct models)
    # The draft's acceptance rate on held-out prompts (greedy, benchmarks/): spaces.yaml's `acceptance`, else
    # the draft folder's expect.json pooled over its kinds (models/expect.py). With the costs the app
    # measures at load, it picks the k this machine runs best (app/k_advice.py). None: keep `k`.
    acceptance: float | None = None
    # Drafting stops early in a round once the draft gives its own token less than this
    # (SpecConfig.confidence_stop; k is then the most drafted). 0 = off.
    confidence_stop: float = 0.0


def read_spaces(path: str | Path | None = None) -> dict:
    """spaces.yaml as a mapping with `tiers` (and optionally `defaults`, `servers`), or a ProfileError saying why."""
    path = Path(paths.SPACES_YAML if path is None else path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ProfileError(f"{path.name}: cannot be read: {str(err).splitlines()[0]}") from err
    expect(isinstance(data, dict), "top level", "must be a mapping with `defaults` and `tiers`")
    known(data, {"defaults", "tiers", "servers"}, "top level")      # servers: app/profile.py reads them
    expect(isinstance(data.get("tiers"), dict), "tiers", "must be a mapping with a `cpu` entry")
    return data


def tier_presets(tier: str = "cpu", path: str | Path | None = None) -> dict[str, Preset]:
    """The presets spaces.yaml lists for one tier (k checked against 1..32 only: the tier's own
    k_range is app/profile.py's check, with the limits)."""
    tiers = read_spaces(path)["tiers"]
    expect(isinstance(tiers.get(tier), dict), "tiers", f"must be a mapping with a `{tier}` entry")
    return parse_presets(tiers[tier].get("presets"), f"tiers.{tier}.presets")


def all_presets(path: str | Path | None = None) -> dict[str, Preset]:
    """Every tier's presets by key, in file order; a key listed by several tiers keeps its first entry."""
    out: dict[str, Preset] = {}
    for tier, chosen in read_spaces(path)["tiers"].items():
        expect(isinstance(chosen, dict), f"tiers.{tier}", "must be a mapping")
        for key, preset in parse_presets(chosen.get("presets"), f"tiers.{tier}.presets").items():
            out.setdefault(key, preset)
    return out


def get_preset(key: str) -> Preset:
    presets = all_presets()
    if key not in presets:
        raise ConfigError(f"unknown preset {key!r}: choose one of {', '.join(presets)}")
    return presets[key]


def load_preset(key: str, device: str = "auto", dtype: str = "auto"):
    """The ModelPair of a preset (`specviz.load_preset("smollm2")`)."""
    from .loading import load_pair
    preset = get_preset(key)
    return load_pair(preset.target, preset.draft, device=device, dtype=dtype)


# --- validation (spaces.yaml's presets; app/profile.py uses the same checks for the limits) -------

def expect(ok: bool, key: str, problem: str) -> None:
    if not ok:
        raise ProfileError(f"spaces.yaml: {key}: {problem}")


def known(mapping: dict, allowed: set, where: str) -> None:
    for key in mapping:
        expect(key in allowed, f"{where}.{key}", f"unknown key (expected one of {', '.join(sorted(allowed))})")


def whole(value, key: str, lo: int, hi: int) -> int:
    expect(isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi, key,
           f"must be a whole number between {lo} and {hi}, not {value!r}")
    return value


def parse_presets(raw, where: str, k_range: tuple[int, int] = (1, 32)) -> dict[str, Preset]:
    """One tier's list of presets (`where` is its key, e.g. tiers.cpu.presets), validated."""
    expect(isinstance(raw, list) and raw, where, "must be a non-empty list of presets")
    out: dict[str, Preset] = {}
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        expect(isinstance(item, dict), at, "must be a mapping")
        known(item, {"key", "label", "target", "draft", "k", "examples", "chat", "acceptance", "confidence_stop"}, at)
        for name in ("key", "label", "target"):
            expect(isinstance(item.get(name), str) and item[name].strip(), f"{at}.{name}", "must be non-empty text")
        expect(item["key"] not in out, f"{at}.key", f"{item['key']!r} is used twice")
        target, draft = _model_ref(item["target"], f"{at}.target"), _model_ref(item.get("draft"), f"{at}.draft")
        if item["target"] == "bundled":
            expect(item.get("draft", "bundled") == "bundled", f"{at}.draft", "the bundled target goes with the bundled draft")
        else:
            expect(item.get("draft") != "bundled", f"{at}.draft", "the bundled draft only pairs with the bundled target")
        k = whole(item.get("k", 4), f"{at}.k", *k_range)
        examples = item.get("examples", [])
        expect(isinstance(examples, list) and all(isinstance(e, str) and e.strip() for e in examples),
               f"{at}.examples", "must be a list of non-empty texts")
        expect(isinstance(item.get("chat", False), bool), f"{at}.chat", "must be true or false")
        acceptance = item.get("acceptance")
        expect(acceptance is None or (isinstance(acceptance, (int, float)) and not isinstance(acceptance, bool)
                                      and 0 < acceptance < 1), f"{at}.acceptance", "must be a number between 0 and 1")
        stop = item.get("confidence_stop", 0.0)
        expect(isinstance(stop, (int, float)) and not isinstance(stop, bool) and 0 <= stop <= CONFIDENCE_STOP_MAX,
               f"{at}.confidence_stop", f"must be a number from 0 (off) to {CONFIDENCE_STOP_MAX}")
        preset = Preset(item["key"], item["label"], target, draft, k, tuple(examples),
                        chat=item.get("chat", False), acceptance=acceptance, confidence_stop=float(stop))
        if acceptance is None:      # the draft's own measurement, where its folder carries one
            preset = replace(preset, acceptance=held_out_acceptance(preset))
        out[item["key"]] = preset
    return out


def _model_ref(value, key: str) -> str | None:
    """`bundled` -> None (the shipped pair); `assets/...` -> that folder of specviz's data;
    otherwise a hub id (owner/name or name)."""
    if value is None:
        return None
    if isinstance(value, str) and value.startswith("assets/"):
        folder = paths.ASSETS.parent / value
        expect(folder.is_dir(), key, f"no folder {value} in this repository")
        return str(folder)
    expect(isinstance(value, str) and (value == "bundled" or HUB_ID.match(value) is not None), key,
           f"must be `bundled` or a Hugging Face Hub id such as owner/name, not {value!r}")
    return None if value == "bundled" else value
