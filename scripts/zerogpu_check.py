"""ZeroGPU's main process, emulated with the real `spaces` package on a machine without a GPU.

spaces (0.51.3) patches torch at import on a ZeroGPU Space: CUDA tensors in the main process
are emulated (weights "moved" to cuda stay where they are until a GPU worker takes them), and
anything that would really initialize CUDA (a CUDA event, a sync) raises. This script runs
specviz's start-up as app.py does on ZeroGPU (with the bundled pair as the tier's preset, since
hub models cannot be downloaded here), prepares a request the way every handler does, and checks
that nothing reached CUDA; as a control, it shows that a warm-up race in the main process (what
the app did at start before) raises (here a CUDA runtime error, there being no driver; on a Space,
spaces' guard against `torch._C._cuda_init`).

spaces imports only with a CUDA build of torch, so it needs its own environment (about 4 GB; no
GPU needed):

    python3 -m venv /tmp/zgenv && /tmp/zgenv/bin/pip install torch==2.11.0 spaces==0.51.3 \\
        transformers==5.23.0 accelerate==1.15.0 gradio==6.31.0 plotly==7.1.0 pyyaml==6.0.3 \\
        safetensors==0.8.0 tokenizers==0.23.3 gguf==0.19.0
    /tmp/zgenv/bin/python scripts/zerogpu_check.py
"""
import os
import sys
import tempfile
from pathlib import Path

os.environ["SPACES_ZERO_GPU"] = "true"
os.environ.setdefault("SPACES_ZERO_DEVICE_API_URL", "http://127.0.0.1:9/")   # never called here
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import spaces  # noqa: E402,F401  (first, as in app.py)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROFILE = """
tiers:
  zerogpu:
    presets:
      - {key: bundled, label: bundled pair, target: bundled, draft: bundled, k: 4, examples: ["def f(x):"]}
"""


def main() -> int:
    import torch

    from specviz.app import zerogpu
    from specviz.app.profile import load_profile
    from specviz.app import gpu_calls as work
    from specviz.app.state import AppState, warm_up
    from specviz.app.request import RunRequest, prepare
    from specviz.view.ui import build_demo

    checks = []
    def check(name, ok):
        checks.append(ok)
        print(f"{'ok  ' if ok else 'FAIL'} {name}")

    check(f"spaces patched torch {torch.__version__}: ZeroGPU detected", zerogpu.ON_ZEROGPU)
    path = Path(tempfile.mkdtemp()) / "spaces.yaml"
    path.write_text(PROFILE)
    app = AppState.from_profile(load_profile(path, tier="zerogpu"), on_zerogpu=zerogpu.ON_ZEROGPU)
    app.pairs.load_all()                                  # app.py's ZeroGPU start-up
    pair = app.pairs.pair(app.pairs.preset("bundled"))
    check(f"every preset loaded at start, on {pair.device} (emulated), in {next(pair.target.parameters()).dtype}",
          pair.device.type == "cuda")
    build_demo(app)
    check("the page builds", True)
    run = prepare(app, RunRequest(prompt="def f(x):", preset="bundled", max_new_tokens=16))
    check(f"a request is prepared in the main process ({len(run.ids)} prompt tokens)", len(run.ids) > 0)
    wrapped = [name for name in ("race_records", "run_records", "lossless_results")
               if getattr(work, name).__module__.startswith("spaces")
               or "spaces" in type(getattr(work, name)).__module__
               or getattr(getattr(work, name), "__wrapped__", None) is not None]
    check(f"decoding functions go through spaces.GPU: {', '.join(wrapped)}", len(wrapped) == 3)
    try:
        warm_up(pair)
        check("control: a warm-up race in the main process raises (the old start-up crash)", False)
    except Exception as err:  # noqa: BLE001
        check(f"control: a warm-up race in the main process raises: {type(err).__name__}: "
              f"{str(err).splitlines()[0][:80]}", True)
    print(f"{sum(checks)}/{len(checks)} checks passed")
    return 0 if all(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
