"""`specviz remote` against responses recorded from a real vLLM server (tests/vllm_replay.py): the view's rounds
equal the server's own per-step counts, the exactness check flags the T = 0.7 output the CPU server garbled
and passes its T = 0 output, and every failure of a server is one line."""
import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from specviz.errors import RemoteError
from specviz.remote import client, exactness
from specviz.remote.watch import watch

from .vllm_replay import recorded_routes, recording, serving


def spec_of(name):
    return next(c["metrics"]["speculative_decoding"] for c in recording(name) if c.get("metrics"))


def cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "specviz", "remote", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.slow
def test_json_rounds_equal_the_servers_per_step_counts():
    with serving(recorded_routes()) as url:
        r = cli("--url", url, "--prompt", "def is_prime(n):", "--max-new-tokens", "48", "--json")
    assert r.returncode == 0, r.stderr
    record = json.loads(r.stdout)                      # nothing but the JSON on standard output
    spec = spec_of("code-t0.sse")
    assert [x["accepted"] for x in record["rounds"]] == spec["per_step_accepted"]
    assert [x["drafted"] for x in record["rounds"]] == spec["per_step_drafted"]
    assert record["mean_acceptance_length"] == spec["mean_acceptance_length"]
    assert record["draft_acceptance_rate"] == spec["draft_acceptance_rate"]
    # the tokens: the prefill's first, then each round's; together the server's whole text
    text = "".join(c["choices"][0]["text"] for c in recording("code-t0.sse") if c["choices"])
    first = recording("code-t0.sse")[0]["choices"][0]["logprobs"]["tokens"][0]
    assert first + "".join("".join(x["tokens"]) for x in record["rounds"]) == text


def test_every_token_has_a_fate_and_the_figures_are_the_servers():
    with serving(recorded_routes()) as url:
        seen = list(watch(url, "The three primary colors are", max_tokens=64))[-1]
    spec = spec_of("prose-t0.sse")
    record = seen.to_json()                            # what --json prints
    assert [x["accepted"] for x in record["rounds"]] == spec["per_step_accepted"]
    assert seen.fates.why is None and len(seen.fates.tokens) == len(seen.completion.pieces) == 64
    kept = sum(t.fate == "accepted" for t in seen.fates.tokens)
    assert kept == spec["num_accepted_draft_tokens"]
    # a correction ends each round that lost a draft, a bonus each that kept all
    for r in seen.fates.rounds:
        if len(r.tokens) == r.accepted + 1:
            assert r.tokens[-1].fate == ("bonus" if r.rejected == 0 else "correction")
    assert seen.mean_acceptance_length == spec["mean_acceptance_length"]


def test_the_garbled_sampled_output_is_flagged_from_its_logprobs():
    with serving(recorded_routes()) as url:
        seen = list(watch(url, "Explain what a hash table is in three sentences.", temperature=0.7, max_tokens=96))[-1]
    low = exactness.unlikely(seen.completion.logprobs)
    assert len(low) >= 15                              # the server gave tokens the target almost never would
    verdict = exactness.check(seen.completion.logprobs, None, greedy=False)
    assert verdict.lossless is None and "no local copy" in verdict.sentence()
    # with the target's own expectation (about 4 such tokens) the tail says: not the target's law
    verdict = exactness.check(seen.completion.logprobs, (seen.completion.logprobs, 4.0, []), greedy=False)
    assert verdict.lossless is False and "not lossless" in verdict.sentence()
    clean = exactness.check(list(seen.completion.logprobs[:5]), ([0.0] * 5, 1.0, []), greedy=False)
    assert clean.lossless is True


def test_poisson_tail():
    assert exactness.poisson_tail(0, 3.0) == 1.0
    assert exactness.poisson_tail(1, 1.0) == pytest.approx(1 - 2.718281828 ** -1)
    assert 0 < exactness.poisson_tail(38, 4.0) < 1e-20


def test_metrics_counters_and_their_delta():
    counters = client.parse_counters(recorded_routes()["/metrics"][0].decode())
    assert counters["vllm:spec_decode_num_drafts_total"] == 292.0
    assert set(counters["per_position"]) == {0, 1, 2}
    later = dict(counters, per_position={0: 60.0, 1: 30.0, 2: 28.0})
    later["vllm:spec_decode_num_drafts_total"] = 300.0
    delta = client.counter_delta(counters, later)
    assert delta["vllm:spec_decode_num_drafts_total"] == 8.0 and delta["per_position"][0] == 6.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_server_that_is_down_is_one_line():
    r = cli("--url", f"http://127.0.0.1:{free_port()}/v1", "--prompt", "x")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "is the server running" in r.stderr


@pytest.mark.slow
def test_no_speculative_metrics_is_one_line():
    with serving(recorded_routes(strip_metrics=True)) as url:
        r = cli("--url", url, "--prompt", "def is_prime(n):", "--json")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--speculative-config" in r.stderr


class _Page(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b"<html>hello</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.slow
def test_a_server_that_is_not_vllm_is_one_line():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        r = cli("--url", f"http://127.0.0.1:{server.server_address[1]}", "--prompt", "x")
    finally:
        server.shutdown()
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "is it vLLM" in r.stderr


def test_a_slow_server_is_one_line():
    with socket.socket() as listener:               # accepts, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with pytest.raises(RemoteError, match="did not answer within"):
            client.models(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", timeout=0.5)


def test_an_address_that_is_not_http_is_refused():
    with pytest.raises(RemoteError, match="http://"):
        client.base_url("file:///etc/passwd")


def test_the_baseline_race_is_worded_once_for_the_cli_and_the_page(capsys):
    from specviz.cli import main
    from specviz.remote.watch import race_baseline
    prompt = "def is_prime(n):"
    with serving(recorded_routes()) as url:
        seen = list(watch(url, prompt, max_tokens=48))[-1]
        race = race_baseline(url, seen, prompt, max_tokens=48)
        assert main(["remote", "--url", url, "--prompt", prompt, "--max-new-tokens", "48", "--baseline-url", url,
                     "--no-color"]) == 0
    # the replay answers the plain request with the same recording: the same text; no fates asked of it
    assert race.same_text and race.plain.fates is None and race.plain.completion.pieces == seen.completion.pieces
    assert race.ratio == pytest.approx(race.plain.seconds / seen.seconds)
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(f"baseline {url}: "))
    assert f"{len(seen.completion.pieces)} tokens in " in line and "(the same text); speculation ran " in line
    assert line.endswith("x (one request each, one after the other)")


def test_the_comparison_says_a_different_text_and_a_ratio_it_cannot_take():
    from specviz.remote.client import Completion
    from specviz.remote.watch import Watch, compare
    plain = Watch("v", "m", Completion(pieces=["a", "c", "d"]), seconds=1.0)
    race = compare(Watch("u", "m", Completion(pieces=["a", "b"]), seconds=0.5), plain)
    assert not race.same_text and race.ratio == 2.0
    assert race.comparison() == ("3 tokens in 1.00 s (a different text); speculation ran 2.00x "
                                 "(one request each, one after the other)")
    instant = compare(Watch("u", "m", Completion(pieces=["a", "c", "d"]), seconds=0.0), plain)
    assert instant.same_text and instant.ratio is None and "speculation ran - (" in instant.comparison()
