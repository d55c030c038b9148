"""The native NDJSON route, ``POST /replay/v1/stream`` (docs/format.md#wire-native): the recorded chunks
exactly.

One recorded chunk per line as loaded (lossless: what no provider wire can carry, such as
``replayState`` or an error finish's message, arrives here; only a usage counter recorded as
an integral float goes out as the integer it is, ``12.0`` as ``12``, as on every wire), then
for a failure one ``{"type":"error","message","code"}`` line. It always streams, and a failure
before the first chunk is an error line too, not an HTTP error; binding errors still answer 409
JSON.
"""

from __future__ import annotations

from typing import Any

from ..jsonnumbers import as_safe_integer
from ..models import AnyEntry
from .dialect import CallRequest, Dialect, openai_error_body
from .jsonbytes import encode as encode_json

_encode = encode_json


def integer_counters(chunk: dict[str, Any]) -> dict[str, Any]:
    """A usage chunk with its integral float counters as ints (docs/format.md#edge-cases: ``12.0`` is 12); any
    other chunk, and every other value, as is."""
    usage = chunk.get("usage")
    if chunk.get("type") != "usage" or not isinstance(usage, dict) or not any(
            isinstance(v, float) for v in usage.values()):
        return chunk
    fixed = {k: (number if isinstance(v, float) and (number := as_safe_integer(v)) is not None
                 else v) for k, v in usage.items()}
    return {**chunk, "usage": fixed}


class NdjsonEncoder:
    """``application/x-ndjson``: one recorded chunk per line, exactly as loaded."""

    def opening(self) -> bytes:
        return b""

    def encode(self, chunk: dict[str, Any]) -> bytes | None:
        if chunk.get("type") == "usage":
            chunk = integer_counters(chunk)
        return _encode(chunk) + b"\n"

    def close(self) -> bytes:
        return b""

    def fail(self, message: str, code: str) -> bytes:
        return _encode({"type": "error", "message": message, "code": code}) + b"\n"


class NativeDialect(Dialect):
    """``POST /replay/v1/stream``: body ``{"sessionId"?, "messages"?, "model"?}``."""

    name = "native"
    routes = ("/replay/v1/stream",)
    media_type = b"application/x-ndjson"
    session_in_body = True
    errors_as_status = False

    def request(self, body: dict[str, Any]) -> CallRequest:
        model = body.get("model")
        return CallRequest(model if isinstance(model, str) else None, True, self.corpus(body))

    def encoder(self, call: CallRequest, entry: AnyEntry) -> NdjsonEncoder:
        return NdjsonEncoder()

    def error_body(self, message: str, code: str, status: int, *, refused: bool = False
                   ) -> dict[str, Any]:
        return openai_error_body(message, code, refused=refused)
