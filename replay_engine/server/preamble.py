"""What every model route reads before it binds a call (docs/format.md#wire): the session id and
whether the request is an SDK's retry, and the no-retry header its error answers carry."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request

from ..safe_text import shown
from .guard import INVALID_ID, id_problem
from .request_body import BadRequest, session_field

NO_RETRY = {"x-should-retry": "false"}
"""On every error answer of a model route: the OpenAI and Anthropic SDKs then do not retry
a scripted failure (which would consume the next recorded call behind the agent's back)."""
RETRY_COUNT_HEADER = "x-stainless-retry-count"
"""The header the Stainless-made SDKs (openai, anthropic) number their retries with."""


_PREFIXES = re.compile(r"^(?:/runs/[^/]+)?(?:/sessions/[^/]+)?")


def bare_path(path: str) -> str:
    """``path`` without its ``/runs/{run}`` and ``/sessions/{id}`` prefixes (a dialect's route)."""
    return _PREFIXES.sub("", path, count=1)


def is_retry(request: Request) -> bool:
    """True when the request is an SDK's retry of an earlier one (retry count above 0)."""
    count = request.headers.get(RETRY_COUNT_HEADER, "").strip()
    return count.isdigit() and int(count) > 0


def request_session(request: Request, body: dict[str, Any] | None = None) -> str | None:
    """The caller's session id: ``X-Session-Id``, the ``/sessions/{id}`` path, the body field.

    Absent everywhere is the anonymous session; two that disagree are a BadRequest (400), and
    so is a header id outside the rule path ids keep (``guard.id_problem``).
    """
    given: list[tuple[str, str | None]] = []
    header = request.headers.get("x-session-id")
    if header:
        problem = id_problem("session", header, " (X-Session-Id header)")
        if problem is not None:
            raise BadRequest(400, problem, INVALID_ID)
        given.append(("the X-Session-Id header", header))
    if "session" in request.path_params:
        given.append(("the /sessions/{id} path", str(request.path_params["session"])))
    if body is not None and "sessionId" in body:
        given.append(("the sessionId body field", session_field(body)))
    values = {value for _, value in given}
    if len(values) > 1:
        said = ", ".join(f"{where} says {shown(value)}" for where, value in given)
        raise BadRequest(400, f"the session id is given twice and disagrees: {said}; send it "
                         "once, or the same in each place", "SESSION_MISMATCH")
    return given[0][1] if given else None
