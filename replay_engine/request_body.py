"""Reading a request's JSON body for the server: size limit, malformed JSON, clients that leave.

Every refusal is a ``BadRequest`` the route answers itself, before the engine is touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

MAX_BODY_BYTES = 32 * 1024 * 1024
"""Request bodies larger than this answer 413."""

_decode = msgspec.json.Decoder().decode


class BadRequest(Exception):
    """A request the server refuses before touching the engine (400 or 413)."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code

    def response(self, headers: Mapping[str, str] | None = None) -> JSONResponse:
        """The JSON error answer (with ``headers``, e.g. the no-retry one of model routes)."""
        body = {"error": {"message": self.message, "type": "invalid_request_error",
                          "code": self.code}}
        return JSONResponse(body, status_code=self.status, headers=headers)


class ClientGone(BadRequest):
    """The client closed the connection before its request body arrived: nothing to serve.

    The answer is never delivered (uvicorn drops writes to a closed connection); raising
    it keeps the route from binding a call and the server from logging a traceback.
    """

    def __init__(self) -> None:
        super().__init__(400, "the client closed the connection before sending its whole "
                         "request body", "CLIENT_CLOSED")


async def read_json_body(request: Request) -> dict[str, Any]:
    """The request body as a JSON object ({} when empty).

    Raises BadRequest when the body is too big or malformed, ClientGone when the client
    left before sending all of it.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise BadRequest(413, f"request body of {declared} bytes exceeds the "
                         f"{MAX_BODY_BYTES // (1024 * 1024)} MiB limit", "BODY_TOO_LARGE")
    parts: list[bytes] = []
    size = 0
    try:
        async for part in request.stream():
            size += len(part)
            if size > MAX_BODY_BYTES:
                raise BadRequest(413, f"request body exceeds the {MAX_BODY_BYTES // (1024 * 1024)} "
                                 "MiB limit", "BODY_TOO_LARGE")
            parts.append(part)
    except ClientDisconnect:
        raise ClientGone() from None
    raw = b"".join(parts)
    if not raw.strip():
        return {}
    try:
        value = _decode(raw)
    except msgspec.DecodeError as exc:
        raise BadRequest(400, f"request body is not valid JSON ({exc}); send one JSON object",
                         "INVALID_JSON") from None
    if not isinstance(value, dict):
        raise BadRequest(400, f"request body must be a JSON object, got {type(value).__name__}",
                         "INVALID_REQUEST")
    return value


def session_field(body: dict[str, Any]) -> str | None:
    """The body's ``sessionId`` (None when absent); BadRequest when it is not a string."""
    value = body.get("sessionId")
    if value is not None and not isinstance(value, str):
        raise BadRequest(400, f"sessionId must be a string, got {value!r}", "INVALID_REQUEST")
    return value
