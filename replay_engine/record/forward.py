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
import zlib

import anyio
import httpx
from starlette.types import Message, Receive, Scope, Send

from ..server.preamble import NO_RETRY
from ..statuscodes import code_for_status
from ..wire.jsonbytes import JSONResponse
from .calls import Call, now_ms
from .dialect import (
    INVALID_RESPONSE,
    RecordDialect,
    SseEvent,
    SseParser,
    StreamFailure,
    StreamRebuilder,
    upstream_json,
)
from .redact import Redactor

NETWORK = "NETWORK"
"""Failure code of a call whose upstream connection broke mid-answer (no status to map)."""
UNREACHABLE_STATUS = 502
"""What the client is answered when the upstream gives no answer it can have; the call is
recorded with the code of this status (or INVALID_RESPONSE), so the replay answers the same."""
ABORTED_BY_CLIENT = "ABORTED"
"""Failure code of a call the client left before its answer ended."""
CLIENT_LEFT = "the client closed the connection before the answer ended"
MAX_ERROR_BODY = 1024 * 1024
"""Bytes of an error answer read for its message (all of it is relayed)."""
MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""A non-streamed answer larger than this is relayed whole but recorded as a failure."""
MAX_EVENT_BYTES = 16 * 1024 * 1024
"""A streamed event still unterminated at this size ends the rebuild (relayed whole)."""
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


class _Decoder:
    """Undoes the answer's content encoding for the rebuilder (the client gets the bytes as
    sent); a corrupt or unknown encoding is a StreamFailure, never a crash."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding.strip().lower() or "identity"
        self._z = zlib.decompressobj(wbits=47) if self.encoding in ("gzip", "deflate") else None

    def __call__(self, raw: bytes) -> bytes:
        if self._z is not None:
            try:
                return self._z.decompress(raw)
            except zlib.error as exc:
                raise StreamFailure(f"the upstream's {self.encoding} body is corrupt ({exc})",
                                    code=INVALID_RESPONSE) from None
        if self.encoding != "identity":
            raise StreamFailure(f"the upstream's answer is {self.encoding}-encoded, which the "
                                "recorder cannot read", code=INVALID_RESPONSE)
        return raw


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
    (even while the upstream is silent) ends the call and closes the upstream connection."""

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
        self.client_left = False
        self.drop = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as group:
                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    self.client_left = not self.finishing
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
        if self.drop:
            _dropping.set(True)  # return without ending the body: the client's connection drops

    def _fail(self, message: str, code: str) -> None:
        if self.call is not None:
            self.call.fail(message, code)

    async def _refuse(self, send: Send, message: str, code: str) -> None:
        """Nothing of the upstream's answer can be forwarded: the client gets a JSON 502
        naming why, and the call is recorded as that failure."""
        self._fail(message, code)
        await upstream_error(message, UNREACHABLE_STATUS, code)({"type": "http"}, _no_receive,
                                                                send)

    async def _forward(self, send: Send) -> None:
        try:
            response = self.response = await self.client.send(self.outgoing, stream=True)
        except httpx.HTTPError as exc:
            if self.call is not None:
                self.call.reached = False
            await self._refuse(send, self.redact(f"the upstream {self.upstream} did not answer "
                                                 f"({describe(exc)})"),
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
        except httpx.HTTPError as exc:
            self._fail(f"the upstream connection broke mid-answer ({describe(exc)})", NETWORK)
            self.drop = True
        except OSError:
            self._fail(CLIENT_LEFT, ABORTED_BY_CLIENT)

    async def _relay_all(self, send: Send, limit: int) -> bytes:
        """Relay the whole body; returns its first ``limit`` bytes (what is read for the log)."""
        assert self.response is not None
        body = bytearray()
        async for raw in self.response.aiter_raw():
            if len(body) < limit:
                body += raw[:limit - len(body)]
            await send({"type": "http.response.body", "body": raw, "more_body": True})
        self.finishing = True
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return bytes(body)

    async def _error(self, send: Send) -> None:
        assert self.response is not None
        body = await self._relay_all(send, MAX_ERROR_BODY)
        status = self.response.status_code
        try:
            body = _Decoder(self.response.headers.get("content-encoding", ""))(body)
        except StreamFailure:
            pass  # the message is read from the bytes as they came
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
        decode = _Decoder(self.response.headers.get("content-encoding", ""))
        failure: StreamFailure | None = None
        call = self.call
        async for raw in self.response.aiter_raw():
            await send({"type": "http.response.body", "body": raw, "more_body": True})
            if call is None or failure is not None or rebuilder.ended:
                continue
            try:
                self._fold(call, rebuilder, parser.feed(decode(raw)))
                if parser.pending > MAX_EVENT_BYTES:
                    raise StreamFailure(f"the upstream sent an event longer than "
                                        f"{MAX_EVENT_BYTES // (1024 * 1024)} MiB",
                                        code=INVALID_RESPONSE)
            except StreamFailure as exc:
                failure = exc
            except Exception as exc:  # noqa: BLE001 - untrusted answers never crash the relay
                failure = _unreadable(exc)
        self.finishing = True
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        if call is None:
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
        body = await self._relay_all(send, MAX_ANSWER_BYTES + 1)
        call = self.call
        if call is None:
            return
        try:
            if len(body) > MAX_ANSWER_BYTES:
                raise StreamFailure(f"the upstream's answer is larger than "
                                    f"{MAX_ANSWER_BYTES // (1024 * 1024)} MiB",
                                    code=INVALID_RESPONSE)
            decoded = _Decoder(self.response.headers.get("content-encoding", ""))(body)
            chunks = self.dialect.completion_chunks(upstream_json(
                self.redact(decoded.decode("utf-8", errors="replace"))))
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
