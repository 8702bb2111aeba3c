"""Imports point one way: nothing the app, engine, models, view or CLI run at run time imports
specviz.training (the trainers and their data live there; a server never needs them)."""
import os
import subprocess
import sys

import pytest

RUNTIME_PACKAGES = ("specviz.app", "specviz.engine", "specviz.runtime", "specviz.models", "specviz.view", "specviz.cli", "specviz.bench")
ALLOWED = {"specviz.cli.train"}       # the train-models command imports training lazily, when run

PROBE = """
import importlib, pkgutil, sys
packages, allowed = {packages!r}, {allowed!r}
for name in packages:
    package = importlib.import_module(name)
    for info in pkgutil.walk_packages(package.__path__, name + "."):
        if info.name not in allowed:
            importlib.import_module(info.name)
print("\\n".join(sorted(m for m in sys.modules if m == "specviz.training" or m.startswith("specviz.training."))))
"""


@pytest.mark.slow
def test_no_runtime_module_imports_training():
    code = PROBE.format(packages=RUNTIME_PACKAGES, allowed=ALLOWED)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": os.getcwd(), "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"run-time modules imported training: {r.stdout.split()}"


@pytest.mark.slow
def test_the_probe_would_see_a_training_import():
    code = PROBE.format(packages=("specviz.training",), allowed=set())
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": os.getcwd(), "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr
    assert "specviz.training.corpus" in r.stdout.split()


UI_PROBE = """
import importlib, pkgutil, sys
for name in {packages!r}:
    package = importlib.import_module(name)
    for info in pkgutil.walk_packages(package.__path__, name + "."):
        importlib.import_module(info.name)
print("\\n".join(sorted({{m.split(".")[0] for m in sys.modules}} & {{"gradio", "plotly"}})))
"""


@pytest.mark.slow
def test_the_engine_and_the_app_layer_import_no_ui():
    # The engine is sans-I/O and the app layer sits between it and the view: neither may pull in
    # Gradio or plotly (the workshop's logic hands its charts to the view as data).
    r = subprocess.run([sys.executable, "-c", UI_PROBE.format(packages=("specviz.runtime", "specviz.engine", "specviz.app"))],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": os.getcwd(), "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [], f"engine/app imported {r.stdout.split()}"
