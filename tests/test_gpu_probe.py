"""scripts/gpu_probe.py runs every stage on the CPU (numbers mean nothing there), so the first minutes of a
lent GPU are not spent finding a broken stage. Its JSON names each stage and says it passed."""
import json
import os
import subprocess
import sys

import pytest

from specviz.paths import ROOT


@pytest.mark.slow
def test_gpu_probe_dry_run_passes_every_stage(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    out = tmp_path / "probe.json"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_probe.py"), "--device", "cpu", "--pair", "tiny",
                          "--tokens", "16", "--repeats", "1",
                          "--stages", "env,micro,pair,lanes,syncs,transformers_step,draft_ahead",
                          "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    stages = json.loads(out.read_text())["stages"]
    assert list(stages) == ["env", "micro", "pair", "lanes", "syncs", "transformers_step", "draft_ahead"]
    assert all(stage["ok"] for stage in stages.values())
    assert stages["lanes"]["gpu_step"] == "transformers"            # the lean step stays off on the CPU
    assert stages["transformers_step"]["gpu_step"] == "transformers"
    assert stages["syncs"]["skipped"] == "no CUDA"
    assert stages["lanes"]["draft_ahead"] is False and stages["draft_ahead"]["draft_ahead"] is False   # auto: CUDA only
    assert stages["lanes"]["ratio"] > 0 and stages["lanes"]["decode_path"] == "eager replay"
