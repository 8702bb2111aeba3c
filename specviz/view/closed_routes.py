"""Gradio routes this app closes: the file upload, which no part of the page uses.

Gradio's `POST gradio_api/upload` writes every posted file into its cache and answers with the
file's server path, even under `max_file_size` (a 0- or 1-byte file passes, 200 to a request), and
serves them back from `gradio_api/file=`; nothing deletes them. The page never uploads ("Load a
trace" reads the file in the browser and sends its text), so the route is shadowed here by one that
writes nothing and answers one line. Added through `launch()`'s `app_kwargs` (ui.launch_options),
whose routes come before Gradio's own, so it holds on a Space as locally.
"""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

CLOSED = ("/gradio_api/upload",)
ANSWER = "This app takes no uploads.\n"


async def closed(request: Request) -> Response:
    return PlainTextResponse(ANSWER, status_code=403)


def routes() -> list[Route]:
    return [Route(path, closed, methods=["POST", "PUT"]) for path in CLOSED]
