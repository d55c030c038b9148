"""One model call through the recorder: sent upstream, relayed to the client byte for byte as it
arrives, rebuilt by its dialect and recorded (or recorded as the failure it was).

The upstream's answer is untrusted input: a head this server cannot relay (a status outside
200..599, a header HTTP cannot carry) is answered with a JSON 502 ``INVALID_RESPONSE`` and the
call recorded as that failure; an answer its dialect cannot read is relayed whole and recorded
as a failure; nothing the upstream sends crashes the relay.
"""

from __future__ import annotations

import contextvars
import logging
import re

import anyio
import anyio.lowlevel
import httpx
from starlette.types import Message, Receive, Scope, Send

from ..errors import AnswerTooLarge
from ..server.preamble import NO_RETRY
from ..statuscodes import code_for_status
from ..wire.jsonbytes import JSONResponse
from .calls import Call, now_ms
from .decoding import (
    MAX_ANSWER_BYTES,
    MAX_ERROR_BODY,
    MAX_EVENT_BYTES,
    MAX_STREAM_CHUNKS,
    MIB,
    BodyPrefix,
    Decoder,
    too_large,
)
from .dialect import (
    INVALID_RESPONSE,
    RecordDialect,
    SseEvent,
    SseParser,
    StreamFailure,
    StreamRebuilder,
    collect_notes,
    upstream_json,
)
from .redact import Redactor, shown_url

NETWORK = "NETWORK"
"""Failure code of a call whose upstream connection broke mid-answer (no status to map)."""
UNREACHABLE_STATUS = 502
"""What the client is answered when the upstream gives no answer it can have; the call is
recorded with the code of this status (or INVALID_RESPONSE), so the replay answers the same."""
ABORTED_BY_CLIENT = "ABORTED"
"""Failure code of a call the client left before its answer ended."""
CLIENT_LEFT = "the client closed the connection before the answer ended"
RELAYABLE_STATUSES = range(200, 600)
"""Statuses an answer can be relayed with (a 1xx is no final answer; HTTP has none above 599)."""

NOT_RELAYED = frozenset({"content-length", "connection", "keep-alive", "transfer-encoding"})
"""Answer headers of the upstream's connection, not of its answer (the server sets its own)."""
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")

_dropping: contextvars.ContextVar[bool] = contextvars.ContextVar("dsh_replay_dropping",
                                                                 default=False)


class _DeliberateDrop(logging.Filter):
    """Silences uvicorn's complaint about a response the recorder cut off on purpose (the
    upstream broke its stream, so the client's connection breaks the same way)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _dropping.get()


DELIBERATE_DROP = _DeliberateDrop()
"""The filter the recorder adds to uvicorn's error log while it serves."""


def drop_quietly() -> None:
    """The answer being served ends without its body's end on purpose: uvicorn's complaint
    about it is silenced (``DELIBERATE_DROP``)."""
    _dropping.set(True)


def relayed_head(response: httpx.Response, *, skip: frozenset[str] = NOT_RELAYED
                 ) -> list[tuple[bytes, bytes]]:
    """The headers relayed with ``response`` as they came (bytes, not re-encoded), leaving
    out ``skip``; StreamFailure INVALID_RESPONSE when its status or a header cannot be sent
    on by this server (checked before the answer starts, while a 502 can still be sent)."""
    status = response.status_code
    if status not in RELAYABLE_STATUSES:
        raise StreamFailure(f"the upstream answered HTTP status {status}, which cannot be relayed "
                            f"(a final answer's status is {RELAYABLE_STATUSES.start}.."
                            f"{RELAYABLE_STATUSES.stop - 1})", code=INVALID_RESPONSE)
    headers: list[tuple[bytes, bytes]] = []
    for name, value in response.headers.raw:
        if name.decode("latin-1").lower() in skip:
            continue
        if not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
            shown = name.decode("latin-1", errors="replace")[:80]
            raise StreamFailure(f"the upstream's answer header {shown!r} cannot be relayed (a "
                                "name or value HTTP does not allow)", code=INVALID_RESPONSE)
        headers.append((name, value))
    return headers


def _unreadable(exc: Exception) -> StreamFailure:
    """The failure recorded when a dialect cannot make sense of an answer at all."""
    return StreamFailure(f"the recorder could not read the upstream's answer ({describe(exc)})",
                         code=INVALID_RESPONSE)


