"""The recorder's Anthropic Messages dialect, ``POST /v1/messages`` (docs/format.md#wire-anthropic read
backwards).

The Messages wire frames every block, so the rebuilt chunks follow it event for event:
``content_block_start`` opens a block (``block-start``; text, thinking and tool_use blocks,
numbered 0, 1, … in opening order; other block types are left out), each delta is one
``text-delta`` / ``reasoning-delta`` / ``tool-call-delta`` (stamped with the block's id and
name), a ``signature_delta`` goes on the reasoning block's ``block-end`` and
``content_block_stop`` is the ``block-end``. At ``message_stop`` come the usage (the wire
always states it: input and output tokens, cache reads when the upstream sent them) and the
finish of ``message_delta``'s ``stop_reason``.

Producible calls (what a recording served on this wire rebuilds exactly): every block opens
with a ``block-start`` and closes with a ``block-end`` holding its concatenated deltas (a
reasoning block may add a ``signature``), its indices are 0, 1, … in opening order, a block
whose content is not empty has at least one delta, tool deltas carry their block's id and
name, then a usage of ``inputTokens`` / ``outputTokens`` (/ ``cacheReadTokens``) and a stop,
tool-calls or max-tokens finish. Blocks may interleave. ``reasoningTokens`` has no place on
this wire, and an error finish or throw is recorded as the failure the stream reports.
"""

from __future__ import annotations

import json
from typing import Any

from ..jsonnumbers import as_safe_integer
from .dialect import (
    Block,
    Chunk,
    RequestMessage,
    SseEvent,
    StreamFailure,
    conversation_of,
    impossible_usage,
    key_of,
    malformed,
    of_type,
    rebuild_events,
    upstream_error_message,
    upstream_json,
)

_KINDS = {"text": "text", "thinking": "reasoning", "tool_use": "tool-call"}
_DELTAS = {"text_delta": ("text", "text"), "thinking_delta": ("reasoning", "thinking"),
           "input_json_delta": ("tool-call", "partial_json")}
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool-calls",
           "max_tokens": "max-tokens", "model_context_window_exceeded": "max-tokens"}
_ERROR_CODES = {"authentication_error": "AUTH", "permission_error": "HTTP_403",
                "not_found_error": "HTTP_404", "rate_limit_error": "RATE_LIMIT",
                "invalid_request_error": "INVALID_REQUEST", "request_too_large": "HTTP_413",
                "overloaded_error": "HTTP_529", "api_error": "SERVER"}
"""Failure codes of Anthropic error types (an error event without a ``code`` of its own)."""


def stream_failure(data: object) -> StreamFailure:
    """The failure an ``event: error`` reports (its ``code``, else one of its error type)."""
    if not isinstance(data, dict):
        return StreamFailure("the upstream's stream reported an error")
    error = data.get("error")
    error = error if isinstance(error, dict) else {}
    message = error.get("message")
    code = data.get("code")
    if not (isinstance(code, str) and code):
        kind = error.get("type")
        code = _ERROR_CODES.get(kind, "SERVER") if isinstance(kind, str) else "SERVER"
    return StreamFailure(message if isinstance(message, str) and message else "stream error",
                         code=code)


class MessagesRebuilder:
    """Folds one Messages event stream into recorded chunks, block by block."""

    def __init__(self) -> None:
        self.ended = False
        self._blocks: list[Block] = []
        self._open: dict[Any, Block] = {}
        self._skipped: set[Any] = set()
        self._usage: dict[str, Any] = {}
        self._impossible = False
        """A usage counter was no token count: the call's usage is recorded as absent."""
        self._stop: str | None = None

    def feed(self, event: SseEvent) -> list[Chunk]:
        if not event.data.strip():
            return []
        data = upstream_json(event.data)
        if not isinstance(data, dict):
            raise malformed("an event", data)
        kind = data.get("type", event.event)
        if kind == "error" or event.event == "error":
            raise stream_failure(data)
        if kind == "message_start":
            message = of_type(data.get("message"), dict, "a message_start's message")
            if message is not None:
                self._take_usage(message.get("usage"))
        elif kind == "content_block_start":
            return self._start(key_of(data.get("index")),
                               of_type(data.get("content_block"), dict, "a content_block"))
        elif kind == "content_block_delta":
            return self._delta(key_of(data.get("index")),
                               of_type(data.get("delta"), dict, "a content_block_delta's delta"))
        elif kind == "content_block_stop":
            return self._stop_block(key_of(data.get("index")))
        elif kind == "message_delta":
            delta = of_type(data.get("delta"), dict, "a message_delta's delta") or {}
            stop = of_type(delta.get("stop_reason"), str, "a message_delta's stop_reason")
            if stop is not None:
                self._stop = stop
            self._take_usage(data.get("usage"))
        elif kind == "message_stop":
            self.ended = True
        return []

    def _take_usage(self, usage: object) -> None:
        if not isinstance(usage, dict):
            return
        if impossible_usage(usage, ("input_tokens", "output_tokens", "cache_read_input_tokens")):
            self._impossible = True
        for wire, name in (("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"),
                           ("cache_read_input_tokens", "cacheReadTokens")):
            value = as_safe_integer(usage.get(wire))
            if value is not None:
                self._usage[name] = value

    def _start(self, index: Any, content: dict[str, Any] | None) -> list[Chunk]:
        content = content or {}
        kind = _KINDS.get(of_type(content.get("type"), str, "a content_block's type"))
        if kind is None:
            self._skipped.add(index)
            return []
        block = Block(kind, len(self._blocks))
        if kind == "tool-call":
            block.id = of_type(content.get("id"), str, "a tool_use block's id")
            block.name = of_type(content.get("name"), str, "a tool_use block's name")
            given = content.get("input")
            if given not in (None, {}):
                block.preset = json.dumps(given, ensure_ascii=False, separators=(",", ":"))
        else:
            field = "thinking" if kind == "reasoning" else "text"
            block.preset = of_type(content.get(field), str, f"a {field} block's {field}") or ""
            block.signature = of_type(content.get("signature"), str,
                                      "a thinking block's signature") or ""
        self._blocks.append(block)
        self._open[index] = block
        return [{"type": "block-start", "index": block.index, "blockType": kind}]

    def _delta(self, index: Any, delta: dict[str, Any] | None) -> list[Chunk]:
        block = self._open.get(index)
        if block is None or delta is None:
            return []
        kind = of_type(delta.get("type"), str, "a delta's type")
        if kind == "signature_delta":
            block.signature += of_type(delta.get("signature"), str, "a signature_delta") or ""
            return []
        wanted = _DELTAS.get(str(kind))
        if wanted is None or wanted[0] != block.kind:
            return []
        text = of_type(delta.get(wanted[1]), str, f"a {kind}'s {wanted[1]}") or ""
        block.parts.append(text)
        if block.kind == "tool-call":
            chunk: Chunk = {"type": "tool-call-delta", "index": block.index, "id": block.id}
            if block.name is not None:
                chunk["name"] = block.name
            chunk["argumentsDelta"] = text
            return [chunk]
        return [{"type": f"{block.kind}-delta", "index": block.index, "text": text}]

    def _stop_block(self, index: Any) -> list[Chunk]:
        if index in self._skipped:
            self._skipped.discard(index)
            return []
        block = self._open.pop(index, None)
        if block is None:
            return []
        return [{"type": "block-end", "index": block.index, "block": block.whole()}]

    def end(self) -> list[Chunk]:
        out: list[Chunk] = []
        for index in list(self._open):
            out += self._stop_block(index)
        if self._usage and not self._impossible:
            usage = {"inputTokens": self._usage.get("inputTokens", 0),
                     "outputTokens": self._usage.get("outputTokens", 0)}
            if "cacheReadTokens" in self._usage:
                usage["cacheReadTokens"] = self._usage["cacheReadTokens"]
            out.append({"type": "usage", "usage": usage})
        out.append({"type": "finish", "reason": finish_back(self._stop)})
        return out


