"""Helpers that more than one test module uses (fixtures live in conftest.py; plain functions here).

- PROMPTS and tiny_config: the prompts and the configuration of conftest.py's tiny Llama models.
- last, reference: the final Done event of a run; generate()'s greedy tokens, the identity reference.
- reference_probs, joint: an independent implementation of temperature / top-k / top-p and the exact
  joint law of the first two tokens, for the chi-square tests on an 8-token vocabulary (V).
- cli, bench: `python -m specviz ...` in a subprocess, offline, on this checkout.
- FORM, form: the race form by name; tiny_preset, tiny_presets, app_with, tiny_app: an app on the tiny
  models (conftest.py's `served` serves tiny_app for a module); wait_for: wait for a state, not a duration.
- load_script: a file of scripts/ as a module (scripts/ is not a package).
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import fields as dataclass_fields

import numpy as np
import torch
from transformers import LlamaConfig

from specviz.app.profile import Limits
from specviz.app.state import AppState
from specviz.models.presets import Preset
from specviz.paths import ROOT

PROMPTS = ["def add(a, b):\n    return", "import os\nimport sys\n\n\nclass", "for i in range(10):\n    print(i)\nfor i in"]
N = 40          # new tokens of the greedy identity tests
V = 8           # the chi-square tests' vocabulary size


def tiny_config(tokenizer, layers: int, width: int = 48) -> LlamaConfig:
    return LlamaConfig(vocab_size=len(tokenizer), hidden_size=width, intermediate_size=2 * width,
                       num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=4,
                       max_position_embeddings=256, tie_word_embeddings=True, initializer_range=0.3,
                       bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                       pad_token_id=tokenizer.pad_token_id)


# --- runs ---------------------------------------------------------------------------------------

def last(events):
    """The run's Done event (and a check that the run ended with one)."""
    events = list(events)
    assert events[-1].kind == "done"
    return events[-1]


def reference(pair, prompt: str, n: int = N) -> list[int]:
    """generate()'s greedy continuation of prompt: the tokens every exact decoder must reproduce."""
    ids = pair.tokenizer(prompt)["input_ids"]
    out = pair.target.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=n)
    return out[0, len(ids):].tolist()


# --- the sampled law ----------------------------------------------------------------------------

def reference_probs(logits: np.ndarray, temperature: float, top_k: int, top_p: float) -> np.ndarray:
    z = logits.astype(np.float64) / temperature
    keep = np.ones(V, dtype=bool)
    if top_k:
        keep &= z >= np.sort(z)[::-1][top_k - 1]
    probs = np.exp(z - z.max()) * keep
    probs /= probs.sum()
    if top_p < 1:
        order = np.argsort(-probs, kind="stable")
        before = np.cumsum(probs[order]) - probs[order]
        drop = order[before >= top_p]
        probs[drop] = 0
        probs /= probs.sum()
    return probs


def joint(pair_model, prompt, temperature, top_k, top_p) -> np.ndarray:
    """P(x1, x2) under the model with the given settings, as a flat V*V vector."""
    with torch.no_grad():
        first = pair_model(torch.tensor([prompt])).logits[0, -1].numpy()
        p1 = reference_probs(first, temperature, top_k, top_p)
        out = np.zeros((V, V))
        for x1 in range(V):
            second = pair_model(torch.tensor([prompt + [x1]])).logits[0, -1].numpy()
            out[x1] = p1[x1] * reference_probs(second, temperature, top_k, top_p)
    return out.ravel()


# --- the command line ---------------------------------------------------------------------------

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}


def cli(*args, timeout: int = 300) -> subprocess.CompletedProcess:
    """`python -m specviz ARGS` offline; the completed process (check returncode yourself)."""
    return subprocess.run([sys.executable, "-m", "specviz", *args], capture_output=True, text=True, env=ENV,
                          timeout=timeout)


