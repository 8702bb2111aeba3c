"""A request body the server cannot read is answered in one line, never a 500 and a traceback.

FastAPI answers a body that fails its model (`{"fn_index": 1e400}`, NaN, a number of 5000 digits, a
body cut short) with a 422 that echoes the offending value back; JSON has no infinity or NaN, so the
echo itself failed, and the server answered 500 and logged two full tracebacks, before any of the
fair queue's caps could look at the request. The handler here answers 400 with one line naming the
field (never its value) and logs one short line. `exception_handlers()` goes into the app's
`app_kwargs` (view/ui.py).
"""
from __future__ import annotations

import logging

from fastapi.exceptions import RequestValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse

log = logging.getLogger("specviz.requests")
MAX_SESSION_CHARS = 128       # Gradio's own session ids are ~11 characters; a 100 KB one is no tab's


def _field(error: dict) -> str:
    where = [str(part) for part in error.get("loc", ()) if part != "body"]
    return ".".join(where)[:40] or "the body"


async def refused_body(request: Request, exc: Exception) -> JSONResponse:
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    field = _field(errors[0]) if errors else "the body"
    kind = str(errors[0].get("type", "invalid"))[:40] if errors else "invalid"
    log.warning("refused a body for %s: %s (%s)", request.url.path[:80], field, kind)
    text = (f"This request could not be read: {field} is not a value the page sends"
            if field != "the body" else "This request could not be read: its body is not JSON the page sends")
    return JSONResponse({"detail": text}, status_code=400)


def exception_handlers() -> dict:
    return {RequestValidationError: refused_body}
