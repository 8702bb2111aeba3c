"""The hosting profile: the shipped spaces.yaml validates for every tier, its presets are usable and
mean one pair per key (the app, the CLI and load_preset read the same file), the presets the code
names exist, mistakes name their key, the tier is detected, and the README's Spaces front matter
agrees with the pins."""
import re
import textwrap
from pathlib import Path

import pytest
import yaml

from specviz.app.profile import PROFILE_PATH, TIERS, ProfileError, detect_tier, load_profile
from specviz.app.state import AppState
from specviz.errors import ConfigError
from specviz.models.fetch import FETCHABLE
from specviz.models.loading import HUB_ID
from specviz.models.presets import Preset, get_preset, read_spaces
from specviz.paths import MODELS, ROOT


@pytest.mark.parametrize("tier", ["cpu", "gpu", "zerogpu"])
def test_shipped_profile_is_valid(tier):
    profile = load_profile(tier=tier)
    assert profile.presets and not profile.allow_custom_models
    for preset in profile.presets.values():
        assert profile.limits.k_range[0] <= preset.k <= profile.limits.k_range[1] and preset.examples


def test_every_preset_of_every_tier_is_a_usable_preset():
    # Keys unique per tier (the parser would keep the last of two silently otherwise), each entry a
    # Preset whose models are the bundled pair, a hub id, or a model folder that exists here.
    for tier, chosen in read_spaces()["tiers"].items():
        keys = [item["key"] for item in chosen["presets"]]
        assert len(keys) == len(set(keys)), f"{tier}: a preset key is listed twice"
        presets = load_profile(tier=tier).presets
        assert list(presets) == keys
        for p in presets.values():
            assert isinstance(p, Preset) and p.label.strip() and p.examples and p.k >= 1
            assert (p.target is None) == (p.draft is None), f"{tier}.{p.key}: half of the bundled pair"
            for model in (p.target, p.draft):
                assert model is None or HUB_ID.match(model) or (Path(model) / "config.json").is_file(), model


def test_a_key_means_one_pair_in_every_tier():
    # The CLI's --preset and specviz.load_preset look a key up in any tier: the tiers must agree on it,
    # and they see the very presets the app serves.
    seen = {}
    for tier in TIERS:
        for p in load_profile(tier=tier).presets.values():
            assert seen.setdefault(p.key, (p.target, p.draft)) == (p.target, p.draft), p.key
            assert (get_preset(p.key).target, get_preset(p.key).draft) == (p.target, p.draft)
    assert get_preset("smollm2") == load_profile(tier="cpu").presets["smollm2"]
    with pytest.raises(ConfigError, match="unknown preset 'nope': choose one of bundled, smollm2"):
        get_preset("nope")


def test_the_presets_the_code_names_exist():
    cpu = load_profile(tier="cpu").presets
    # The app's default and the workshop's pair; the load test and the ZeroGPU check ask for it by key.
    assert cpu["bundled"].target is None and load_profile(tier="gpu").presets["bundled"].target is None
    # check_identity's default; the app fetches its target at start, which it can only if fetch knows it.
    assert cpu["smollm2"].target in FETCHABLE and cpu["smollm2"].chat
    assert Path(cpu["smollm2"].draft) == MODELS / "smollm2-draft"
    assert AppState(device="cpu").pairs.presets == cpu            # an app built without a profile offers the cpu tier


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
    (lambda d: d["tiers"]["cpu"]["presets"][1].update(confidence_stop=0.97), r"presets\[1\]\.confidence_stop"),
    (lambda d: d["defaults"]["limits"].update(queue_size=0), r"tiers\.cpu\.limits\.queue_size"),
    (lambda d: d["defaults"]["limits"].update(k_range=[5, 2]), r"limits\.k_range"),
    (lambda d: d["defaults"].update(allow_custom_models="yes"), r"tiers\.cpu\.allow_custom_models"),
    (lambda d: d["defaults"]["limits"].update(max_new_tokenz=5), r"limits\.max_new_tokenz: unknown key"),
    (lambda d: d["tiers"].pop("cpu"), r"tiers: must be a mapping with a `cpu` entry"),
    (lambda d: d.update(servers="http://h:8000/v1"), r"servers: must be a list"),
    (lambda d: d.update(servers=[{"label": "Lab"}]), r"servers\[0\]\.url: is missing"),
    (lambda d: d.update(servers=[{"url": "ftp://h:8000"}]), r"servers\[0\]\.url: a server address starts with http"),
    (lambda d: d.update(servers=[{"url": "http://h:1", "baseline": "h:2"}]), r"servers\[0\]\.baseline: a server address"),
    (lambda d: d.update(servers=[{"url": "http://h:1", "port": 8}]), r"servers\[0\]\.port: unknown key"),
    (lambda d: d.update(servers=[{"url": "http://h:1", "label": 7}]), r"servers\[0\]\.label: must be non-empty text"),
    (lambda d: d.update(servers=[{"url": "http://h:1", "check": "nope"}]), r"servers\[0\]\.check: 'nope' is not a preset"),
    (lambda d: d.update(servers=[{"url": "http://h:1"}, {"url": "http://h:1/v1"}]), r"servers\[1\]\.label: .* listed twice"),
])
def test_mistakes_name_their_key(tmp_path, change, key):
    with pytest.raises(ProfileError, match=key):
        load_profile(mutated(tmp_path, change), tier="cpu")


