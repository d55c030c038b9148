"""The seam between the recorder and a wire dialect: what one dialect must say to be recorded.

A :class:`RecordDialect` names its model-call routes, reads a request's conversation
(:class:`RequestMessage` per message, as ``replay_engine.requests`` reads the dialect's
requests for every reader: what a recording writes as a call's context is what a replay
compares a live request with) and turns the upstream's answer back into recorded
chunks exactly as a client of that wire rebuilds them (docs/format.md#recording): ``rebuilder()`` folds
server-sent events as they arrive, ``completion_chunks`` reads a ``stream: false`` answer.
One sibling module per dialect (``openai_chat``, ``anthropic``, ``responses``, ``gemini``)
mirrors ``replay_engine/wire``; ``dialects`` lists them. The proxy knows none of their formats;
the rebuilders share :class:`Block` and the helpers below.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import UpstreamStreamError
from ..jsonlimits import DEPTH_PROBLEM, too_deep
from ..jsonnumbers import as_safe_integer
from ..requests import READERS
from ..requests import RequestMessage as RequestMessage

Chunk = dict[str, Any]
INVALID_RESPONSE = "INVALID_RESPONSE"
"""Failure code of a call whose upstream answer the recorder cannot read as its wire's."""
EXCERPT = 200
"""Characters of an unreadable event a failure message quotes."""

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
        """The events completed by ``raw`` (lines are read in place: one copy per feed)."""
        self._buffer += raw
        events: list[SseEvent] = []
        at = 0
        while True:
            cut = self._next_line_end(at)
            if cut is None:
                self._buffer = self._buffer[at:]
                return events
            end, width = cut
            line = self._buffer[at:end].decode("utf-8", errors="replace")
            at = end + width
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

    @property
    def pending(self) -> int:
        """Bytes of an unfinished line held back (an upstream never ending one is cut off)."""
        return len(self._buffer) + sum(len(d) for d in self._data)

    def close(self) -> list[SseEvent]:
        """At the end of the stream: the event a final lone ``\r`` completes, if any (an
        event the stream left unterminated is dropped, as the SSE standard says)."""
        if not self._buffer.endswith(b"\r"):
            return []
        self._buffer += b"\n"
        return self.feed(b"")

    def _next_line_end(self, at: int) -> tuple[int, int] | None:
        n = self._buffer.find(b"\n", at)
        r = self._buffer.find(b"\r", at, n if n != -1 else len(self._buffer))
        if r == -1 and n == -1:
            return None
        if r != -1:
            if r + 1 == len(self._buffer):
                return None  # a "\r\n" may be split across reads
            return (r, 2) if self._buffer[r + 1:r + 2] == b"\n" else (r, 1)
        return n, 1


@dataclass(slots=True)
class Block:
    """One content block a rebuilder assembles: the pieces its deltas added, and what names it
    (a tool call's id and name, a reasoning block's signature)."""

    kind: str
    """``text``, ``reasoning`` or ``tool-call``."""
    index: int
    parts: list[str] = field(default_factory=list)
    id: str | None = None
    name: str | None = None
    signature: str = ""
    preset: str = ""
    """Content the answer gave the block whole (a non-streamed answer, a block's start), used
    when no delta followed."""

    def whole(self) -> dict[str, Any]:
        """The block as its ``block-end`` chunk carries it (a reasoning block with its
        signature, when it has one)."""
        text = "".join(self.parts) if self.parts else self.preset
        if self.kind == "tool-call":
            return {"type": "tool-call", "id": self.id, "name": self.name, "arguments": text}
        block: dict[str, Any] = {"type": self.kind, "text": text}
        if self.kind == "reasoning" and self.signature:
            block["signature"] = self.signature
        return block


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


class RecordDialect(Protocol):
    """A wire the recorder proxies and records."""

    name: str
    routes: tuple[str, ...]
    """The model-call POST paths (without any ``/runs`` or ``/sessions`` prefix)."""

    def messages(self, body: dict[str, Any]) -> list[RequestMessage]:
        """The request's conversation, in order."""

    def rebuilder(self) -> StreamRebuilder:
        """A fresh rebuilder for one streamed answer."""

    def completion_chunks(self, body: Any) -> list[Chunk]:
        """The chunks of one non-streaming answer (ValueError when it is not one)."""

    def error_message(self, status: int, body: bytes) -> str:
        """The upstream's error message from an error answer's body."""


