"""How the recorder reads one wire dialect: its routes, request messages and answer streams.

A dialect turns the upstream's answer back into recorded chunks, exactly as a client of that
wire rebuilds them (SPEC 9): ``rebuilder()`` folds server-sent events as they arrive,
``completion_chunks`` reads a ``stream: false`` answer. ``OPENAI_CHAT`` is SPEC 8.1's
DeepSeek-style client; other dialects plug in by implementing :class:`Dialect`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import UpstreamStreamError

Chunk = dict[str, Any]

_FINISH_BACK = {"stop": "stop", "tool_calls": "tool-calls", "length": "max-tokens"}


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One server-sent event: its ``event:`` name (None when absent) and joined ``data:``."""

    event: str | None
    data: str


class SseParser:
    """Splits an event stream into events as its bytes arrive (any line ending)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, raw: bytes) -> list[SseEvent]:
        """The events completed by ``raw``."""
        self._buffer += raw
        events: list[SseEvent] = []
        while True:
            cut = self._next_line_end()
            if cut is None:
                return events
            end, width = cut
            line = self._buffer[:end].decode("utf-8", errors="replace")
            self._buffer = self._buffer[end + width:]
            if not line:
                if self._data or self._event is not None:
                    events.append(SseEvent(self._event, "\n".join(self._data)))
                self._event, self._data = None, []
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                self._data.append(value)
            elif name == "event":
                self._event = value

    def close(self) -> list[SseEvent]:
        """At the end of the stream: the event a final lone ``\r`` completes, if any (an
        event the stream left unterminated is dropped, as the SSE standard says)."""
        if not self._buffer.endswith(b"\r"):
            return []
        self._buffer += b"\n"
        return self.feed(b"")

    def _next_line_end(self) -> tuple[int, int] | None:
        n = self._buffer.find(b"\n")
        r = self._buffer.find(b"\r")
        if r == -1 and n == -1:
            return None
        if r != -1 and (n == -1 or r < n):
            if r + 1 == len(self._buffer):
                return None  # a "\r\n" may be split across reads
            return (r, 2) if self._buffer[r + 1:r + 2] == b"\n" else (r, 1)
        return n, 1


@dataclass(frozen=True, slots=True)
class RequestMessage:
    """One message of a request, as the turn inference and the log events need it."""

    role: str
    """``user``, ``tool``, ``assistant`` or ``system`` (the dialect maps its own roles)."""
    content: Any
    call_id: str | None = None
    """For a tool result: the tool call it answers."""
    raw: Any = None
    """The message exactly as the request sent it (compared to find the new ones)."""


StreamFailure = UpstreamStreamError
"""What a rebuilder raises for an error event (``message`` and ``code``)."""


class StreamRebuilder(Protocol):
    """Folds one call's answer stream into recorded chunks."""

    ended: bool
    """True once the stream's own end marker arrived (``[DONE]`` for chat completions)."""

    def feed(self, event: SseEvent) -> list[Chunk]:
        """The chunks this event completes; raises :class:`StreamFailure` for an error event."""

    def end(self) -> list[Chunk]:
        """The chunks a client emits at the end marker (block ends, usage, finish)."""


class Dialect(Protocol):
    """A wire the recorder proxies and records."""

    name: str
    routes: tuple[str, ...]
    """The model-call POST paths (without any ``/runs`` or ``/sessions`` prefix)."""

    def wants_stream(self, body: dict[str, Any]) -> bool:
        """Whether the request asks for an event stream."""

    def messages(self, body: dict[str, Any]) -> list[RequestMessage]:
        """The request's conversation, in order."""

    def rebuilder(self) -> StreamRebuilder:
        """A fresh rebuilder for one streamed answer."""

    def completion_chunks(self, body: Any) -> list[Chunk]:
        """The chunks of one non-streaming answer (ValueError when it is not one)."""

    def error_message(self, status: int, body: bytes) -> str:
        """The upstream's error message from an error answer's body."""


def rebuild_events(rebuilder: StreamRebuilder, events: Iterable[SseEvent]) -> list[Chunk]:
    """Feed one whole answer's events to ``rebuilder``: every chunk it rebuilds, the end's too
    (how a non-streaming answer, replayed as its stream, is recorded)."""
    out: list[Chunk] = []
    for event in events:
        out += rebuilder.feed(event)
    return out + rebuilder.end()


