"""The hosting profile (spaces.yaml): presets per hardware tier and the server's limits.

`load_profile` reads and validates the whole file up front; any mistake raises ProfileError
whose message names the key (e.g. `tiers.cpu.presets[1].k`), so a misconfigured Space
stops at start with a readable reason instead of failing for a visitor later.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import SpecvizError
from ..models.loading import HUB_ID
from ..models.presets import ASSETS, Preset

TIERS = ("cpu", "gpu", "zerogpu")
PROFILE_PATH = Path(__file__).resolve().parent.parent.parent / "spaces.yaml"
LIMIT_KEYS = {"max_prompt_tokens": (1, 100_000), "max_new_tokens": (1, 8192), "queue_size": (1, 10_000),
              "concurrency_per_device": (1, 64), "max_loaded_pairs": (1, 16),
              "lossless_token_budget": (1_000, 100_000_000), "jobs_per_session": (1, 100)}


class ProfileError(SpecvizError):
    """spaces.yaml is malformed; the message names the key."""


@dataclass(frozen=True)
class Limits:
    max_prompt_tokens: int = 1024
    max_new_tokens: int = 256
    k_range: tuple[int, int] = (1, 12)
    queue_size: int = 32
    concurrency_per_device: int = 1
    max_loaded_pairs: int = 2
    # The lossless check re-reads the prompt for every sample: samples x prompt tokens at most
    # (2000 samples of a 970-token prompt took 1.8 h of 2-core CPU; 200k tokens is ~10 min at worst).
    lossless_token_budget: int = 200_000
    jobs_per_session: int = 2      # decoding requests one session may have waiting or running at once


@dataclass(frozen=True)
class Profile:
    tier: str
    presets: dict[str, Preset]
    limits: Limits = field(default_factory=Limits)
    allow_custom_models: bool = False


def detect_tier(env=None) -> str:
    """SPECVIZ_PROFILE if set; a ZeroGPU Space; CUDA present; else CPU."""
    env = os.environ if env is None else env
    if env.get("SPECVIZ_PROFILE"):
        return env["SPECVIZ_PROFILE"]
    if env.get("SPACES_ZERO_GPU", "").lower() in ("1", "true"):
        return "zerogpu"
    import torch
    return "gpu" if torch.cuda.is_available() else "cpu"


def load_profile(path: str | Path | None = None, tier: str | None = None) -> Profile:
    path = PROFILE_PATH if path is None else path          # read at call time (tests point it elsewhere)
    tier = tier or detect_tier()
    if tier not in TIERS:
        raise ProfileError(f"unknown profile tier {tier!r}: use one of {', '.join(TIERS)}")
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ProfileError(f"{Path(path).name}: cannot be read: {str(err).splitlines()[0]}") from err
    _expect(isinstance(data, dict), "top level", "must be a mapping with `defaults` and `tiers`")
    _known(data, {"defaults", "tiers"}, "top level")
    defaults = data.get("defaults") or {}
    tiers = data.get("tiers")
    _expect(isinstance(defaults, dict), "defaults", "must be a mapping")
    _expect(isinstance(tiers, dict) and tier in tiers, "tiers", f"must be a mapping with a `{tier}` entry")
    chosen = tiers[tier]
    where = f"tiers.{tier}"
    _expect(isinstance(chosen, dict), where, "must be a mapping")
    _known(defaults, {"limits", "allow_custom_models"}, "defaults")
    _known(chosen, {"limits", "allow_custom_models", "presets"}, where)
    limits = _limits({**(defaults.get("limits") or {}), **(chosen.get("limits") or {})}, f"{where}.limits")
    allow = chosen.get("allow_custom_models", defaults.get("allow_custom_models", False))
    _expect(isinstance(allow, bool), f"{where}.allow_custom_models", "must be true or false")
    presets = _presets(chosen.get("presets"), f"{where}.presets", limits)
    return Profile(tier, presets, limits, allow)


def _expect(ok: bool, key: str, problem: str) -> None:
    if not ok:
        raise ProfileError(f"spaces.yaml: {key}: {problem}")


def _known(mapping: dict, allowed: set, where: str) -> None:
    for key in mapping:
        _expect(key in allowed, f"{where}.{key}", f"unknown key (expected one of {', '.join(sorted(allowed))})")


def _int(value, key: str, lo: int, hi: int) -> int:
    _expect(isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi, key,
            f"must be a whole number between {lo} and {hi}, not {value!r}")
    return value


def _limits(raw: dict, where: str) -> Limits:
    _expect(isinstance(raw, dict), where, "must be a mapping")
    _known(raw, set(LIMIT_KEYS) | {"k_range"}, where)
    values = {k: _int(raw[k], f"{where}.{k}", *LIMIT_KEYS[k]) for k in LIMIT_KEYS if k in raw}
    if "k_range" in raw:
        kr = raw["k_range"]
        _expect(isinstance(kr, list) and len(kr) == 2, f"{where}.k_range", "must be a list [lowest, highest]")
        lo, hi = _int(kr[0], f"{where}.k_range[0]", 1, 32), _int(kr[1], f"{where}.k_range[1]", 1, 32)
        _expect(lo <= hi, f"{where}.k_range", "lowest must not exceed highest")
        values["k_range"] = (lo, hi)
    return Limits(**values)


def _presets(raw, where: str, limits: Limits) -> dict[str, Preset]:
    _expect(isinstance(raw, list) and raw, where, "must be a non-empty list of presets")
    out: dict[str, Preset] = {}
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        _expect(isinstance(item, dict), at, "must be a mapping")
        _known(item, {"key", "label", "target", "draft", "k", "examples", "chat"}, at)
        for name in ("key", "label", "target"):
            _expect(isinstance(item.get(name), str) and item[name].strip(), f"{at}.{name}", "must be non-empty text")
        _expect(item["key"] not in out, f"{at}.key", f"{item['key']!r} is used twice")
        target, draft = _model_ref(item["target"], f"{at}.target"), _model_ref(item.get("draft"), f"{at}.draft")
        if item["target"] == "bundled":
            _expect(item.get("draft", "bundled") == "bundled", f"{at}.draft", "the bundled target goes with the bundled draft")
        else:
            _expect(item.get("draft") != "bundled", f"{at}.draft", "the bundled draft only pairs with the bundled target")
        k = _int(item.get("k", 4), f"{at}.k", *limits.k_range)
        examples = item.get("examples", [])
        _expect(isinstance(examples, list) and all(isinstance(e, str) and e.strip() for e in examples),
                f"{at}.examples", "must be a list of non-empty texts")
        _expect(isinstance(item.get("chat", False), bool), f"{at}.chat", "must be true or false")
        out[item["key"]] = Preset(item["key"], item["label"], target, draft, k, tuple(examples),
                                  chat=item.get("chat", False))
    return out


def _model_ref(value, key: str) -> str | None:
    """`bundled` -> None (the shipped pair); `assets/...` -> that folder of this repository;
    otherwise a hub id (owner/name or name)."""
    if value is None:
        return None
    if isinstance(value, str) and value.startswith("assets/"):
        folder = ASSETS.parent / value
        _expect(folder.is_dir(), key, f"no folder {value} in this repository")
        return str(folder)
    _expect(isinstance(value, str) and (value == "bundled" or HUB_ID.match(value) is not None), key,
            f"must be `bundled` or a Hugging Face Hub id such as owner/name, not {value!r}")
    return None if value == "bundled" else value