def finish_back(stop_reason: str | None) -> dict[str, Any]:
    """The recorded finish of a ``stop_reason`` (others, e.g. ``refusal``, stop and keep it)."""
    if stop_reason is None:
        return {"kind": "stop"}
    kind = _FINISH.get(stop_reason)
    return {"kind": kind} if kind else {"kind": "stop", "stopReason": stop_reason}


def _events_of_message(message: dict[str, Any]) -> list[SseEvent]:
    """The event stream that carries one whole ``Message`` (its blocks as one delta each)."""
    def event(data: dict[str, Any]) -> SseEvent:
        return SseEvent(str(data["type"]), json.dumps(data))

    out = [event({"type": "message_start", "message": {"usage": message.get("usage")}})]
    content = of_type(message.get("content"), list, "a message's content") or []
    for k, block in enumerate(content):
        if not isinstance(block, dict):
            raise malformed("a message's content block", block)
        kind = of_type(block.get("type"), str, "a content block's type")
        start: dict[str, Any] = {"type": kind}
        delta: dict[str, Any] | None = None
        if kind == "tool_use":
            start.update(id=block.get("id"), name=block.get("name"), input={})
            given = block.get("input")
            if given not in (None, {}):
                delta = {"type": "input_json_delta",
                         "partial_json": json.dumps(given, ensure_ascii=False, separators=(",", ":"))}
        elif kind in ("text", "thinking"):
            text = of_type(block.get(kind), str, f"a {kind} block's {kind}")
            if text:
                delta = {"type": f"{kind}_delta", kind: text}
        out.append(event({"type": "content_block_start", "index": k, "content_block": start}))
        if delta is not None:
            out.append(event({"type": "content_block_delta", "index": k, "delta": delta}))
        signature = block.get("signature")
        if kind == "thinking" and of_type(signature, str, "a thinking block's signature"):
            out.append(event({"type": "content_block_delta", "index": k,
                              "delta": {"type": "signature_delta", "signature": signature}}))
        out.append(event({"type": "content_block_stop", "index": k}))
    out.append(event({"type": "message_delta", "delta": {"stop_reason": message.get("stop_reason")},
                      "usage": {}}))
    out.append(event({"type": "message_stop"}))
    return out


class AnthropicMessages:
    """The Anthropic Messages wire (docs/format.md#wire-anthropic)."""

    name: str = "anthropic"
    routes: tuple[str, ...] = ("/v1/messages",)

    def messages(self, body: dict[str, Any]) -> list[RequestMessage]:
        """The request's conversation as the Messages request reading has it."""
        return conversation_of(self.name, body)

    def rebuilder(self) -> MessagesRebuilder:
        return MessagesRebuilder()

    def completion_chunks(self, body: Any) -> list[Chunk]:
        """The chunks the same ``Message`` streamed with one delta per block rebuilds to."""
        if not isinstance(body, dict) or body.get("type") != "message":
            raise ValueError("not a Message")
        return rebuild_events(MessagesRebuilder(), _events_of_message(body))

    def error_message(self, status: int, body: bytes) -> str:
        return upstream_error_message(status, body)


ANTHROPIC_MESSAGES = AnthropicMessages()
"""The Messages dialect."""
