"""Recorded chunks on the Anthropic Messages wire, ``POST /v1/messages`` (SPEC 8.4), and
``MessagesDialect``, which puts it behind the server's dialect seam.

``MessagesStreamEncoder`` turns one call's chunks into ``event: <type>`` SSE events (it is
given the entry's chunks when the call binds, so ``message_start`` states the recorded usage
and each ``tool_use`` block opens with its id and name); ``MessageAssembler`` builds the
``stream: false`` ``Message``. Errors have Anthropic's shape; an error finish streams
``event: error`` and fails a non-streaming call, and tool arguments that are not a JSON object
fail it with a 500 naming the call.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from ..errors import ScriptedFailure, UnrepresentableCallError
from ..jsonnumbers import count
from ..models import AnyEntry
from .blocks import Block, BlockWalker, entry_chunks
from .dialect import CallRequest, Dialect, status_for_code
from .jsonbytes import encode as encode_json

STREAM_MEDIA_TYPE = b"text/event-stream; charset=utf-8"
STOP_REASONS = {"stop": "end_turn", "tool-calls": "tool_use", "max-tokens": "max_tokens"}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
"""Anthropic error ``type`` by HTTP status; every other status is ``api_error``."""

_encode = encode_json


def error_status(code: str) -> int:
    """The HTTP status of a failure code (the chat-completions table of SPEC 8.1)."""
    return status_for_code(code)


def error_type(status: int) -> str:
    """The Anthropic error ``type`` of an HTTP status."""
    return ERROR_TYPES.get(status, "api_error")


def error_body(message: str, code: str) -> dict[str, Any]:
    """Anthropic's error shape, with the replay code beside it."""
    return {"type": "error", "error": {"type": error_type(error_status(code)), "message": message},
            "code": code}


def _sse(event: bytes, data: bytes) -> bytes:
    return b"event: " + event + b"\ndata: " + data + b"\n\n"


def error_event(message: str, code: str) -> bytes:
    """The ``event: error`` that ends a stream failing after its first byte."""
    return _sse(b"error", _encode(error_body(message, code)))


def request_corpus(body: dict[str, Any]) -> dict[str, Any]:
    """What ``{{fromRequest}}`` searches in a Messages request: ``system``, then ``messages``."""
    return {"system": body.get("system"), "messages": body.get("messages")}


def stop_reason(reason: dict[str, Any] | None) -> str:
    """Anthropic ``stop_reason`` of a recorded non-error finish (unknown kinds end the turn)."""
    kind = reason.get("kind") if reason is not None else None
    return STOP_REASONS.get(kind, "end_turn") if isinstance(kind, str) else "end_turn"


def failure_of(reason: dict[str, Any]) -> tuple[str, str]:
    """Message and code of a recorded error finish."""
    failure = reason.get("failure")
    failure = failure if isinstance(failure, dict) else reason
    code = failure.get("code")
    message = failure.get("message")
    return (message if isinstance(message, str) and message else "the recorded call failed",
            code if isinstance(code, str) and code else "ERROR")


def usage_to_wire(usage: dict[str, Any] | None, *, output: bool = True) -> dict[str, Any]:
    """Anthropic usage of a recorded usage (``output_tokens`` 0 when ``output`` is False)."""
    usage = usage or {}
    wire: dict[str, Any] = {
        "input_tokens": count(usage.get("inputTokens")),
        "output_tokens": count(usage.get("outputTokens")) if output else 0,
    }
    if "cacheReadTokens" in usage:
        wire["cache_read_input_tokens"] = count(usage.get("cacheReadTokens"))
    return wire


def new_message_id() -> str:
    """A fresh ``msg_...`` id."""
    return "msg_" + uuid.uuid4().hex[:24]


def _signature(whole: dict[str, Any] | None) -> str | None:
    if whole is None:
        return None
    signature = whole.get("signature")
    return signature if isinstance(signature, str) and signature else None


_DELTA_TYPES = {"text": (b"text_delta", b"text"), "reasoning": (b"thinking_delta", b"thinking"),
                "tool-call": (b"input_json_delta", b"partial_json")}


