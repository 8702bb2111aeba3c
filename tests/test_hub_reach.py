"""Loading a hub id with no network: one quick question to the Hub's host, then the local cache only
(models/hub_reach.py), instead of huggingface_hub's minute of retries."""
import os
import shutil
import subprocess
import sys
import time

import pytest

from specviz.models import hub_reach

from .helpers import ROOT


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(hub_reach, "_last", None)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    for name in hub_reach.PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    calls = []
    return calls


def test_offline_env_asks_nothing(fresh, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub_reach.socket, "create_connection", lambda *a, **k: pytest.fail("asked the network"))
    assert not hub_reach.hub_reachable() and hub_reach.offline_kwargs() == {"local_files_only": True}


def test_an_unanswered_hub_is_remembered_for_a_minute(fresh, monkeypatch):
    def refuse(address, timeout):
        fresh.append((address, timeout))
        raise ConnectionRefusedError("no")
    monkeypatch.setattr(hub_reach.socket, "create_connection", refuse)
    monkeypatch.setenv("HF_ENDPOINT", "http://hub.example:8080")
    assert not hub_reach.hub_reachable() and not hub_reach.hub_reachable()
    assert fresh == [(("hub.example", 8080), hub_reach.TIMEOUT_S)]       # asked once, at the endpoint's host and port


def test_an_answering_hub_adds_no_argument(fresh, monkeypatch):
    class Connection:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False
    monkeypatch.setattr(hub_reach.socket, "create_connection", lambda address, timeout: Connection())
    assert hub_reach.hub_reachable() and hub_reach.offline_kwargs() == {}


def test_behind_a_proxy_it_leaves_the_question_to_huggingface_hub(fresh, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setattr(hub_reach.socket, "create_connection", lambda *a, **k: pytest.fail("asked directly"))
    assert hub_reach.hub_reachable()


@pytest.mark.slow    # two CLI runs in subprocesses
def test_no_network_loads_a_cached_hub_model_at_once_and_refuses_a_missing_one_at_once(tmp_path):
    # A hub cache holding one model (the bundled target under a hub id), and a Hub that refuses connections.
    repo = tmp_path / "hub" / "models--specviz-test--cached-tiny"
    shutil.copytree(ROOT / "assets" / "models" / "target", repo / "snapshots" / ("0" * 40))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    dropped = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", *hub_reach.PROXY_VARIABLES)
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(HF_HUB_CACHE=str(tmp_path / "hub"), HF_ENDPOINT="http://127.0.0.1:9", PYTHONPATH=str(ROOT))

    def run(target):
        start = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "specviz", "run", "--prompt", "def f():", "--target", target,
                            "--drafter", "prompt_lookup", "--max-new-tokens", "4", "--json"],
                           capture_output=True, text=True, env=env, timeout=300)
        return r, time.monotonic() - start

    r, took = run("specviz-test/cached-tiny")
    assert r.returncode == 0, r.stderr
    assert "Retrying" not in r.stderr and took < 40
    r, took = run("specviz-test/not-cached")
    assert r.returncode == 2 and "could not be reached" in r.stderr and "Retrying" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and took < 40
