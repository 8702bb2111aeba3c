"""Hosting: many users at once, the ZeroGPU record path, the `spaces` decorator."""
import importlib
import re
import sys
import time
import types

import pytest

from specviz.app import zerogpu
from specviz.bench.load_client import check_against_solo, percentiles, run_clients
from specviz.view.serve import serve
from specviz.app.pairs import Pairs
from specviz.view.handlers import run_race
from tests.helpers import app_with, form, tiny_app, tiny_preset

ARGS = form(temperature=0.7, max_new_tokens=40, seed=3)


def final(updates):
    return list(updates)[-1]


def test_record_path_gives_the_same_race(tiny_dirs):
    local = final(run_race(tiny_app(tiny_dirs), **ARGS))
    remote = final(run_race(tiny_app(tiny_dirs, via_records=True), **ARGS))
    # Sampled: the same seed gives the same tokens only with the same draft q. Failed once (2026-11-24, not
    # reproduced in 3 runs after): the message says how each side's draft stepped, should it fail again.
    steps = [re.search(r"Draft steps: [^.]*", u.ledger) for u in (local, remote)]
    assert (remote.spec_pane, remote.base_pane) == (local.spec_pane, local.base_pane), \
        [m and m.group(0) for m in steps]                                                 # token for token


def test_spaces_decorator_is_applied_with_a_duration(monkeypatch):
    """On a ZeroGPU Space every decoding function is a `spaces.GPU` function whose reserved
    time grows with the work asked for."""
    from specviz.app import gpu_calls as work
    seen = {}
    fake = types.ModuleType("spaces")
    def GPU(duration=None):
        def mark(fn):
            seen[fn.__name__] = duration
            fn.on_gpu = True
            return fn
        return mark
    fake.GPU = GPU
    monkeypatch.setitem(sys.modules, "spaces", fake)
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    try:
        importlib.reload(zerogpu)
        module = importlib.reload(work)
        assert zerogpu.ON_ZEROGPU
        for name in ("race_records", "run_records", "lossless_results"):
            assert getattr(getattr(module, name), "on_gpu", False), name
        race_s = seen["race_records"]
        assert race_s("app", "bundled", [1, 2], {"max_new_tokens": 500}) > race_s("app", "bundled", [1], {"max_new_tokens": 50})
        assert seen["lossless_results"]("app", "bundled", [1], {}, 2000) > seen["lossless_results"]("app", "bundled", [1], {}, 50)
    finally:
        monkeypatch.delitem(sys.modules, "spaces")
        monkeypatch.delenv("SPACES_ZERO_GPU")
        importlib.reload(zerogpu)
        importlib.reload(work)
    assert zerogpu.spaces is None and not zerogpu.ON_ZEROGPU


@pytest.mark.slow    # a served app and concurrent clients
def test_concurrent_clients_each_get_their_own_seeded_output(tiny_dirs, monkeypatch):
    monkeypatch.setenv("SPECVIZ_TRUST_FORWARDED", "1")      # each client its own address (load_client.py)
    app = tiny_app(tiny_dirs, queue_size=16, concurrency_per_device=1)
    demo, url = serve(app)
    try:
        results = run_clients(url, "tiny", ["import os\n", "def f(x):\n"], clients=6, max_new_tokens=24,
                              temperature=1.0, timeout_s=120, addresses=True)
    finally:
        demo.close()
    assert len(results) == 6 and not [r["error"] for r in results if "error" in r]      # no result lost
    assert check_against_solo(app.pairs.pair(app.pairs.preset("tiny")), results, 24, 1.0) == []
    assert len({tuple(r["token_ids"]) for r in results}) > 1      # different seeds, different outputs
    p = percentiles(results)
    print(f"\n6 clients: p50 {p['p50_s']:.2f} s, p95 {p['p95_s']:.2f} s")


@pytest.mark.slow    # a served app and concurrent clients
def test_clients_keep_streaming_while_one_switches_to_a_pair_not_loaded_yet(tiny_dirs, monkeypatch):
    """One visitor picks a pair whose first load is slow; everyone else is served meanwhile, and
    every output is still the one its seed gives alone (nothing lost, nothing crossed)."""
    presets = {"tiny": tiny_preset(tiny_dirs), "late": tiny_preset(tiny_dirs, "late", "random", examples=("def f(x):\n",))}
    app = app_with(presets, queue_size=16, concurrency_per_device=1)
    app.pairs.pair(presets["tiny"])
    loaded = {}
    original = Pairs._load

    def slow_load(self, preset):
        pair = original(self, preset)
        if preset.key == "late":
            time.sleep(8.0)                          # a real model's first load takes tens of seconds
            loaded["late_at"] = time.monotonic()
        return pair
    monkeypatch.setattr(Pairs, "_load", slow_load)
    monkeypatch.setenv("SPECVIZ_TRUST_FORWARDED", "1")      # each client its own address (load_client.py)
    demo, url = serve(app)
    try:
        results = run_clients(url, ["late"] + ["tiny"] * 7, ["import os\n", "def f(x):\n"], clients=8,
                              max_new_tokens=24, temperature=1.0, timeout_s=120, addresses=True)
    finally:
        demo.close()
    assert len(results) == 8 and not [r["error"] for r in results if "error" in r]      # no result lost
    late = [r for r in results if r["preset"] == "late"]
    others = [r for r in results if r["preset"] == "tiny"]
    for key, group in (("late", late), ("tiny", others)):
        assert check_against_solo(app.pairs.pair(app.pairs.preset(key)), group, 24, 1.0) == []
    # Everyone on the loaded pair finished while the late pair was still loading.
    assert all(r["finished_at"] < loaded["late_at"] for r in others)
    p = percentiles(others)
    print(f"\n7 clients while one loads a pair: p50 {p['p50_s']:.2f} s, p95 {p['p95_s']:.2f} s")
