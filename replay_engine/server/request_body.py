"""Reading a request's JSON body for the server: size limit, malformed JSON, clients that leave.

Every refusal is a ``BadRequest`` (from ``errors``) the route answers itself, before the
engine is touched.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
from starlette.requests import ClientDisconnect, Request

from ..errors import (
    BODY_TIMEOUT,
    BODY_TOO_LARGE,
    INVALID_JSON,
    INVALID_REQUEST,
    BadRequest,
    ClientGone,
)
from ..jsonlimits import (
    DEPTH_PROBLEM,
    SURROGATE_ESCAPE,
    NonFiniteNumber,
    huge_integer_at,
    loads_strict,
    may_hold_huge_integer,
    non_finite_at,
    non_finite_problem,
    too_deep,
)
from ..safe_text import shown
from .guard import INVALID_ID, id_problem

__all__ = ["MAX_BODY_BYTES", "BadRequest", "ClientGone", "parse_json_body", "read_body",
           "read_json_body", "session_field"]

MAX_BODY_BYTES = 32 * 1024 * 1024
"""Request bodies larger than this answer 413."""
BODY_TIMEOUT_S = 30.0
"""A request body still incomplete this long after the route began reading it answers 408."""

_decode = msgspec.json.Decoder().decode


async def read_body(request: Request) -> bytes:
    """The request body's bytes, within the size cap and the body deadline.

    Raises BadRequest (413, 408) when the body is too big or too slow, ClientGone when the
    client left before sending all of it.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise BadRequest(413, f"request body of {declared} bytes exceeds the "
                         f"{MAX_BODY_BYTES // (1024 * 1024)} MiB limit", BODY_TOO_LARGE)
    parts: list[bytes] = []
    size = 0
    try:
        with anyio.fail_after(BODY_TIMEOUT_S):
            async for part in request.stream():
                size += len(part)
                if size > MAX_BODY_BYTES:
                    raise BadRequest(413, f"request body exceeds the "
                                     f"{MAX_BODY_BYTES // (1024 * 1024)} MiB limit", BODY_TOO_LARGE)
                parts.append(part)
    except ClientDisconnect:
        raise ClientGone() from None
    except TimeoutError:
        raise BadRequest(408, f"the request body did not arrive within {BODY_TIMEOUT_S:g} s; "
                         "send it at once", BODY_TIMEOUT) from None
    return b"".join(parts)


def parse_json_body(raw: bytes) -> dict[str, Any]:
    """A request body as a JSON object ({} when empty), read by the rules of the logs: nested
    at most ``MAX_JSON_DEPTH`` deep, numbers a double holds (``1e999`` and a 401-digit integer
    alike refused, naming where), lone surrogate escapes kept; else BadRequest (400)."""
    if not raw.strip():
        return {}
    if too_deep(raw):
        raise BadRequest(400, f"request body is {DEPTH_PROBLEM}", INVALID_JSON)
    try:
        value = _decode(raw)
    except RecursionError:
        raise BadRequest(400, f"request body is {DEPTH_PROBLEM}", INVALID_JSON) from None
    except msgspec.DecodeError as exc:
        value = _lenient(raw, exc)
    else:
        if may_hold_huge_integer(raw) and huge_integer_at(value) is not None:
            raise _non_finite(raw)
    if not isinstance(value, dict):
        raise BadRequest(400, f"request body must be a JSON object, got {type(value).__name__}",
                         INVALID_REQUEST)
    return value


def _non_finite(raw: bytes) -> BadRequest:
    """The refusal of a body holding a number no double holds, naming it and where it is."""
    found = non_finite_at(raw)
    where, literal = found if found is not None else ("$", "")
    return BadRequest(400, f"request body: {where}: {non_finite_problem(literal)}", INVALID_JSON)


def _lenient(raw: bytes, exc: msgspec.DecodeError) -> Any:
    """A body msgspec refused: decoded again when a lone surrogate escape is why (which
    ``JSON.parse``, and so the logs, accept), named when a number no double holds is why;
    else the refusal."""
    problem = str(exc)
    if SURROGATE_ESCAPE.search(raw):
        try:
            return loads_strict(raw.decode("utf-8"))
        except NonFiniteNumber:
            raise _non_finite(raw) from None
        except ValueError as bad:  # UnicodeDecodeError and JSONDecodeError among them
            problem = str(bad)
    elif problem.startswith("Number out of range"):
        raise _non_finite(raw) from None
    raise BadRequest(400, f"request body is not valid JSON ({problem}); send one JSON object",
                     INVALID_JSON)


async def read_json_body(request: Request) -> dict[str, Any]:
    """The request body as a JSON object ({} when empty): ``read_body`` then
    ``parse_json_body`` (BadRequest, ClientGone)."""
    return parse_json_body(await read_body(request))


def session_field(body: dict[str, Any]) -> str | None:
    """The body's ``sessionId`` (None when absent); BadRequest when it is not a string, or
    not an id the server takes (the rule of path ids and ``X-Session-Id``: ``INVALID_ID``)."""
    value = body.get("sessionId")
    if value is not None and not isinstance(value, str):
        raise BadRequest(400, f"sessionId must be a string, got {shown(value)}", INVALID_REQUEST)
    if value is not None and (problem := id_problem("session", value, " (sessionId body field)")):
        raise BadRequest(400, problem, INVALID_ID)
    return value
