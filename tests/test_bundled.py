"""The bundled pair: loads offline with plain transformers and through load_pair, decodes
exactly; and the trainer that builds it runs end to end on a tiny budget."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from specviz import SpecConfig, decode_baseline, load_pair, speculate
from specviz.models.loading import BUNDLED_DRAFT, BUNDLED_TARGET
from specviz.paths import ROOT


def test_files_fit_a_space_repo_without_lfs():
    files = list(Path(BUNDLED_TARGET).glob("*.safetensors")) + list(Path(BUNDLED_DRAFT).glob("*.safetensors"))
    assert files, "assets/models holds no weights: run python -m specviz train-models"
    assert all(f.stat().st_size <= 10 * 1024 * 1024 for f in files)


def test_loads_with_plain_transformers_offline():
    # local_files_only: any file the folders lack (a remote code module, a tokenizer piece) fails here.
    for path in (BUNDLED_TARGET, BUNDLED_DRAFT):
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, local_files_only=True)
        ids = tok("import os\n", return_tensors="pt")["input_ids"]
        assert ids[0, 0].item() == tok.bos_token_id
        assert model(ids).logits.shape[-1] >= len(tok)


@pytest.mark.slow    # loads the bundled pair and decodes 2 x 48 tokens in both lanes
def test_greedy_speculative_equals_plain_on_bundled_pair():
    pair = load_pair()          # the default: the bundled pair
    assert pair.draft is not None and pair.device.type in ("cpu", "cuda", "mps")
    for prompt in ("def fibonacci(n):", "class Stack:\n    def __init__(self):"):
        cfg = SpecConfig(k=4, max_new_tokens=48)
        spec = list(speculate(pair, prompt, cfg))[-1]
        base = list(decode_baseline(pair, prompt, cfg))[-1]
        assert spec.token_ids == base.token_ids
        assert spec.stats.acceptance_rate > 0.3   # the distilled draft is accepted often


@pytest.mark.slow    # trains both models in a subprocess, twice
def test_trainer_end_to_end_on_a_tiny_budget(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "specviz", "train-models", "--size", "tiny", "--out", str(tmp_path / "out"),
                        "--work-dir", str(tmp_path / "work"), "--target-minutes", "0.05", "--draft-minutes", "0.05",
                        "--max-files", "6", "--device", "cpu"], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "greedy agreement" in r.stdout and (tmp_path / "work" / "target.ckpt").exists()
    pair = load_pair(str(tmp_path / "out" / "target"), str(tmp_path / "out" / "draft"), device="cpu")
    done = list(speculate(pair, "def f():", SpecConfig(max_new_tokens=8)))[-1]
    assert len(done.token_ids) == 8
    # A second run finds both models built and only re-evaluates (resume path).
    r2 = subprocess.run(r.args, capture_output=True, text=True, env=env, timeout=600)
    assert r2.returncode == 0 and "target:" not in r2.stdout and "final (saved weights)" in r2.stdout
