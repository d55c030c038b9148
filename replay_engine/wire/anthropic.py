"""Recorded chunks on the Anthropic Messages wire, ``POST /v1/messages`` (docs/format.md#wire-anthropic), and
``MessagesDialect``, which puts it behind the server's dialect seam.

``MessagesStreamEncoder`` turns one call's chunks into ``event: <type>`` SSE events (it is
given the entry's chunks when the call binds, so ``message_start`` states the recorded usage
and each ``tool_use`` block opens with its id and name); ``MessageAssembler`` builds the
``stream: false`` ``Message``. Errors have Anthropic's shape; an error finish streams
``event: error`` and fails a non-streaming call. Where the wire cannot carry a call exactly:
``stream: false`` sends a tool call's arguments parsed as ``input``, so arguments that are not a
JSON object fail the call with a 500 naming it, except in a max-tokens call, whose cut
arguments become ``input: {}`` as the SDKs' stream accumulators make them.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from ..errors import ScriptedFailure
from ..jsonnumbers import count
from ..models import AnyEntry
from .blocks import (
    Block,
    BlockWalker,
    SignatureCollector,
    cut_short,
    entry_chunks,
    reasoning_signature,
    tool_arguments,
)
from .dialect import CallRequest, Dialect, failure_of, status_for_code
from .jsonbytes import encode as encode_json

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


def error_type(status: int) -> str:
    """The Anthropic error ``type`` of an HTTP status."""
    return ERROR_TYPES.get(status, "api_error")


def _sse(event: bytes, data: bytes) -> bytes:
    return b"event: " + event + b"\ndata: " + data + b"\n\n"


def error_event(message: str, code: str) -> bytes:
    """The ``event: error`` that ends a stream failing after its first byte."""
    return _sse(b"error", _encode(MessagesDialect.body(message, code, status_for_code(code))))


def stop_reason(reason: dict[str, Any] | None) -> str:
    """Anthropic ``stop_reason`` of a recorded non-error finish (unknown kinds end the turn)."""
    kind = reason.get("kind") if reason is not None else None
    return STOP_REASONS.get(kind, "end_turn") if isinstance(kind, str) else "end_turn"


def usage_to_wire(usage: dict[str, Any] | None, *, output: bool = True) -> dict[str, Any]:
    """Anthropic usage of a recorded usage, cumulative: ``input_tokens``,
    ``cache_read_input_tokens`` (when recorded) and ``output_tokens`` (0 when ``output`` is
    False, as ``message_start`` states it before any output)."""
    usage = usage or {}
    wire: dict[str, Any] = {"input_tokens": count(usage.get("inputTokens"))}
    if "cacheReadTokens" in usage:
        wire["cache_read_input_tokens"] = count(usage.get("cacheReadTokens"))
    wire["output_tokens"] = count(usage.get("outputTokens")) if output else 0
    return wire


def new_message_id() -> str:
    """A fresh ``msg_...`` id."""
    return "msg_" + uuid.uuid4().hex[:24]


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
        signature = reasoning_signature(block, whole)
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
        """``message_delta`` with the stop reason and the cumulative usage (the input counters
        repeated: some clients read streamed usage only from here)."""
        self._delta_sent = True
        return _sse(b"message_delta", _encode(
            {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
             "usage": usage_to_wire(self.usage)}))

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


class MessageAssembler(SignatureCollector):
    """Builds the ``stream: false`` ``Message`` from a call's chunks."""

    def add(self, chunk: dict[str, Any]) -> None:
        """Fold one recorded chunk into the answer."""
        self.feed(chunk)

    def result(self, model: str, *, message_id: str | None = None,
               call: str = "this call") -> dict[str, Any]:
        """The assembled ``Message``; ``call`` names the call in errors.

        Raises ``ScriptedFailure`` for a recorded error finish and
        ``UnrepresentableCallError`` when tool arguments are not a JSON object (outside a
        max-tokens call, whose cut arguments are ``{}``).
        """
        if self.reason is not None and self.reason.get("kind") == "error":
            raise ScriptedFailure(*failure_of(self.reason))
        cut = cut_short(self.reason)
        content: list[dict[str, Any]] = []
        for block in self.blocks:
            if block.kind == "text":
                content.append({"type": "text", "text": block.content})
            elif block.kind == "reasoning":
                content.append({"type": "thinking", "thinking": block.content,
                                "signature": self.signatures.get(block.ordinal, "")})
            else:
                content.append({"type": "tool_use", "id": block.call_id or "",
                                "name": block.name or "", "input": tool_arguments(
                                    block, cut=cut, call=call,
                                    carried_as="the Messages wire's tool_use input")})
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
                           self.corpus(body))

    def encoder(self, call: CallRequest, entry: AnyEntry) -> MessagesStreamEncoder:
        return MessagesStreamEncoder(str(call.model), entry_chunks(entry))

    def assembler(self, call: CallRequest) -> MessageAssembler:
        return MessageAssembler()

    def answer(self, assembler: Any, call: CallRequest, label: str) -> dict[str, Any]:
        done: MessageAssembler = assembler
        return done.result(str(call.model), call=label)

    @staticmethod
    def body(message: str, code: str, status: int) -> dict[str, Any]:
        """Anthropic's error shape for ``status``, with the replay code beside it."""
        return {"type": "error", "error": {"type": error_type(status), "message": message},
                "code": code}

    def error_body(self, message: str, code: str, status: int, *, refused: bool = False
                   ) -> dict[str, Any]:
        return self.body(message, code, status)

