"""The app's own route for trace downloads: GET specviz/trace/<token> -> the trace as a JSON attachment.

Added to the FastAPI app Gradio serves (ui.launch_options' app_kwargs, so `demo.launch()` adds it
locally and on a Space alike). The token is opaque (view/trace_files.py); an unknown, malformed or
expired one answers 404 with one line of text, never a traceback, and nothing says where traces lie.
"""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from . import trace_files

PATH = "/specviz/trace/{token}"
GONE = "No such trace: download links last an hour. Run the race again for a new one.\n"


def link(token: str) -> str:
    """The href of a trace, relative to the page (so it holds under a proxy's root path too)."""
    return f"specviz/trace/{token}"


def download(request: Request) -> Response:
    path = trace_files.find(request.path_params.get("token", ""))
    try:
        body = path.read_bytes() if path is not None else None
    except OSError:          # pruned between the look-up and the read
        body = None
    if body is None:
        return PlainTextResponse(GONE, status_code=404)
    return Response(body, media_type="application/json", headers={
        "Content-Disposition": f'attachment; filename="{trace_files.FILE_NAME}"', "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff"})


def routes() -> list[Route]:
    return [Route(PATH, download, methods=["GET"])]


LABEL = "Download trace (JSON)"


def download_html(token: str | None = None) -> str:
    """The race tab's download control: a link to the trace by its token, or, with none, the same label
    greyed out (before a race finishes, or after a refusal)."""
    if token is None or not trace_files.TOKEN.fullmatch(token):
        return f'<span id="download-trace" class="trace-link trace-link-off" aria-disabled="true">{LABEL}</span>'
    return (f'<a id="download-trace" class="trace-link" href="{link(token)}" download="{trace_files.FILE_NAME}">'
            f'{LABEL}</a>')