def bench(*args) -> dict:
    """`python -m specviz bench ARGS --json`, which must succeed; its JSON result."""
    r = cli("bench", *args, "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# --- the app, its form and its page, on the tiny models -------------------------------------

# The race form by name, as the page sends it (RunRequest's fields but chat, confidence_stop and tree).
FORM = dict(prompt="import os\n", preset="tiny", custom_target="", custom_draft="", drafter="model", k=4,
            adaptive_k=False, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=64, seed=0, stop_strings="")
ADD = "def add(a, b):\n    return"        # the prompt most form tests race


def form(**changes) -> dict:
    """FORM with `changes` (a test names only what its race is about)."""
    unknown = set(changes) - set(FORM) - {"chat", "confidence_stop", "tree"}
    assert not unknown, f"not a form field: {sorted(unknown)}"
    return {**FORM, **changes}


def tiny_preset(tiny_dirs, key: str = "tiny", draft: str = "cut", k: int = 4, examples=("import os\n",),
                label: str | None = None, **more) -> Preset:
    """A pair of conftest.py's tiny models: the 2-layer target with `draft` ("cut", "random" or "target")."""
    return Preset(key, label or key, tiny_dirs["target"], tiny_dirs[draft], k, tuple(examples), **more)


def tiny_presets(tiny_dirs) -> dict[str, Preset]:
    """Two tiny pairs: one whose draft agrees with the target part of the time, one whose draft never does."""
    return {"tiny": tiny_preset(tiny_dirs),
            "tiny-random": tiny_preset(tiny_dirs, "tiny-random", "random", 3, ("def f(x):\n",), "tiny, random draft")}


def app_with(presets: dict[str, Preset], **settings) -> AppState:
    """An app on the CPU serving `presets`; `settings` are Limits' fields by name (or `limits` whole)
    and AppState's own keywords."""
    names = {f.name for f in dataclass_fields(Limits)}
    limits = settings.pop("limits", None) or Limits(**{k: settings.pop(k) for k in list(settings) if k in names})
    return AppState(presets=presets, limits=limits, **{"device": "cpu", **settings})


def tiny_app(tiny_dirs, preset: Preset | None = None, **settings) -> AppState:
    """app_with one tiny pair (default: the tiny target with its one-layer cut, as "tiny"), loaded, its
    decoding lent in short slices so other jobs' turns come quickly."""
    preset = preset or tiny_preset(tiny_dirs)
    app = app_with({preset.key: preset}, **{"slice_s": 0.1, **settings})
    app.pairs.pair(preset)
    return app


def wait_for(check, timeout: float = 30.0) -> bool:
    """Wait for a state (not a duration): True once `check()` is; fails the test if it never comes."""
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, f"still not so after {timeout:g} s"
        time.sleep(0.02)
    return True


# Raw queue joins (tests/test_fair_service.py, tests/test_bad_input.py).
def generate_fn(demo):
    """The fn index of /generate in a served demo."""
    return next(i for i, f in demo.fns.items() if f.api_name == "generate")


def join_from(url, fn_index, session, data, address):
    """Join the queue as a raw HTTP client would, saying it stands for `address`."""
    import httpx
    body = {"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None, "trigger_id": None}
    return httpx.post(f"{url}/gradio_api/queue/join", json=body, headers={"X-Forwarded-For": address}, timeout=10)


LONG_GENERATE = ["def f(x):\n", "tiny", 4, 0.0, 0, 1.0, 256, 0, "model", False]


def form_values(**changes) -> list:
    """The race form's values in FORM_FIELDS order, as the page sends them."""
    from specviz.app.request import FORM_FIELDS
    values = {**FORM, **changes}
    return [values.get(name) for name in FORM_FIELDS]


def steady(costs, repeats: int = 3):
    """A hand-made calibrate.MachineCosts as if each median had been timed `repeats` times alike (no
    spread): the cost model (engine/analysis/cost_model.py) then holds settled figures at every size."""
    from dataclasses import replace
    ks = [n - 1 for n in costs.pass_s if n > 1]
    rounds = {k: costs.round_draft_s.get(k, (costs.draft_s or 0.0) * k) for k in ks}
    return replace(costs, pass_samples={n: (s,) * repeats for n, s in costs.pass_s.items() if n > 1},
                   round_samples={k: (s,) * repeats for k, s in rounds.items()} if costs.draft_s is not None else {})


def load_script(name: str):
    """scripts/NAME.py as a fresh module named script_NAME (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"script_{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
