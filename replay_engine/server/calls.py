"""ASGI answers that serve one bound call in its dialect: a stream, or the ``stream: false`` form.

Each answer watches the client while it serves: a disconnect cancels the call
(it ends as cancelled, its cursor stays advanced) without disturbing the
server. A stream's turn ends every ``YIELD_EVERY`` chunks (fewer when many are in flight), or
sooner once it has run ``TURN_S``; it then queues in ``Rounds``, which lets each turn of the
event loop run only a bounded amount of stream work, so concurrent sessions progress fairly
and a new session's request, or a debugger key, never waits long behind all of them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio
from starlette.types import Receive, Scope, Send

from ..engine import CallHandle
from ..errors import ReplayError
from ..models import ThrowEntry
from ..wire.dialect import Assembler, CallRequest, Dialect, StreamEncoder
from ..wire.jsonbytes import encode as encode_json
from .rounds import Rounds

YIELD_EVERY = 64
"""Chunks served between two yields to the event loop (fairness across streams)."""
ROUND_CHUNKS = 256
"""Chunks all streams in flight serve together between two chances for anything else on the
event loop (new sessions' first chunks, the embedded debugger's keys): each stream's turn is
this shared among them, so a round costs the same with 50 streams as with 4."""
YIELD_MIN = 4
"""The shortest turn (below it the yields cost more than the chunks); a turn's clock is read
once per this many chunks."""
TURN_S = 0.0005
"""The longest a stream's turn runs before it yields, whatever its chunk count: chunks cost
more while the machine is busy (or when large), and no turn may hold the event loop much past
the round ``Rounds`` releases (a new session's request waits for the loop's next poll)."""


class StreamCount:
    """How many call streams one app is serving right now, how long a turn runs, and the
    queue their turns take (``Rounds``)."""

    __slots__ = ("active", "rounds", "turn_s")

    def __init__(self, turn_s: float = TURN_S) -> None:
        self.active = 0
        self.turn_s = turn_s
        self.rounds = Rounds()

    def turn(self) -> int:
        """Chunks a stream serves before yielding to the others."""
        return max(YIELD_MIN, min(YIELD_EVERY, ROUND_CHUNKS // max(self.active, 1)))

_encode = encode_json
_JSON = [(b"content-type", b"application/json")]


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


def error_parts(dialect: Dialect, exc: ReplayError, headers: Sequence[tuple[bytes, bytes]] = (),
                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two ASGI messages of ``exc`` answered as ``dialect`` says (status and body)."""
    status, body = dialect.error_answer(exc)
    return json_response_parts(status, body, headers)


class CallStream:
    """Streams one bound call through its dialect's encoder; a failure ends it as the dialect
    says (an HTTP error before the first byte where the dialect has them, else failure bytes)."""

    def __init__(self, handle: CallHandle, wire: StreamEncoder, dialect: Dialect,
                 streams: StreamCount | None = None,
                 error_headers: Sequence[tuple[bytes, bytes]] = (), *,
                 media_type: bytes | None = None) -> None:
        self.handle = handle
        self.wire = wire
        self.media_type = media_type or dialect.media_type
        self.dialect = dialect
        self.streams = streams or StreamCount()
        self.error_headers = error_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        wire = self.wire
        dialect = self.dialect
        errors_as_status = dialect.errors_as_status
        start = {"type": "http.response.start", "status": 200,
                 "headers": [(b"content-type", self.media_type), (b"cache-control", b"no-cache"),
                             (b"x-accel-buffering", b"no")]}

        async def body(chunks: AsyncIterator[dict[str, Any]]) -> None:
            # Encoded events are coalesced into one write while the engine would serve the
            # next chunk at once; anything that could hold the stream flushes first.
            started = False
            served = 0
            left = streams.turn()
            clock = time.perf_counter
            since = clock()
            pending: list[bytes] = []
            ready = self.handle.ready
            rounds = streams.rounds
            entry = self.handle.entry
            opening = wire.opening()
            if opening and not (errors_as_status and isinstance(entry, ThrowEntry)
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
                    left -= 1
                    turn = left <= 0 or (served % YIELD_MIN == 0
                                         and clock() - since >= streams.turn_s)
                    if turn or (pending and not started) or not ready():
                        spent = clock() - since if turn else 0.0
                        if pending:
                            if not started:
                                await send(start)
                                started = True
                            await send({"type": "http.response.body", "body": b"".join(pending),
                                        "more_body": True})
                            pending.clear()
                        if turn:
                            await rounds.pause(spent)
                            left = streams.turn()
                        since = clock()
                pending.append(wire.close())
            except ReplayError as exc:
                if not started and served == 0 and errors_as_status:
                    head, rest = error_parts(dialect, exc, self.error_headers)
                    await send(head)
                    await send(rest)
                    return
                pending.append(wire.fail(exc.message, exc.code))
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
    """Serves one bound call as its dialect's single JSON answer (``stream: false``), folded by
    ``assembler`` (default: a fresh one of the dialect)."""

    def __init__(self, handle: CallHandle, dialect: Dialect, call: CallRequest, label: str,
                 error_headers: Sequence[tuple[bytes, bytes]] = (), *,
                 assembler: Assembler | None = None) -> None:
        self.handle = handle
        self.dialect = dialect
        self.call = call
        self.label = label
        self.error_headers = error_headers
        self.assembler = assembler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        dialect = self.dialect

        async def body(chunks: AsyncIterator[dict[str, Any]]) -> None:
            assembler = self.assembler or dialect.assembler(self.call)
            served = 0
            try:
                async for chunk in chunks:
                    assembler.add(chunk)
                    served += 1
                    if served % YIELD_EVERY == 0:
                        await asyncio.sleep(0)
                answer = dialect.answer(assembler, self.call, self.label)
            except ReplayError as exc:
                head, rest = error_parts(dialect, exc, self.error_headers)
            else:
                head, rest = json_response_parts(200, answer)
            await send(head)
            await send(rest)

        await serve_watched(self.handle, receive, body)
