"""Trace downloads name nothing on the server: a race's whole response (every streamed output, as the
API sees it) and the page hold no server path; the trace comes from the app's own route by an opaque
token, and a token that is unknown, malformed or expired answers 404 in one line, never a traceback."""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from tests.helpers import FORM

LINK = re.compile(r'(specviz/trace/([0-9a-f]{32}))')


def _server_paths() -> list[str]:
    from gradio.utils import get_upload_folder
    from specviz.view import trace_files
    return ["/tmp/", str(Path(get_upload_folder())), str(trace_files.trace_folder()), tempfile.gettempdir(),
            os.getcwd(), "specviz-traces", "gradio_api/file"]


def test_a_race_response_and_the_page_hold_no_server_path(served):
    import httpx
    from gradio_client import Client
    client = Client(served, verbose=False, download_files=False)
    job = client.submit(*{**FORM, "chat": False, "max_new_tokens": 12}.values(), api_name="/race")
    final = job.result(timeout=120)
    every = json.dumps([final, *job.outputs()], ensure_ascii=False, default=str)
    assert "race-summary" in json.dumps(final, default=str)
    links = set(LINK.findall(every))
    assert len(links) == 1, links                        # the finished race's one link, by token
    for path in _server_paths():
        assert path not in every, path
    page = httpx.get(served, timeout=10).text + httpx.get(f"{served}/config", timeout=10).text
    assert "trace-file" in page and "download-trace" in page
    for path in _server_paths():
        assert path not in page, path
    (href, token), = links
    r = httpx.get(f"{served}/{href}", timeout=10)
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    trace = r.json()
    assert trace["specviz_trace"] == 2 and trace["events"][-1]["kind"] == "done"
    assert trace["config"]["max_new_tokens"] == 12 and trace["pair"] == "tiny"
    for path in _server_paths()[:-1]:
        assert path not in r.text, path


def test_unknown_malformed_and_expired_tokens_answer_404_in_one_line(served):
    import httpx
    from gradio_client import Client
    from specviz.view import trace_files
    out = Client(served, verbose=False, download_files=False).predict(
        *{**FORM, "chat": False, "max_new_tokens": 4}.values(), api_name="/race")
    href, token = LINK.search(json.dumps(out, default=str)).groups()
    assert httpx.get(f"{served}/{href}", timeout=10).status_code == 200
    folder = trace_files.find(token).parent
    old = folder.with_name("00000000000000000001-" + folder.name.split("-", 1)[1])     # written long ago
    folder.rename(old)
    try:
        for tail in (token, "0" * 32, "not-a-token", "..%2F..%2Fetc%2Fpasswd", token.upper(), token + "0"):
            r = httpx.get(f"{served}/specviz/trace/{tail}", timeout=10)
            assert r.status_code == 404, (tail, r.status_code)
            assert r.text.count("\n") <= 1 and "Traceback" not in r.text and "/" not in r.text
    finally:
        old.rename(folder)
