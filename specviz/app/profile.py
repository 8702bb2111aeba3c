"""The hosting profile (spaces.yaml): presets per hardware tier, the server's limits, and the vLLM servers it lists.

`load_profile` reads and validates the whole file up front; any mistake raises ProfileError
whose message names the key (e.g. `tiers.cpu.presets[1].k`), so a misconfigured Space
stops at start with a readable reason instead of failing for a visitor later. The presets
themselves are parsed by models/presets.py (the one reader, which the CLI's --preset uses too).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ProfileError, SpecvizError
from ..hosting_env import zerogpu_space
from ..models.presets import Preset, expect, known, parse_presets, read_spaces, whole
from ..paths import SPACES_YAML
from ..remote.servers import OPTIONS, Server, make_server

__all__ = ["TIERS", "PROFILE_PATH", "ProfileError", "Limits", "Profile", "detect_tier", "load_profile"]

TIERS = ("cpu", "gpu", "zerogpu")
PROFILE_PATH = SPACES_YAML
LIMIT_KEYS = {"max_prompt_tokens": (1, 100_000), "max_new_tokens": (1, 8192), "queue_size": (1, 10_000),
              "concurrency_per_device": (1, 64), "max_loaded_pairs": (1, 16),
              "lossless_token_budget": (1_000, 100_000_000), "jobs_per_session": (1, 100),
              "jobs_per_address": (1, 10_000), "joins_per_second": (1, 1000)}


@dataclass(frozen=True)
class Limits:
    max_prompt_tokens: int = 1024
    max_new_tokens: int = 256
    k_range: tuple[int, int] = (1, 12)
    # Work events (races, step clicks, replays) waiting or running before the server counts shares: a
    # class of 30-40 and a hostile address beside it fit (view/fair_queue.py); past it a client under
    # its fair share still joins, up to twice this.
    queue_size: int = 96
    concurrency_per_device: int = 1
    max_loaded_pairs: int = 2
    # The lossless check re-reads the prompt for every sample: samples x prompt tokens at most
    # (2000 samples of a 970-token prompt took 1.8 h of 2-core CPU; 200k tokens is ~10 min at worst).
    lossless_token_budget: int = 200_000
    jobs_per_session: int = 2      # decoding requests one session may have waiting or running at once
    # Events (any: a run, Stop, a replay) one client may have waiting or running at once. Turns go
    # round robin by client, then by tab (app/slots.py), so more places buy no bigger share of the
    # device: 48 holds a class of 30-40 behind one school address (a run each, and their Stops),
    # while one hostile address with 48 still gets one turn in each round (docs/hosting.md).
    jobs_per_address: int = 48
    # Joins of any event one client may make per second (a burst of three seconds' worth first): a
    # class of thirty pressing Run within seconds makes ~30; a script's churn of new sessions beyond
    # 40 a second is turned away. The page's own load events have ten times this (never refused).
    joins_per_second: int = 40


@dataclass(frozen=True)
class Profile:
    tier: str
    presets: dict[str, Preset]
    limits: Limits = field(default_factory=Limits)
    allow_custom_models: bool = False
    allow_local_model_paths: bool = False    # may a custom id name a folder of the server? (never by default)
    # Serving engines the host lists for the Server tab (spaces.yaml `servers:`; app.py adds --server's).
    servers: tuple[Server, ...] = ()


def detect_tier(env=None) -> str:
    """SPECVIZ_PROFILE if set; a ZeroGPU Space; CUDA present; else CPU."""
    env = os.environ if env is None else env
    if env.get("SPECVIZ_PROFILE"):
        return env["SPECVIZ_PROFILE"]
    if zerogpu_space(env):
        return "zerogpu"
    import torch
    return "gpu" if torch.cuda.is_available() else "cpu"


def load_profile(path: str | Path | None = None, tier: str | None = None) -> Profile:
    path = PROFILE_PATH if path is None else path          # read at call time (tests point it elsewhere)
    tier = tier or detect_tier()
    if tier not in TIERS:
        raise ProfileError(f"unknown profile tier {tier!r}: use one of {', '.join(TIERS)}")
    data = read_spaces(path)
    defaults = data.get("defaults") or {}
    tiers = data.get("tiers")
    expect(isinstance(defaults, dict), "defaults", "must be a mapping")
    expect(isinstance(tiers, dict) and tier in tiers, "tiers", f"must be a mapping with a `{tier}` entry")
    chosen = tiers[tier]
    where = f"tiers.{tier}"
    expect(isinstance(chosen, dict), where, "must be a mapping")
    known(defaults, {"limits", "allow_custom_models", "allow_local_model_paths"}, "defaults")
    known(chosen, {"limits", "allow_custom_models", "allow_local_model_paths", "presets"}, where)
    limits = _limits({**(defaults.get("limits") or {}), **(chosen.get("limits") or {})}, f"{where}.limits")
    allow = chosen.get("allow_custom_models", defaults.get("allow_custom_models", False))
    expect(isinstance(allow, bool), f"{where}.allow_custom_models", "must be true or false")
    local = chosen.get("allow_local_model_paths", defaults.get("allow_local_model_paths", False))
    expect(isinstance(local, bool), f"{where}.allow_local_model_paths", "must be true or false")
    presets = parse_presets(chosen.get("presets"), f"{where}.presets", limits.k_range)
    return Profile(tier, presets, limits, allow, local, _servers(data.get("servers"), presets))


def _limits(raw: dict, where: str) -> Limits:
    expect(isinstance(raw, dict), where, "must be a mapping")
    known(raw, set(LIMIT_KEYS) | {"k_range"}, where)
    values = {k: whole(raw[k], f"{where}.{k}", *LIMIT_KEYS[k]) for k in LIMIT_KEYS if k in raw}
    if "k_range" in raw:
        kr = raw["k_range"]
        expect(isinstance(kr, list) and len(kr) == 2, f"{where}.k_range", "must be a list [lowest, highest]")
        lo, hi = whole(kr[0], f"{where}.k_range[0]", 1, 32), whole(kr[1], f"{where}.k_range[1]", 1, 32)
        expect(lo <= hi, f"{where}.k_range", "lowest must not exceed highest")
        values["k_range"] = (lo, hi)
    return Limits(**values)


def _servers(raw, presets: dict) -> tuple[Server, ...]:
    """spaces.yaml's `servers:` list (absent or empty: none), each a mapping with a `url` and optionally
    `baseline`, `label`, `model` and `check` (a preset of this tier), as `--server` takes them."""
    if raw is None:
        return ()
    expect(isinstance(raw, list), "servers", "must be a list of mappings, each with a `url`")
    out: list[Server] = []
    for i, item in enumerate(raw):
        at = f"servers[{i}]"
        expect(isinstance(item, dict), at, "must be a mapping with a `url` (and optionally "
                                           f"{', '.join(f'`{o}`' for o in OPTIONS)})")
        known(item, {"url", *OPTIONS}, at)
        expect("url" in item, f"{at}.url", "is missing: the server's address, e.g. http://127.0.0.1:8000/v1")
        for name, value in item.items():
            expect(isinstance(value, str) and value.strip(), f"{at}.{name}", "must be non-empty text")
        for name in ("url", "baseline"):
            if name in item:
                try:
                    make_server(item[name])
                except SpecvizError as err:
                    expect(False, f"{at}.{name}", str(err))
        check = item.get("check")
        expect(check is None or check in presets, f"{at}.check",
               f"{check!r} is not a preset of this tier ({', '.join(presets)})")
        server = make_server(**{name: value.strip() for name, value in item.items()})
        expect(all(s.label != server.label for s in out), f"{at}.label", f"{server.label!r} is listed twice")
        out.append(server)
    return tuple(out)