def describe(exc: BaseException) -> str:
    """An exception as a message quotes it: its type, and its text when it has one."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def upstream_error(message: str, status: int, code: str) -> JSONResponse:
    """The recorder's own JSON answer when the upstream's cannot be given to the client."""
    return JSONResponse({"error": {"message": message, "type": "upstream_error", "code": code}},
                        status_code=status, headers=NO_RETRY)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


class Forward:
    """The ASGI answer of one model call: sends it upstream, relays the upstream's bytes as
    they arrive while the dialect rebuilds the call, and records it. A client that leaves
    (even while the upstream is silent) ends the call and closes the upstream connection,
    unless the dialect's end marker was already relayed: the call is then complete."""

    def __init__(self, client: httpx.AsyncClient, upstream: str, redact: Redactor,
                 outgoing: httpx.Request, call: Call | None, dialect: RecordDialect) -> None:
        self.client = client
        self.upstream = upstream
        self.redact = redact
        self.outgoing = outgoing
        self.call = call
        self.dialect = dialect
        self.response: httpx.Response | None = None
        self.finishing = False
        """The whole answer was relayed (the client leaving now cuts nothing)."""
        self.complete = False
        """The dialect's end marker was relayed: the call is written whole, whatever follows
        (a client that reads ``[DONE]`` and leaves before the body's end ends nothing)."""
        self.relayed = 0
        """Bytes of the answer's body relayed so far (at most ``MAX_ANSWER_BYTES``)."""
        self.client_left = False
        self.drop = False
        self.stops: set[anyio.CancelScope] = set()
        """Where it registers the scope a stopping recorder cancels (the proxy's own set)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with anyio.CancelScope() as stopping:
            self.stops.add(stopping)
            try:
                await self._run(receive, send)
            finally:
                self.stops.discard(stopping)
        if stopping.cancelled_caught:
            self.drop = True  # the recording stopped under it: the client's connection drops
        if self.drop:
            drop_quietly()  # return without ending the body: the client's connection drops

    async def _run(self, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as group:
                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    self.client_left = not (self.finishing or self.complete)
                    group.cancel_scope.cancel()

                async def relay() -> None:
                    await self._forward(send)
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                group.start_soon(relay)
        finally:
            if self.client_left:
                self._fail(CLIENT_LEFT, ABORTED_BY_CLIENT)
            if self.response is not None:
                with anyio.CancelScope(shield=True):
                    await self.response.aclose()

    def _fail(self, message: str, code: str) -> None:
        if self.call is not None and not self.complete:
            self.call.fail(message, code)

    async def _refuse(self, send: Send, message: str, code: str) -> None:
        """Nothing of the upstream's answer can be forwarded: the client gets a JSON 502
        naming why, and the call is recorded as that failure."""
        self._fail(message, code)
        await upstream_error(message, UNREACHABLE_STATUS, code)({"type": "http"}, _no_receive,
                                                                send)

    async def _forward(self, send: Send) -> None:
        if self.call is not None:
            self.call.notes = collect_notes()  # what the dialect reads differently, warned
        try:
            response = self.response = await self.client.send(self.outgoing, stream=True)
        except httpx.HTTPError as exc:
            if self.call is not None:
                self.call.reached = False
            await self._refuse(send, self.redact(f"the upstream {shown_url(self.upstream)} did "
                                                 f"not answer ({describe(exc)})"),
                               code_for_status(UNREACHABLE_STATUS))
            return
        try:
            headers = relayed_head(response)
        except StreamFailure as exc:
            await self._refuse(send, exc.message, INVALID_RESPONSE)
            return
        try:
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": headers})
        except OSError:
            self._fail(CLIENT_LEFT, ABORTED_BY_CLIENT)
            return
        except Exception as exc:  # noqa: BLE001 - a head the checks above let through
            self._fail(f"the upstream's answer head cannot be relayed ({describe(exc)})",
                       INVALID_RESPONSE)
            self.drop = True  # the head is half sent: no 502 can follow, the connection drops
            return
        try:
            if response.status_code >= 400:
                await self._error(send)
            elif "text/event-stream" in response.headers.get("content-type", ""):
                await self._stream(send)
            else:
                await self._completion(send)
        except AnswerTooLarge as exc:  # past a limit: the relay ends, the client's connection drops
            if self.call is not None and not self.complete:
                self.call.timed = []  # the failure alone: writing 100 000 chunks stalls every call
            self._fail(exc.message, exc.code)
            self.drop = True
        except httpx.HTTPError as exc:
            self._fail(f"the upstream connection broke mid-answer ({describe(exc)})", NETWORK)
            self.drop = True
        except OSError:
            self._fail(CLIENT_LEFT, ABORTED_BY_CLIENT)

    async def _relay(self, send: Send, raw: bytes) -> None:
        """Relay one piece of the body; StreamFailure once the body passes the answer limit."""
        self.relayed += len(raw)
        if self.relayed > MAX_ANSWER_BYTES:
            raise too_large("answer", MAX_ANSWER_BYTES)
        await send({"type": "http.response.body", "body": raw, "more_body": True})

    async def _end(self, send: Send) -> None:
        self.finishing = True
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _relay_all(self, send: Send, limit: int) -> BodyPrefix:
        """Relay the whole body; returns its first ``limit`` bytes (what is read for the log),
        decoded as they arrive (a compressed body is inflated no further than ``limit``)."""
        assert self.response is not None
        body = BodyPrefix(self.response.headers.get("content-encoding", ""), limit)
        async for raw in self.response.aiter_raw():
            await self._relay(send, raw)
            await body.take(raw)
        await self._end(send)
        return body

    async def _error(self, send: Send) -> None:
        assert self.response is not None
        prefix = await self._relay_all(send, MAX_ERROR_BODY)
        status = self.response.status_code
        # a body that cannot be decoded: the message is read from the bytes as they came
        body = bytes(prefix.raw if prefix.failure is not None else prefix.decoded)
        try:
            text = self.redact(body.decode("utf-8", errors="replace"))  # before any cut
            message = self.dialect.error_message(status, text.encode("utf-8", "surrogatepass"))
        except Exception:  # noqa: BLE001 - an error body the dialect cannot read
            message = f"HTTP {status}"
        self._fail(message or f"HTTP {status}", code_for_status(status))

    async def _stream(self, send: Send) -> None:
        assert self.response is not None
        parser = SseParser()
        rebuilder = self.dialect.rebuilder()
        decoder = Decoder(self.response.headers.get("content-encoding", ""))
        failure: StreamFailure | None = None
        call = self.call
        decoded = 0
        async for raw in self.response.aiter_raw():
            reading = call is not None and failure is None and not rebuilder.ended
            pieces = iter(decoder.pieces(raw) if reading else ())
            while call is not None:
                try:
                    piece = next(pieces, None)
                    if piece is None:
                        break
                    decoded += len(piece)
                    if decoded > MAX_ANSWER_BYTES:
                        raise too_large("answer", MAX_ANSWER_BYTES)
                    self._fold(call, rebuilder, parser.feed(piece))
                    if len(call.timed) > MAX_STREAM_CHUNKS:
                        raise AnswerTooLarge(f"the upstream's answer streamed more than "
                                             f"{MAX_STREAM_CHUNKS} chunks", code=INVALID_RESPONSE)
                    if parser.pending > MAX_EVENT_BYTES:
                        raise StreamFailure(f"the upstream sent an event longer than "
                                            f"{MAX_EVENT_BYTES // MIB} MiB", code=INVALID_RESPONSE)
                except AnswerTooLarge:
                    raise  # the relay ends here
                except StreamFailure as exc:
                    failure = exc
                except Exception as exc:  # noqa: BLE001 - untrusted answers never crash the relay
                    failure = _unreadable(exc)
                if failure is not None or rebuilder.ended:
                    break
                await anyio.lowlevel.checkpoint()
            await self._relay(send, raw)
            if reading and rebuilder.ended and failure is None and call is not None:
                self.complete = True  # the end marker reached the client: the call is whole
                call.finish()
        await self._end(send)
        if call is None or self.complete:
            return
        if failure is None and not rebuilder.ended:
            try:
                self._fold(call, rebuilder, parser.close())
            except StreamFailure as exc:
                failure = exc
            except Exception as exc:  # noqa: BLE001
                failure = _unreadable(exc)
        if rebuilder.ended and failure is None:
            call.finish()
        elif failure is not None:
            call.fail(failure.message, failure.code)
        else:
            call.fail("the upstream's stream ended before its end marker", NETWORK)

    def _fold(self, call: Call, rebuilder: StreamRebuilder, events: list[SseEvent]) -> None:
        """Feed events (their data redacted first, so a quoted excerpt never splits a key)."""
        at = None
        for event in events:
            chunks = rebuilder.feed(SseEvent(event.event, self.redact(event.data)))
            at = at or now_ms()
            call.add(chunks, at)
            if rebuilder.ended:
                call.add(rebuilder.end(), at)
                return

    async def _completion(self, send: Send) -> None:
        assert self.response is not None
        prefix = await self._relay_all(send, MAX_ANSWER_BYTES)
        call = self.call
        if call is None:
            return
        try:
            if prefix.failure is not None:
                raise prefix.failure
            if prefix.over:
                raise too_large("answer", MAX_ANSWER_BYTES)
            chunks = self.dialect.completion_chunks(upstream_json(
                self.redact(bytes(prefix.decoded).decode("utf-8", errors="replace"))))
        except StreamFailure as exc:
            call.fail(exc.message, exc.code)
            return
        except ValueError:
            call.fail("the upstream answered with a body that is not a completion",
                      INVALID_RESPONSE)
            return
        except Exception as exc:  # noqa: BLE001 - untrusted answers never crash the relay
            failure = _unreadable(exc)
            call.fail(failure.message, failure.code)
            return
        call.add(chunks)
        call.finish()