def test_app_refuses_to_start_on_a_bad_profile(tmp_path, monkeypatch):
    import app
    import specviz.app.profile as profile
    monkeypatch.setattr(profile, "PROFILE_PATH", mutated(tmp_path, lambda d: d["tiers"]["cpu"]["presets"][0].update(k=0)))
    assert app.main(["--profile", "cpu"]) == 2


def test_app_refuses_to_start_on_a_device_it_lacks(capsys):
    import app
    assert app.main(["--profile", "cpu", "--device", "tpu", "--no-fetch"]) == 2
    assert "unknown device 'tpu'" in capsys.readouterr().err


def test_spaces_yaml_lists_servers_and_app_py_adds_its_own(tmp_path):
    from specviz.remote.servers import Server, merge, parse_server
    assert load_profile(tier="cpu").servers == ()                       # the shipped file lists none
    lab = {"url": "http://127.0.0.1:8000/v1", "baseline": "http://127.0.0.1:8001", "label": "Lab vLLM", "check": "smollm2"}
    profile = load_profile(mutated(tmp_path, lambda d: d.update(servers=[lab])), tier="cpu")
    assert profile.servers == (Server("Lab vLLM", "http://127.0.0.1:8000", "http://127.0.0.1:8001", None, "smollm2"),)
    assert AppState.from_profile(profile, device="cpu").servers == profile.servers
    both = merge(profile.servers, (parse_server("http://h:9000/v1,label=Other"),), profile.presets)
    assert [s.label for s in both] == ["Lab vLLM", "Other"]                # spaces.yaml's first, then --server's
    with pytest.raises(ConfigError, match="under the label 'Lab vLLM'"):
        merge(profile.servers, (parse_server("http://h:9000/v1,label=Lab vLLM"),), profile.presets)
    with pytest.raises(ConfigError, match="check=nope is not a preset"):
        merge((), (parse_server("http://h:9000/v1,check=nope"),), profile.presets)


def test_the_commented_servers_example_in_spaces_yaml_loads(tmp_path):
    text = PROFILE_PATH.read_text()
    example = textwrap.dedent("\n".join(line[1:] for line in text.splitlines() if line.startswith("#   ")))
    path = tmp_path / "spaces.yaml"
    path.write_text(text.replace("servers: []", example))
    (server,) = load_profile(path, tier="cpu").servers
    assert (server.label, server.url, server.baseline_url, server.check) == \
        ("Lab vLLM", "http://127.0.0.1:8000", "http://127.0.0.1:8001", "smollm2")


def test_app_refuses_a_server_label_listed_twice(capsys):
    import app
    assert app.main(["--profile", "cpu", "--no-fetch", "--server", "http://127.0.0.1:9/v1,label=A",
                     "--server", "http://127.0.0.1:10/v1,label=A"]) == 2
    assert "two servers are listed under the label 'A'" in capsys.readouterr().err


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
