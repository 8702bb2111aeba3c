"""The Server tab (shown when the host listed servers: `python app.py --server URL`): watch a real vLLM server
speculate on a prompt. Its tokens stream in as the server sends them and take their fates' colors once its
per-step counts arrive; beside them the figures the server computed and, with `baseline=URL` listed, the same
prompt through the plain endpoint, one after the other (the server's own clock, not this machine's lanes). The
exactness check (remote/exactness.py) runs on the server's logprobs, with a local pass when `check=PRESET`
names a preset with the same weights. The menu lists labels; the handler maps a label to the host's address.
"""
from __future__ import annotations

import time
from functools import partial

import gradio as gr

from ...errors import SpecvizError
from ...remote import exactness
from ...remote.servers import by_label
from ...remote.watch import race_baseline, watch
from ..render import clean
from ..server_view import figures, pane, verdict_html
from . import Shared

UPDATES_PER_S = 5
MAX_TOKENS = (1, 512)


def build(shared: Shared) -> gr.Tab:
    servers = shared.app.servers
    with gr.Tab("Server", id="server", visible=bool(servers)) as tab:
        gr.Markdown("#### A real serving engine's speculation\nThe server drafts and verifies; this page shows what "
                    "it reports per request: which tokens were accepted drafts (green), the target's correction "
                    "after a rejection (amber, with the number of drafts it threw away: the server does not say "
                    "which) or its bonus (blue). What a client can and cannot see: docs/remote.md.")
        with gr.Row():
            choice = gr.Dropdown([s.label for s in servers], value=servers[0].label if servers else None,
                                 label="server", elem_id="server-choice")
            temperature = gr.Slider(0, 2, value=0.0, step=0.05, label="temperature", elem_id="server-temperature")
            max_tokens = gr.Slider(*MAX_TOKENS, value=96, step=1, label="max new tokens", elem_id="server-max")
        prompt = gr.Textbox(label="prompt", lines=2, value="Write a Python function that checks whether a number "
                            "is prime.", elem_id="server-prompt")
        ask = gr.Button("Ask the server", variant="primary", elem_id="server-ask")
        status = gr.HTML(elem_id="server-status")
        with gr.Row():
            spec_pane = gr.HTML(pane(None, "the speculative server's output"), elem_id="server-spec")
            base_pane = gr.HTML(pane(None, "the plain endpoint's output (when the host listed one)"),
                                elem_id="server-base")
        numbers = gr.HTML(elem_id="server-figures")
        check = gr.HTML(elem_id="server-check")
    ask.click(partial(ask_server, shared.app), [choice, prompt, temperature, max_tokens],
              [status, spec_pane, base_pane, numbers, check], api_name=False, concurrency_limit=4)
    return tab


def ask_server(app, label, prompt, temperature, max_tokens):
    """Stream one request from the chosen server (then its baseline), as page updates."""
    try:
        server = by_label(app.servers, label)
        prompt = str(prompt or "").strip()
        if not prompt or len(prompt) > app.max_prompt_chars:
            raise SpecvizError(f"type a prompt of 1 to {app.max_prompt_chars} characters")
        temperature = min(max(float(temperature), 0.0), 2.0)
        max_tokens = int(min(max(int(max_tokens), MAX_TOKENS[0]), MAX_TOKENS[1]))
        seen, last = None, 0.0
        for seen in watch(server.url, prompt, server.model, temperature, max_tokens):
            if seen.finished or time.monotonic() - last > 1 / UPDATES_PER_S:
                last = time.monotonic()
                yield _status(f"{server.label}: streaming"), pane(seen), gr.skip(), figures(seen), gr.skip()
        plain_html, race = gr.skip(), ""
        if server.baseline_url:             # the CLI's --baseline-url comparison, word for word (remote/watch.py)
            baseline = race_baseline(server.baseline_url, seen, prompt, server.model, temperature, max_tokens)
            plain_html, race = pane(baseline.plain), f"; plain endpoint: {baseline.comparison()}"
        verdict = local_verdict(app, server, seen, temperature)
        yield (_status(f"{server.label}: {len(seen.completion.pieces)} tokens in {seen.seconds:.2f} s{race}"),
               pane(seen), plain_html, figures(seen), verdict_html(verdict))
    except SpecvizError as err:
        yield _status(str(err), error=True), gr.skip(), gr.skip(), gr.skip(), gr.skip()


def local_verdict(app, server, seen, temperature):
    """The exactness check: the logprob count, with the local pass when the host named a preset to check with."""
    target = None
    if server.check and exactness.has_ids(seen.completion):
        target = app.pairs.pair(app.pairs.known(server.check)).target
    return exactness.verdict_of(seen.completion, temperature, target)


def _status(text: str, error: bool = False) -> str:
    cls = "server-error" if error else "server-note"
    return f'<p class="{cls}">{clean(text)}</p>'
