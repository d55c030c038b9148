"""A raw TCP upstream for the recorder's failure tests: answers each request with the next
scripted behaviour, including ones no well-behaved server gives (a connection closed before
any answer, a chunked stream cut off mid-way)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any


def sse_answer(events: list[dict[str, Any]], *, done: bool = True) -> bytes:
    """A whole 200 event-stream answer (closed after the body)."""
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    if done:
        body += b"data: [DONE]\n\n"
    return (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)


def json_answer(status: int, body: dict[str, Any]) -> bytes:
    """A whole JSON answer with ``status``."""
    data = json.dumps(body).encode()
    return (f"HTTP/1.1 {status} Error\r\ncontent-type: application/json\r\n"
            f"content-length: {len(data)}\r\nconnection: close\r\n\r\n").encode() + data


def chat_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One chat.completion.chunk."""
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def text_events(text: str) -> list[dict[str, Any]]:
    """A stop answer streaming ``text``."""
    return [chat_chunk({"role": "assistant", "content": ""}), chat_chunk({"content": text}),
            chat_chunk({}, "stop")]


@dataclass
class Behaviour:
    """What the upstream does with one request: write ``data`` then close; ``chunked`` pieces
    are sent as HTTP chunks after ``data`` (a head) with no final chunk."""

    data: bytes = b""
    chunked: list[bytes] = field(default_factory=list)


def cut_stream(events: list[dict[str, Any]]) -> Behaviour:
    """A chunked 200 event stream that breaks after ``events``."""
    head = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n")
    return Behaviour(head, [b"data: " + json.dumps(e).encode() + b"\n\n" for e in events])


class RawUpstream:
    """Serves ``behaviours`` in request order; keeps each request's head and body."""

    def __init__(self, behaviours: list[Behaviour]) -> None:
        self.behaviours = list(behaviours)
        self.requests: list[tuple[str, bytes]] = []
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aenter__(self) -> RawUpstream:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

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
            behaviour = self.behaviours.pop(0)
            writer.write(behaviour.data)
            for piece in behaviour.chunked:
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                await writer.drain()
            await writer.drain()
        finally:
            writer.close()
