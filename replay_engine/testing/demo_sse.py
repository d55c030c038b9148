"""The demo agent's plain-HTTP wires share this: one streamed POST read as server-sent events.

Anthropic Messages and Gemini are spoken with httpx (a core dependency) rather than their
optional SDKs, so every dialect the demo agent offers works on a plain ``pip install``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from ..record.dialect import SseParser
from .demo_result import Streamed


async def sse_json(response: httpx.Response) -> AsyncIterator[tuple[str | None, Any]]:
    """Each event of a streamed answer as (event name, parsed data); data that is not JSON is
    given as None."""
    parser = SseParser()
    async for raw in response.aiter_bytes():
        for event in [*parser.feed(raw)]:
            yield event.event, _parsed(event.data)
    for event in parser.close():
        yield event.event, _parsed(event.data)


def _parsed(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None


async def failed_answer(response: httpx.Response, got: Streamed,
                        code_of: Any) -> Streamed:
    """Note an HTTP error answer on ``got``: its status, the replay code ``code_of(body)``
    finds (``HTTP_<status>`` without one) and the body's message."""
    await response.aread()
    try:
        body = response.json()
    except ValueError:
        body = None
    body = as_dict(body)
    error = as_dict(body.get("error"))
    got.status = response.status_code
    got.error_code = code_of(body) or f"HTTP_{response.status_code}"
    got.error_message = str(error.get("message") or response.reason_phrase)
    return got


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (fields read with ``.get``)."""
    return value if isinstance(value, dict) else {}


def compact(value: Any) -> str:
    """Tool arguments as the SDKs hand them over: compact JSON."""
    return json.dumps(value, separators=(",", ":"))