def usage_back(wire: dict[str, Any]) -> dict[str, Any]:
    """Recorded usage of chat-completions usage: only the counters the wire carried."""
    prompt = _count(wire.get("prompt_tokens"))
    hit = wire.get("prompt_cache_hit_tokens")
    details = wire.get("prompt_tokens_details")
    if hit is None and isinstance(details, dict):
        hit = details.get("cached_tokens")
    miss = wire.get("prompt_cache_miss_tokens")
    usage: dict[str, Any] = {
        "inputTokens": _count(miss) if miss is not None else prompt - _count(hit),
        "outputTokens": _count(wire.get("completion_tokens")),
    }
    if hit is not None:
        usage["cacheReadTokens"] = _count(hit)
    completion = wire.get("completion_tokens_details")
    if isinstance(completion, dict) and completion.get("reasoning_tokens") is not None:
        usage["reasoningTokens"] = _count(completion["reasoning_tokens"])
    return usage


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def finish_back(reason: str | None) -> dict[str, Any]:
    """A recorded finish reason of a wire ``finish_reason`` (unknown ones are error codes)."""
    if reason is None:
        return {"kind": "stop"}
    kind = _FINISH_BACK.get(reason)
    return {"kind": kind} if kind else {"kind": "error", "failure": {"code": reason.upper()}}


@dataclass(slots=True)
class _Block:
    kind: str
    index: int
    parts: list[str] = field(default_factory=list)
    id: str | None = None
    name: str | None = None

    def whole(self) -> dict[str, Any]:
        text = "".join(self.parts)
        if self.kind == "tool-call":
            return {"type": "tool-call", "id": self.id, "name": self.name, "arguments": text}
        return {"type": self.kind, "text": text}


class ChatRebuilder:
    """SPEC 8.1's DeepSeek-style client: blocks in first-seen order (one reasoning, one text,
    one per tool index); a tool block stamps the last id and name it saw on each of its
    deltas; block ends, usage and finish come at ``[DONE]``."""

    def __init__(self) -> None:
        self.ended = False
        self._blocks: list[_Block] = []
        self._by_kind: dict[str, _Block] = {}
        self._tools: dict[Any, _Block] = {}
        self._usage: dict[str, Any] | None = None
        self._finish: str | None = None

    def _open(self, kind: str, out: list[Chunk]) -> _Block:
        block = _Block(kind, len(self._blocks))
        self._blocks.append(block)
        out.append({"type": "block-start", "index": block.index, "blockType": kind})
        return block

    def feed(self, event: SseEvent) -> list[Chunk]:
        data = event.data.strip()
        if data == "[DONE]":
            self.ended = True
            return []
        try:
            chunk = json.loads(data)
        except ValueError:
            raise StreamFailure(f"the upstream sent an event that is not JSON: {data[:200]!r}",
                                code="INVALID_RESPONSE") from None
        if not isinstance(chunk, dict):
            return []
        if "error" in chunk and not chunk.get("choices"):
            raise stream_error(chunk["error"])
        out: list[Chunk] = []
        if chunk.get("usage"):
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict):
                self._choice(choice, out)
        return out

    def _choice(self, choice: dict[str, Any], out: list[Chunk]) -> None:
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            delta = {}
        if "role" in delta and delta.get("content") == "":
            delta = {k: v for k, v in delta.items() if k not in ("role", "content")}
        for wire_field, kind in (("reasoning_content", "reasoning"), ("content", "text")):
            value = delta.get(wire_field)
            if isinstance(value, str):
                block = self._by_kind.get(kind) or self._open(kind, out)
                self._by_kind[kind] = block
                block.parts.append(value)
                out.append({"type": f"{kind}-delta", "index": block.index, "text": value})
        for call in delta.get("tool_calls") or []:
            if isinstance(call, dict):
                self._tool_delta(call, out)
        if choice.get("finish_reason"):
            self._finish = str(choice["finish_reason"])

    def _tool_delta(self, call: dict[str, Any], out: list[Chunk]) -> None:
        key = call.get("index")
        block = self._tools.get(key)
        if block is None:
            block = self._tools[key] = self._open("tool-call", out)
        function = call.get("function") or {}
        if isinstance(call.get("id"), str):
            block.id = call["id"]
        if isinstance(function.get("name"), str):
            block.name = function["name"]
        rebuilt: Chunk = {"type": "tool-call-delta", "index": block.index, "id": block.id}
        if block.name is not None:
            rebuilt["name"] = block.name
        arguments = function.get("arguments")
        arguments = arguments if isinstance(arguments, str) else ""
        block.parts.append(arguments)
        rebuilt["argumentsDelta"] = arguments
        out.append(rebuilt)

    def end(self) -> list[Chunk]:
        out: list[Chunk] = [{"type": "block-end", "index": b.index, "block": b.whole()}
                            for b in self._blocks]
        if isinstance(self._usage, dict):
            out.append({"type": "usage", "usage": usage_back(self._usage)})
        out.append({"type": "finish", "reason": finish_back(self._finish)})
        return out


