"""ASGI answers that serve one bound call: SSE, NDJSON and the buffered ``stream: false`` form.

Each answer watches the client while it serves: a disconnect cancels the call
(it ends as cancelled, its cursor stays advanced) without disturbing the
server. Streams yield to the event loop every ``YIELD_EVERY`` chunks (fewer when many are
in flight) so concurrent sessions progress fairly.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol

import anyio
import msgspec
from starlette.types import Receive, Scope, Send

from .engine import CallHandle
from .errors import ReplayError
from .models import ThrowEntry
from .wire_openai import CompletionAssembler, StreamEncoder, error_body, error_event, status_for_code

YIELD_EVERY = 64
"""Chunks served between two yields to the event loop (fairness across streams)."""
YIELD_EVERY_BUSY = 16
"""The same when more than ``BUSY_STREAMS`` streams are in flight: shorter turns keep every
new session's first chunk prompt, at a small cost in total throughput."""
BUSY_STREAMS = 4


class StreamCount:
    """How many call streams one app is serving right now."""

    __slots__ = ("active",)

    def __init__(self) -> None:
        self.active = 0

    def turn(self) -> int:
        """Chunks a stream serves before yielding to the others."""
        return YIELD_EVERY if self.active <= BUSY_STREAMS else YIELD_EVERY_BUSY

_encode = msgspec.json.Encoder().encode
_JSON = [(b"content-type", b"application/json")]


class WireFormat(Protocol):
    """How one call's chunks, end and failure look on the wire."""

    media_type: bytes
    errors_as_status: bool
    """True: a failure before the first chunk answers an HTTP error instead of a stream."""

    def opening(self) -> bytes: ...
    def encode(self, chunk: dict[str, Any]) -> bytes | None: ...
    def close(self) -> bytes: ...
    def fail(self, exc: ReplayError) -> bytes: ...


class SseFormat:
    """``text/event-stream`` chat-completion chunks (SPEC 8.1)."""

    media_type = b"text/event-stream; charset=utf-8"
    errors_as_status = True

    def __init__(self, model: str, *, include_usage: bool = False) -> None:
        self._encoder = StreamEncoder(model, include_usage=include_usage)
        self.encode = self._encoder.encode

    def opening(self) -> bytes:
        return self._encoder.opening()

    def close(self) -> bytes:
        return self._encoder.close()

    def fail(self, exc: ReplayError) -> bytes:
        return error_event(exc.message, exc.code)


class NdjsonFormat:
    """``application/x-ndjson``: one recorded chunk per line, exactly as loaded (SPEC 8.2)."""

    media_type = b"application/x-ndjson"
    errors_as_status = False

    def opening(self) -> bytes:
        return b""

    def encode(self, chunk: dict[str, Any]) -> bytes | None:
        return _encode(chunk) + b"\n"

    def close(self) -> bytes:
        return b""

    def fail(self, exc: ReplayError) -> bytes:
        return _encode({"type": "error", "message": exc.message, "code": exc.code}) + b"\n"


def json_response_parts(status: int, body: object, headers: Sequence[tuple[bytes, bytes]] = (),
                        ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two ASGI messages of a complete JSON answer (``headers`` added to the JSON ones)."""
    data = _encode(body)
    start = {"type": "http.response.start", "status": status,
             "headers": [*_JSON, (b"content-length", str(len(data)).encode()), *headers]}
    return start, {"type": "http.response.body", "body": data, "more_body": False}


async def _aclose(iterator: AsyncIterator[dict[str, Any]]) -> None:
    close = getattr(iterator, "aclose", None)
    if close is not None:
        await close()


async def serve_watched(
    handle: CallHandle,
    receive: Receive,
    body: Callable[[AsyncIterator[dict[str, Any]]], Awaitable[None]],
) -> None:
    """Run ``body`` over the call's chunks; a client disconnect cancels the call and the body."""
    chunks = handle.chunks()
    done = False

    async def watch(scope: anyio.CancelScope) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                if not done:
                    handle.cancel()
                    scope.cancel()
                return

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(watch, group.cancel_scope)
            await body(chunks)
            done = True
            group.cancel_scope.cancel()
    finally:
        await _aclose(chunks)


class CallStream:
    """Streams one bound call in a ``WireFormat``; errors end the stream as the format says."""

    def __init__(self, handle: CallHandle, wire: WireFormat,
                 streams: StreamCount | None = None,
                 error_headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
        self.handle = handle
        self.wire = wire
        self.streams = streams or StreamCount()
        self.error_headers = error_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        wire = self.wire
        start = {"type": "http.response.start", "status": 200,
                 "headers": [(b"content-type", wire.media_type), (b"cache-control", b"no-cache"),
                             (b"x-accel-buffering", b"no")]}

        async def body(chunks: AsyncIterator[dict[str, Any]]) -> None:
            # Encoded events are coalesced into one write while the engine would serve the
            # next chunk at once; anything that could hold the stream flushes first.
            started = False
            served = 0
            pending: list[bytes] = []
            ready = self.handle.ready
            entry = self.handle.entry
            opening = wire.opening()
            if opening and not (wire.errors_as_status and isinstance(entry, ThrowEntry)
                                and not entry.chunks):
                # Before any pace wait or step gate: the client sees an open stream at once.
                await send(start)
                await send({"type": "http.response.body", "body": opening, "more_body": True})
                started = True
            try:
                async for chunk in chunks:
                    data = wire.encode(chunk)
                    if data:
                        pending.append(data)
                    served += 1
                    turn = served % streams.turn() == 0
                    if turn or (pending and not started) or not ready():
                        if pending:
                            if not started:
                                await send(start)
                                started = True
                            await send({"type": "http.response.body", "body": b"".join(pending),
                                        "more_body": True})
                            pending.clear()
                        if turn:
                            await asyncio.sleep(0)
                pending.append(wire.close())
            except ReplayError as exc:
                if not started and served == 0 and wire.errors_as_status:
                    head, rest = json_response_parts(status_for_code(exc.code),
                                                     error_body(exc.message, exc.code),
                                                     self.error_headers)
                    await send(head)
                    await send(rest)
                    return
                pending.append(wire.fail(exc))
            if not started:
                await send(start)
            await send({"type": "http.response.body", "body": b"".join(pending),
                        "more_body": False})

        streams = self.streams
        streams.active += 1
        try:
            await serve_watched(self.handle, receive, body)
        finally:
            streams.active -= 1


class CallCompletion:
    """Serves one bound call as a single ``chat.completion`` (``stream: false``)."""

    def __init__(self, handle: CallHandle, model: str,
                 error_headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
        self.handle = handle
        self.model = model
        self.error_headers = error_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def body(chunks: AsyncIterator[dict[str, Any]]) -> None:
            assembler = CompletionAssembler()
            served = 0
            try:
                async for chunk in chunks:
                    assembler.add(chunk)
                    served += 1
                    if served % YIELD_EVERY == 0:
                        await asyncio.sleep(0)
            except ReplayError as exc:
                head, rest = json_response_parts(status_for_code(exc.code),
                                                 error_body(exc.message, exc.code),
                                                 self.error_headers)
            else:
                head, rest = json_response_parts(200, assembler.result(self.model))
            await send(head)
            await send(rest)

        await serve_watched(self.handle, receive, body)
