"""A scriptable raw-socket upstream for the recorder's untrusted-answer tests.

Each request is answered by the next :class:`Answer` (or by a function of the request): any
status, headers and body bytes, a body sent in pieces, a body that never ends, or no answer at
all. It notes every request and when each connection was closed by the other side, so a test
can see that the recorder let a silent upstream go.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    """What the upstream does with one request."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    pieces: list[bytes] = field(default_factory=list)
    """Sent as HTTP chunks after ``body``'s head (``chunked``), then the last chunk."""
    silent: bool = False
    """Send ``body`` (may be empty: no head at all), then nothing more until the client goes."""
    gate: asyncio.Event | None = None
    """Wait for this before answering."""
    pace: float = 0.0
    """Seconds waited before each piece and before the end of the body (as a real network
    splits an answer into TCP segments)."""
    tail: float | None = None
    """Seconds waited before the end of the body (default ``pace``)."""
    source: Callable[[], Iterator[bytes]] | None = None
    """Pieces made as they are sent (an endless body, a bomb), chunked after the head."""

    def wire(self) -> tuple[bytes, list[bytes]]:
        """The bytes of the head (+ whole body) and the chunked pieces."""
        if self.silent and not self.headers and not self.body:
            return b"", []
        head = f"HTTP/1.1 {self.status} X\r\n".encode()
        headers = dict(self.headers)
        if self.pieces or self.silent or self.source is not None:
            headers.setdefault("transfer-encoding", "chunked")
        else:
            headers["content-length"] = str(len(self.body))
        headers.setdefault("connection", "close")
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode("latin-1") + b"\r\n"
        if self.pieces or self.silent or self.source is not None:
            return head, ([self.body] if self.body else []) + self.pieces
        return head + self.body, []

    @property
    def sent_body(self) -> bytes:
        """The body bytes a client reads (chunk framing undone)."""
        return self.body + b"".join(self.pieces)


def sse(events: list[Any], *, done: bool = True, status: int = 200,
        headers: dict[str, str] | None = None) -> Answer:
    """An event-stream answer: each event a ``data:`` line (dicts as JSON, strings as given)."""
    lines = [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode() for e in events]
    if done:
        lines.append(b"data: [DONE]\n\n")
    return Answer(status, {"content-type": "text/event-stream", **(headers or {})},
                  b"".join(lines))


def paced(answer: Answer, seconds: float = 0.003, tail: float | None = None) -> Answer:
    """``answer`` with each event sent as its own piece ``seconds`` after the one before, and
    the end of its body ``tail`` (default ``seconds``) after the last event."""
    events = [e + b"\n\n" for e in answer.body.split(b"\n\n") if e]
    return Answer(answer.status, dict(answer.headers), b"", events, pace=seconds, tail=tail)


def named_sse(events: list[tuple[str, Any]]) -> Answer:
    """An event stream of named events (Anthropic, Responses)."""
    body = b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                    for name, data in events)
    return Answer(200, {"content-type": "text/event-stream"}, body)


def json_body(value: Any, status: int = 200, *, raw: bytes | None = None,
              gzipped: bool = False) -> Answer:
    """A JSON answer (``raw`` bytes instead of ``value`` when given)."""
    data = raw if raw is not None else json.dumps(value).encode()
    headers = {"content-type": "application/json"}
    if gzipped:
        data = gzip.compress(data)
        headers["content-encoding"] = "gzip"
    return Answer(status, headers, data)


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """One chat.completion.chunk."""
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def text_answer(*parts: str) -> Answer:
    """A stop answer streaming ``parts`` as text deltas."""
    return sse([chunk({"role": "assistant", "content": ""}),
                *(chunk({"content": p}) for p in parts), chunk({}, "stop")])


def deep(levels: int) -> str:
    """JSON text nested ``levels`` deep."""
    return "[" * levels + "]" * levels


Script = list[Answer] | Callable[[str, bytes], Answer]


class FakeUpstream:
    """Answers requests by ``script``: the next answer in order, or ``script(head, body)``."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[tuple[str, bytes]] = []
        self.closed_by_client = 0
        """Connections the other side closed while this upstream held them silent."""
        self._changed = asyncio.Event()
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> FakeUpstream:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def wait(self, predicate: Callable[[], bool], timeout: float = 10) -> None:
        """Wait until ``predicate()`` holds (checked whenever a request or a close arrives)."""
        async def loop() -> None:
            while not predicate():
                self._changed.clear()
                await self._changed.wait()
        await asyncio.wait_for(loop(), timeout)

    def _next(self, head: str, body: bytes) -> Answer:
        if callable(self.script):
            return self.script(head, body)
        return self.script.pop(0)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            length = 0
            for line in head.split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "content-length":
                    length = int(value.strip())
            body = await reader.readexactly(length)
            self.requests.append((head, body))
            self._changed.set()
            answer = self._next(head, body)
            if answer.gate is not None:
                await answer.gate.wait()
            data, pieces = answer.wire()
            writer.write(data)
            for piece in itertools.chain(pieces, answer.source() if answer.source else ()):
                if answer.pace:
                    await writer.drain()
                    await asyncio.sleep(answer.pace)
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                if answer.source is not None:
                    await writer.drain()
            if answer.silent:
                await writer.drain()
                if not await reader.read(1):  # EOF: the recorder let go of the connection
                    self.closed_by_client += 1
                    self._changed.set()
                return
            if pieces or answer.source is not None:
                tail = answer.pace if answer.tail is None else answer.tail
                if tail:
                    await writer.drain()
                    await asyncio.sleep(tail)
                writer.write(b"0\r\n\r\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