class MessagesStreamEncoder(BlockWalker):
    """Encodes one call's recorded chunks as Messages SSE events."""

    keep_parts = False

    def __init__(self, model: str, chunks: Sequence[dict[str, Any]] = (), *,
                 message_id: str | None = None) -> None:
        super().__init__(chunks)
        self.model = model
        self.message_id = message_id or new_message_id()
        self._failed = False
        self._delta_sent = False

    def opening(self) -> bytes:
        """``message_start``, sent as soon as the call is bound."""
        message: dict[str, Any] = {
            "id": self.message_id, "type": "message", "role": "assistant", "model": self.model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": usage_to_wire(self.usage, output=False)}
        return _sse(b"message_start", _encode({"type": "message_start", "message": message}))

    def encode(self, chunk: dict[str, Any]) -> bytes | None:
        """The SSE event(s) of one recorded chunk, or None when it maps to nothing."""
        if self._failed:
            return None
        return self.feed(chunk) or None

    def on_start(self, block: Block) -> bytes:
        if block.kind == "text":
            content: dict[str, Any] = {"type": "text", "text": ""}
        elif block.kind == "reasoning":
            content = {"type": "thinking", "thinking": "", "signature": ""}
        else:
            content = {"type": "tool_use", "id": block.call_id or "", "name": block.name or "",
                       "input": {}}
        kind, field = _DELTA_TYPES[block.kind]
        block.wire = (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":'
                      + str(block.ordinal).encode() + b',"delta":{"type":"' + kind + b'","'
                      + field + b'":')
        return _sse(b"content_block_start", _encode(
            {"type": "content_block_start", "index": block.ordinal, "content_block": content}))

    def on_delta(self, block: Block, text: str) -> bytes:
        return b"".join((block.wire, _encode(text), b"}}\n\n"))

    def on_end(self, block: Block, whole: dict[str, Any] | None) -> bytes:
        out = b""
        signature = _signature(whole) if block.kind == "reasoning" else None
        if signature is not None:
            out = _sse(b"content_block_delta", _encode(
                {"type": "content_block_delta", "index": block.ordinal,
                 "delta": {"type": "signature_delta", "signature": signature}}))
        return out + _sse(b"content_block_stop",
                          b'{"type":"content_block_stop","index":' + str(block.ordinal).encode() + b"}")

    def on_finish(self, reason: dict[str, Any]) -> bytes:
        if reason.get("kind") == "error":
            self._failed = True
            return error_event(*failure_of(reason))
        return self._message_delta(stop_reason(reason))

    def _message_delta(self, reason: str) -> bytes:
        self._delta_sent = True
        return _sse(b"message_delta", _encode(
            {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
             "usage": {"output_tokens": count((self.usage or {}).get("outputTokens"))}}))

    def close(self) -> bytes:
        """What ends a completed stream: ``message_stop`` (nothing after an error finish)."""
        if self._failed:
            return b""
        out = b""
        if not self._delta_sent:
            out = self.close_open() + self._message_delta("end_turn")
        return out + _sse(b"message_stop", b'{"type":"message_stop"}')

    def fail(self, message: str, code: str) -> bytes:
        """The ``event: error`` of a failure after the first byte (the stream then closes)."""
        self._failed = True
        return error_event(message, code)


def _tool_input(block: Block, call: str) -> Any:
    arguments = block.content
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    shown = arguments if len(arguments) <= 80 else arguments[:77] + "..."
    raise UnrepresentableCallError(
        f"{call}: tool call {block.call_id!r} ({block.name}) has arguments that are not a JSON "
        f"object ({shown!r}), so the Messages wire cannot carry them as tool_use input; "
        "the native route POST /replay/v1/stream serves this call unchanged")


class MessageAssembler(BlockWalker):
    """Builds the ``stream: false`` ``Message`` from a call's chunks."""

    def __init__(self) -> None:
        super().__init__()
        self._signatures: dict[int, str] = {}

    def add(self, chunk: dict[str, Any]) -> None:
        """Fold one recorded chunk into the answer."""
        self.feed(chunk)

    def on_end(self, block: Block, whole: dict[str, Any] | None) -> bytes:
        signature = _signature(whole) if block.kind == "reasoning" else None
        if signature is not None:
            self._signatures[block.ordinal] = signature
        return b""

    def result(self, model: str, *, message_id: str | None = None,
               call: str = "this call") -> dict[str, Any]:
        """The assembled ``Message``; ``call`` names the call in errors.

        Raises ``ScriptedFailure`` for a recorded error finish and
        ``UnrepresentableCallError`` when tool arguments are not a JSON object.
        """
        if self.reason is not None and self.reason.get("kind") == "error":
            message, code = failure_of(self.reason)
            raise ScriptedFailure(message, code)
        content: list[dict[str, Any]] = []
        for block in self.blocks:
            if block.kind == "text":
                content.append({"type": "text", "text": block.content})
            elif block.kind == "reasoning":
                content.append({"type": "thinking", "thinking": block.content,
                                "signature": self._signatures.get(block.ordinal, "")})
            else:
                content.append({"type": "tool_use", "id": block.call_id or "",
                                "name": block.name or "", "input": _tool_input(block, call)})
        return {"id": message_id or new_message_id(), "type": "message", "role": "assistant",
                "model": model, "content": content, "stop_reason": stop_reason(self.reason),
                "stop_sequence": None, "usage": usage_to_wire(self.usage)}


class MessagesDialect(Dialect):
    """``POST /v1/messages``: the Anthropic Messages API, streamed or not."""

    name = "anthropic"
    routes = ("/v1/messages",)

    def request(self, body: dict[str, Any]) -> CallRequest:
        model = body.get("model")
        return CallRequest(model if isinstance(model, str) else "replay", body.get("stream") is True,
                           request_corpus(body))

    def encoder(self, call: CallRequest, entry: AnyEntry) -> MessagesStreamEncoder:
        return MessagesStreamEncoder(str(call.model), entry_chunks(entry))

    def assembler(self, call: CallRequest) -> MessageAssembler:
        return MessageAssembler()

    def answer(self, assembler: Any, call: CallRequest, label: str) -> dict[str, Any]:
        done: MessageAssembler = assembler
        return done.result(str(call.model), call=label)

    def error_body(self, message: str, code: str, status: int, *, refused: bool = False
                   ) -> dict[str, Any]:
        return {"type": "error", "error": {"type": error_type(status), "message": message},
                "code": code}

