"""The hosting profile: the shipped spaces.yaml validates for every tier, mistakes name their
key, the tier is detected, and the README's Spaces front matter agrees with the pins."""
import re
from pathlib import Path

import pytest
import yaml

from specviz.app.profile import PROFILE_PATH, ProfileError, detect_tier, load_profile

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("tier", ["cpu", "gpu", "zerogpu"])
def test_shipped_profile_is_valid(tier):
    profile = load_profile(tier=tier)
    assert profile.presets and not profile.allow_custom_models
    for preset in profile.presets.values():
        assert profile.limits.k_range[0] <= preset.k <= profile.limits.k_range[1] and preset.examples


def test_gpu_tiers_offer_the_real_pairs():
    keys = {p.target: p.draft for p in load_profile(tier="gpu").presets.values()}
    assert keys["HuggingFaceTB/SmolLM2-1.7B-Instruct"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert keys["Qwen/Qwen2.5-7B-Instruct"] == "Qwen/Qwen2.5-0.5B-Instruct"
    assert keys["openai-community/gpt2-xl"] == "openai-community/gpt2"      # namespaced hub ids
    assert load_profile(tier="cpu").presets["bundled"].target is None     # the shipped pair


def test_tier_detection():
    assert detect_tier({"SPECVIZ_PROFILE": "gpu"}) == "gpu"
    assert detect_tier({"SPACES_ZERO_GPU": "true"}) == "zerogpu"
    assert detect_tier({}) in ("cpu", "gpu")
    with pytest.raises(ProfileError, match="unknown profile tier"):
        load_profile(tier="tpu")


def mutated(tmp_path, change) -> Path:
    data = yaml.safe_load(PROFILE_PATH.read_text())
    change(data)
    path = tmp_path / "spaces.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("change, key", [
    (lambda d: d["tiers"]["cpu"]["presets"][1].update(k=99), r"tiers\.cpu\.presets\[1\]\.k"),
    (lambda d: d["tiers"]["cpu"]["presets"][0].update(target="../../etc"), r"tiers\.cpu\.presets\[0\]\.target"),
    (lambda d: d["tiers"]["cpu"]["presets"][0].pop("label"), r"tiers\.cpu\.presets\[0\]\.label"),
    (lambda d: d["tiers"]["cpu"]["presets"][2].update(key="bundled"), r"tiers\.cpu\.presets\[2\]\.key"),
    (lambda d: d["tiers"]["cpu"]["presets"][1].update(chat="yes"), r"tiers\.cpu\.presets\[1\]\.chat"),
    (lambda d: d["tiers"]["cpu"]["presets"][1].update(draft="assets/models/nowhere"), r"presets\[1\]\.draft"),
    (lambda d: d["tiers"]["cpu"]["presets"][0].update(examples="def f():"), r"presets\[0\]\.examples"),
    (lambda d: d["defaults"]["limits"].update(queue_size=0), r"tiers\.cpu\.limits\.queue_size"),
    (lambda d: d["defaults"]["limits"].update(k_range=[5, 2]), r"limits\.k_range"),
    (lambda d: d["defaults"].update(allow_custom_models="yes"), r"tiers\.cpu\.allow_custom_models"),
    (lambda d: d["defaults"]["limits"].update(max_new_tokenz=5), r"limits\.max_new_tokenz: unknown key"),
    (lambda d: d["tiers"].pop("cpu"), r"tiers: must be a mapping with a `cpu` entry"),
])
def test_mistakes_name_their_key(tmp_path, change, key):
    with pytest.raises(ProfileError, match=key):
        load_profile(mutated(tmp_path, change), tier="cpu")


def test_app_refuses_to_start_on_a_bad_profile(tmp_path, monkeypatch):
    import app
    import specviz.app.profile as profile
    monkeypatch.setattr(profile, "PROFILE_PATH", mutated(tmp_path, lambda d: d["tiers"]["cpu"]["presets"][0].update(k=0)))
    assert app.main(["--profile", "cpu"]) == 2


def test_readme_front_matter_matches_the_project():
    text = (ROOT / "README.md").read_text()
    assert text.startswith("---\n")
    front = yaml.safe_load(text.split("---\n")[1])
    pins = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert front["sdk"] == "gradio" and front["sdk_version"] == pins["gradio"]
    # ZeroGPU runs Python 3.10.13 or 3.12.12 only, and torch up to 2.11: the Space's Python picks its torch line.
    assert front["app_file"] == "app.py" and str(front["python_version"]) in ("3.10.13", "3.12.12")
    torch_lines = [line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("torch==")]
    assert 'torch==2.11.0; python_version >= "3.12"' in torch_lines
    assert 'torch==2.13.0; python_version < "3.12"' in torch_lines
    hub_models = {m for tier in ("cpu", "gpu") for p in load_profile(tier=tier).presets.values()
                  for m in (p.target, p.draft) if m and not Path(m).is_absolute()}   # assets/ folders ship in the repo
    assert hub_models <= set(front["models"])
    assert re.search(r"^suggested_hardware: ", text, re.M)
