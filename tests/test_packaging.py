"""`pip install .` gives a working copy: the wheel carries the package's data (setup.py puts assets/,
spaces.yaml and the held-out prompts under specviz/_data/), and an installed copy away from the
checkout finds them there (specviz/paths.py) and decodes with the bundled pair."""
import os
import subprocess
import sys
import zipfile

import pytest

from specviz.paths import ROOT

pytestmark = pytest.mark.slow    # builds a 29 MB wheel and decodes from an unpacked copy


def test_the_wheel_carries_the_data_and_an_installed_copy_runs(tmp_path):
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                            "-q", "-w", str(tmp_path / "whl")], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr
    wheel = next((tmp_path / "whl").glob("specviz-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("specviz/_data/spaces.yaml", "specviz/_data/assets/style.css", "specviz/_data/assets/page.js",
                   "specviz/_data/assets/models/target/config.json", "specviz/_data/assets/models/draft/config.json",
                   "specviz/_data/assets/models/smollm2-draft/config.json",
                   "specviz/_data/benchmarks/heldout-prompts.json", "specviz/view/explain.md",
                   "specviz/_data/docs/workshop.md"):
        assert needed in names, needed
    assert not any(n.endswith("screenshot.png") for n in names)         # nothing reads it at run time
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)                              # a pure wheel: unpacking is installing
    probe = ("import specviz, specviz.paths as p; from specviz import SpecConfig, load_pair, speculate; "
             "from specviz.models.presets import get_preset; "
             "assert p.ROOT == p.PACKAGE / '_data' and specviz.__file__.startswith(%r), (p.ROOT, specviz.__file__); "
             "assert get_preset('smollm2').draft.startswith(str(p.ROOT)); "
             "done = list(speculate(load_pair(device='cpu'), 'def f(x):', SpecConfig(max_new_tokens=6)))[-1]; "
             "print(len(done.token_ids))") % str(site)
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(site), "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "6"