def conversation_of(dialect: str, body: dict[str, Any]) -> list[RequestMessage]:
    """A request body's conversation as the dialect's request reading has it."""
    reader = READERS[dialect]
    return reader.conversation(reader.corpus(body))


def upstream_json(text: str | bytes) -> Any:
    """One JSON document of the upstream's answer; StreamFailure (INVALID_RESPONSE) when it is
    not JSON or nests deeper than every reader of this project goes."""
    if too_deep(text):
        raise StreamFailure(f"the upstream sent JSON {DEPTH_PROBLEM}", code=INVALID_RESPONSE)
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        shown = text[:EXCERPT] if isinstance(text, str) else text[:EXCERPT].decode(
            "utf-8", errors="replace")
        raise StreamFailure(f"the upstream sent an event that is not JSON: {shown!r}",
                            code=INVALID_RESPONSE) from None


def as_dict(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (answers are untrusted)."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """``value`` when it is a JSON list, else an empty one (answers are untrusted)."""
    return value if isinstance(value, list) else []


def key_of(value: object) -> Any:
    """A block key from an answer's ``index``: the value itself when hashable, else its JSON
    text (an ``index`` that is a list still names one block, never a crash)."""
    if value is None or isinstance(value, str | int | float):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def rebuild_events(rebuilder: StreamRebuilder, events: Iterable[SseEvent]) -> list[Chunk]:
    """Feed one whole answer's events to ``rebuilder``: every chunk it rebuilds, the end's too
    (how a non-streaming answer, replayed as its stream, is recorded)."""
    out: list[Chunk] = []
    for event in events:
        out += rebuilder.feed(event)
    return out + rebuilder.end()


_notes: ContextVar[list[str] | None] = ContextVar("dsh_replay_record_notes", default=None)


def collect_notes() -> list[str]:
    """A fresh list the readers below note what they recorded differently in, for the call
    relayed by the current task (its report warns with them)."""
    notes: list[str] = []
    _notes.set(notes)
    return notes


def impossible_usage(wire: dict[str, Any], counters: tuple[str, ...]) -> bool:
    """True, and noted, when a counter of ``wire`` (``a.b`` for a nested one) is present but
    no token count (``1e999``, NaN, negative, a fraction, text): the call's usage is then
    recorded as absent rather than as an invented 0."""
    for path in counters:
        value: Any = wire
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            continue
        number = as_safe_integer(value)
        if number is None or number < 0:
            notes = _notes.get()
            if notes is not None:
                notes.append(f"the upstream's usage {path} is {json.dumps(value)[:EXCERPT]}, "
                             "not a token count; the call's usage is recorded as absent")
            return True
    return False


def malformed(what: str, value: object) -> StreamFailure:
    """The failure of an answer whose ``what`` is not of its wire's type (``choices`` a string,
    ``content`` a number, a chunk that is a list or null): INVALID_RESPONSE, quoting it."""
    shown = json.dumps(value, default=str)[:EXCERPT]
    return StreamFailure(f"the upstream sent {what} that is not of its wire type: {shown}",
                         code=INVALID_RESPONSE)


def of_type(value: object, kind: type | tuple[type, ...], what: str) -> Any:
    """``value`` when absent (None) or of ``kind``; else the answer is not what its wire says
    (``malformed``: INVALID_RESPONSE), rather than a value coerced into what was not sent."""
    if value is None or isinstance(value, kind):
        return value
    raise malformed(what, value)


def stream_error(error: object) -> StreamFailure:
    """The failure an in-stream ``{"error": {...}}`` event reports (code SERVER when unnamed)."""
    if not isinstance(error, dict):
        return StreamFailure(str(error))
    message = error.get("message")
    code = error.get("code")
    return StreamFailure(message if isinstance(message, str) and message else "stream error",
                         code=code if isinstance(code, str) and code else None)


ERROR_EXCERPT = 500
"""Characters of an error body that is not JSON kept as its message."""


def upstream_error_message(status: int, body: bytes) -> str:
    """The message of an error answer: ``error.message`` (OpenAI's and Anthropic's shapes),
    a bare ``error`` or ``message`` string, else the body's text (its first ``ERROR_EXCERPT``
    characters; the recorder redacts secrets before this cut)."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        parsed = upstream_json(text)
    except StreamFailure:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(parsed.get("message"), str):
            return str(parsed["message"])
    return text[:ERROR_EXCERPT] if text else f"HTTP {status}"
