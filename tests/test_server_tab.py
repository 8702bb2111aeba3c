"""The Server tab's handler against responses recorded from a real vLLM server: tokens colored by their fates,
the server's figures, the exactness verdict, the plain endpoint's race, escaping, and no address but the host's."""
import html

from specviz.remote.servers import Server, parse_server
from specviz.view.server_view import pane
from specviz.view.tabs.server import ask_server

from .helpers import app_with, tiny_preset
from .vllm_replay import recorded_routes, recording, serving


def updates(app, label, prompt, temperature=0.0, max_tokens=48):
    return list(ask_server(app, label, prompt, temperature, max_tokens))


def test_the_page_colors_each_token_by_its_fate_and_shows_the_servers_figures(tiny_dirs):
    with serving(recorded_routes()) as url:
        app = app_with({"tiny": tiny_preset(tiny_dirs)}, servers=(Server("lab", url),))
        status, spec, _, figures, verdict = updates(app, "lab", "def is_prime(n):")[-1]
    per_step = next(c["metrics"]["speculative_decoding"] for c in recording("code-t0.sse") if c.get("metrics"))
    # every accepted draft the output holds: the last step's were cut at 48 tokens (1 of its 3 shown)
    assert per_step["per_step_accepted"][-1] == 3 and spec.count("tok-accepted") == sum(per_step["per_step_accepted"]) - 2
    assert spec.count('class="tok tok-resampled"') == sum(a < d for a, d in zip(per_step["per_step_accepted"],
                                                                              per_step["per_step_drafted"]))
    assert "2.94 tokens a step" in figures and "0.65 of 51" in figures
    assert "48 tokens" in status
    assert "logprob -8" in verdict                     # no local preset named: the count alone


def test_the_garbled_output_is_said_in_the_page(tiny_dirs):
    with serving(recorded_routes()) as url:
        app = app_with({"tiny": tiny_preset(tiny_dirs)}, servers=(Server("lab", url),))
        *_, verdict = updates(app, "lab", "Explain what a hash table is in three sentences.", 0.7, 96)[-1]
    assert "tokens below logprob -8" in verdict


def test_a_label_not_listed_is_refused_and_nothing_is_called(tiny_dirs):
    app = app_with({"tiny": tiny_preset(tiny_dirs)}, servers=(Server("lab", "http://127.0.0.1:9"),))
    status, *rest = updates(app, "http://169.254.169.254/latest", "hi")[-1]
    assert "pick one of the servers" in status


def test_model_text_is_escaped():
    from specviz.remote.client import Completion
    from specviz.remote.rounds import assign_fates
    from specviz.remote.watch import Watch
    evil = ["<script>alert(1)</script>", "&", '"x"']
    seen = Watch("u", "m", Completion(pieces=evil, token_ids=[1, 2, 3], logprobs=[-0.1] * 3))
    seen.fates = assign_fates(evil, [1, 2, 3], [-0.1] * 3, [1], [2])
    out = pane(seen)
    assert "<script>" not in out and html.escape("<script>") in out


def test_server_options_parse():
    s = parse_server("http://h:8000/v1,baseline=http://h:8001/v1,label=Lab,check=smollm2")
    assert (s.url, s.baseline_url, s.label, s.check) == ("http://h:8000", "http://h:8001", "Lab", "smollm2")


def test_a_listed_baseline_races_in_the_page_in_the_clis_words(tiny_dirs):
    from specviz.remote.watch import watch
    prompt = "def is_prime(n):"
    with serving(recorded_routes()) as url:
        app = app_with({"tiny": tiny_preset(tiny_dirs)}, servers=(Server("lab", url, baseline_url=url),))
        status, spec, base, figures, verdict = updates(app, "lab", prompt)[-1]
        plain = list(watch(url, prompt, max_tokens=48, speculative=False))[-1]
    assert base == pane(plain)                          # the plain endpoint's own pane, beside the speculative one
    assert "; plain endpoint: 48 tokens in " in status and "(the same text); speculation ran " in status
    assert "x (one request each, one after the other)" in status