def stream_error(error: object) -> StreamFailure:
    """The failure an in-stream ``{"error": {...}}`` event reports (code SERVER when unnamed)."""
    if not isinstance(error, dict):
        return StreamFailure(str(error))
    message = error.get("message")
    code = error.get("code")
    return StreamFailure(message if isinstance(message, str) and message else "stream error",
                         code=code if isinstance(code, str) and code else None)


class OpenAIChat:
    """The OpenAI / DeepSeek chat-completions wire (SPEC 8.1)."""

    name: str = "openai-chat"
    routes: tuple[str, ...] = ("/v1/chat/completions",)

    def wants_stream(self, body: dict[str, Any]) -> bool:
        return body.get("stream") is True

    def messages(self, body: dict[str, Any]) -> list[RequestMessage]:
        found = body.get("messages")
        out: list[RequestMessage] = []
        for message in found if isinstance(found, list) else []:
            if not isinstance(message, dict):
                continue
            role = str(message.get("role", ""))
            role = "system" if role == "developer" else role
            call_id = message.get("tool_call_id")
            out.append(RequestMessage(role, message.get("content"),
                                      call_id if isinstance(call_id, str) else None, message))
        return out

    def rebuilder(self) -> ChatRebuilder:
        return ChatRebuilder()

    def completion_chunks(self, body: Any) -> list[Chunk]:
        """One block per content kind, each with one delta, as a one-event stream rebuilds."""
        if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
            raise ValueError("not a chat.completion")
        rebuilder = ChatRebuilder()
        out: list[Chunk] = []
        choice = body["choices"][0] if body["choices"] else {}
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict):
            delta: dict[str, Any] = {k: message.get(k) for k in ("reasoning_content", "content")}
            calls = message.get("tool_calls")
            delta["tool_calls"] = [
                {"index": k, "id": c.get("id"), "function": c.get("function") or {}}
                for k, c in enumerate(calls if isinstance(calls, list) else [])
                if isinstance(c, dict)]
            wire_choice = {"delta": delta, "finish_reason": choice.get("finish_reason")}
            rebuilder._choice(wire_choice, out)
        if isinstance(body.get("usage"), dict):
            rebuilder._usage = body["usage"]
        return out + rebuilder.end()

    def error_message(self, status: int, body: bytes) -> str:
        return upstream_error_message(status, body)


def upstream_error_message(status: int, body: bytes) -> str:
    """The message of an error answer: ``error.message`` (OpenAI's and Anthropic's shapes),
    a bare ``error`` or ``message`` string, else the body's text."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(parsed.get("message"), str):
            return str(parsed["message"])
    return text[:500] if text else f"HTTP {status}"


OPENAI_CHAT = OpenAIChat()
"""The chat-completions dialect."""

from .messages import ANTHROPIC_MESSAGES  # noqa: E402  (built on the names above)
from .responses import OPENAI_RESPONSES  # noqa: E402

DIALECTS: tuple[Dialect, ...] = (OPENAI_CHAT, ANTHROPIC_MESSAGES, OPENAI_RESPONSES)
"""Every dialect the recorder serves."""
