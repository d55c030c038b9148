"""The recording proxy: serves the model routes on loopback and forwards each call upstream.

Each request goes to the same path under the upstream base URL (a ``/runs/{run}`` or
``/sessions/{id}`` prefix of the recorder's own is not forwarded; a session id given in the
path travels on as ``X-Session-Id``) with the client's own headers. The answer is relayed
byte for byte as it arrives while the dialect rebuilds its chunks for the log. Nothing of
the request's headers is written anywhere: their secrets are redacted from what is.
"""

from __future__ import annotations

import contextvars
import logging
import zlib
from collections.abc import Callable
from typing import Any

import anyio
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import BadRequest
from ..server import is_loopback
from ..server.guard import RequestGuard
from ..server.preamble import NO_RETRY, request_session
from ..server.request_body import parse_json_body, read_body
from ..server.runner import EmbeddedUvicorn, bind_socket, socket_url
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
from .dialects import DIALECTS
from .upstream import check_upstream, forwarded_path, upstream_url
from .writer import ScenarioRecorder

NETWORK = "NETWORK"
"""Failure code of a call whose upstream connection broke mid-answer (no status to map)."""
UNREACHABLE_STATUS = 502
"""What the client is answered when the upstream gives no answer at all; the call is recorded
with the code of this status, so the replay answers the same."""
ABORTED_BY_CLIENT = "ABORTED"
"""Failure code of a call the client left before its answer ended."""
MAX_ERROR_BODY = 1024 * 1024
"""Bytes of an error answer read for its message (all of it is relayed)."""
MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""A non-streamed answer larger than this is relayed whole but recorded as a failure."""
MAX_EVENT_BYTES = 16 * 1024 * 1024
"""A streamed event still unterminated at this size ends the rebuild (relayed whole)."""

_HOP_BY_HOP = frozenset({
    "host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer",
    "upgrade", "proxy-connection", "accept-encoding",
})
_NOT_RELAYED = frozenset({"content-length", "connection", "keep-alive", "transfer-encoding"})

_dropping: contextvars.ContextVar[bool] = contextvars.ContextVar("dsh_replay_dropping",
                                                                 default=False)


class _DeliberateDrop(logging.Filter):
    """Silences uvicorn's complaint about a response the recorder cut off on purpose (the
    upstream broke its stream, so the client's connection breaks the same way)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _dropping.get()


_FILTER = _DeliberateDrop()


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
    return StreamFailure(f"the recorder could not read the upstream's answer ({_describe(exc)})",
                         code=INVALID_RESPONSE)


class _Forward:
    """The ASGI answer of one model call: sends it upstream, relays the upstream's bytes as
    they arrive while the dialect rebuilds the call, and records it. A client that leaves
    (even while the upstream is silent) ends the call and closes the upstream connection."""

    def __init__(self, proxy: RecordProxy, outgoing: httpx.Request, call: Call | None,
                 dialect: RecordDialect) -> None:
        self.proxy = proxy
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
                self._fail("the client closed the connection before the answer ended",
                           ABORTED_BY_CLIENT)
            if self.response is not None:
                with anyio.CancelScope(shield=True):
                    await self.response.aclose()
        if self.drop:
            _dropping.set(True)  # return without ending the body: the client's connection drops

    def _fail(self, message: str, code: str) -> None:
        if self.call is not None:
            self.call.fail(message, code)

    async def _forward(self, send: Send) -> None:
        proxy = self.proxy
        try:
            response = self.response = await proxy.client.send(self.outgoing, stream=True)
        except httpx.HTTPError as exc:
            message = proxy.recorder.redact(f"the upstream {proxy.upstream} did not answer "
                                            f"({_describe(exc)})")
            self._fail(message, code_for_status(UNREACHABLE_STATUS))
            await _upstream_error(message, UNREACHABLE_STATUS, "UPSTREAM_UNREACHABLE")(
                {"type": "http"}, _no_receive, send)
            return
        headers = [(k.encode("latin-1"), v.encode("latin-1"))
                   for k, v in response.headers.multi_items() if k.lower() not in _NOT_RELAYED]
        try:
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": headers})
        except Exception as exc:  # noqa: BLE001 - an answer head this server cannot relay
            message = f"the upstream's answer head cannot be relayed ({_describe(exc)})"
            self._fail(message, INVALID_RESPONSE)
            await _upstream_error(message, UNREACHABLE_STATUS, INVALID_RESPONSE)(
                {"type": "http"}, _no_receive, send)
            return
        try:
            if response.status_code >= 400:
                await self._error(send)
            elif "text/event-stream" in response.headers.get("content-type", ""):
                await self._stream(send)
            else:
                await self._completion(send)
        except httpx.HTTPError as exc:
            self._fail(f"the upstream connection broke mid-answer ({_describe(exc)})", NETWORK)
            self.drop = True
        except OSError:
            self._fail("the client closed the connection before the answer ended",
                       ABORTED_BY_CLIENT)

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
        redact = self.proxy.recorder.redact
        try:
            text = redact(body.decode("utf-8", errors="replace"))  # before any cut: whole keys
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
        redact = self.proxy.recorder.redact
        at = None
        for event in events:
            chunks = rebuilder.feed(SseEvent(event.event, redact(event.data)))
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
                self.proxy.recorder.redact(decoded.decode("utf-8", errors="replace"))))
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


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _upstream_error(message: str, status: int, code: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "upstream_error", "code": code}},
                        status_code=status, headers=NO_RETRY)


class RecordProxy:
    """The recorder's HTTP server: uvicorn on loopback, run as a task of the current loop."""

    def __init__(self, recorder: ScenarioRecorder, upstream: str, *, host: str = "127.0.0.1",
                 port: int = 0, dialects: tuple[RecordDialect, ...] = DIALECTS) -> None:
        self.recorder = recorder
        self.upstream = check_upstream(upstream)
        self.host = host
        self.port = port
        self.dialects = dialects
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=30.0))
        self.app = self._create_app()
        self._runner: EmbeddedUvicorn | None = None
        self._url: str | None = None

    @property
    def url(self) -> str:
        """The base URL clients use, e.g. ``http://127.0.0.1:8765`` (once started)."""
        if self._url is None:
            raise RuntimeError("the recorder is not started")
        return self._url

    def _create_app(self) -> Starlette:
        routes: list[Route] = []

        def add(path: str, endpoint: Callable[[Request], Any], methods: list[str],
                sessions: bool) -> None:
            prefixes = ["", "/runs/{run}"]
            if sessions:
                prefixes += ["/sessions/{session}", "/runs/{run}/sessions/{session}"]
            routes.extend(Route(p + path, endpoint, methods=methods) for p in prefixes)

        for dialect in self.dialects:
            for path in dialect.routes:
                add(path, self._model_call(dialect, path), ["POST"], True)
        add("/v1/models", self._passthrough("/v1/models"), ["GET"], True)
        add("/v1/models/{model:path}", self._passthrough(None), ["GET"], True)
        routes.append(Route("/healthz", self._healthz, methods=["GET"]))
        return Starlette(routes=routes, exception_handlers={
            404: _not_found(404, "NOT_FOUND"), 405: _not_found(405, "METHOD_NOT_ALLOWED")})

    async def _healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "recording": str(self.recorder.directory)})

    def _headers(self, request: Request, session: str | None) -> dict[str, str]:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["accept-encoding"] = "identity"
        if session is not None and "x-session-id" not in request.headers:
            headers["x-session-id"] = session
        return headers

    def _model_call(self, dialect: RecordDialect, path: str) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> ASGIApp:
            try:  # the replay server's own rules: what it would refuse is never recorded
                session = request_session(request)
                body = parse_json_body(raw := await read_body(request))
            except BadRequest as bad:
                return bad.response(NO_RETRY)
            return self.forward(request, dialect, path, session, raw, body)

        return endpoint

    def forward(self, request: Request, dialect: RecordDialect, path: str, session: str | None,
                raw: bytes, body: dict[str, Any]) -> ASGIApp:
        """Record one model call of route ``path`` (its body read) and relay it upstream."""
        recorder = self.recorder
        recorder.redact.learn(request.headers.items(), request.url.query)
        call = recorder.record_call(session, dialect.messages, body)
        if (failure := recorder.failure) is not None:
            return _upstream_error(f"the recording stopped: {failure.message}", 503, failure.code)
        url = upstream_url(self.upstream, forwarded_path(path, request.path_params),
                           request.url.query)
        outgoing = self.client.build_request("POST", url, content=raw,
                                             headers=self._headers(request, session))
        return _Forward(self, outgoing, call, dialect)

    def _passthrough(self, path: str | None) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            tail = path if path is not None else f"/v1/models/{request.path_params['model']}"
            url = upstream_url(self.upstream, tail, request.url.query)
            try:
                response = await self.client.get(url, headers=self._headers(request, None))
            except httpx.HTTPError as exc:
                return _upstream_error(f"the upstream {self.upstream} did not answer "
                                       f"({_describe(exc)})", 502, "UPSTREAM_UNREACHABLE")
            headers = {k: v for k, v in response.headers.items() if k.lower() not in _NOT_RELAYED
                       and k.lower() != "content-encoding"}
            return Response(response.content, status_code=response.status_code, headers=headers)

        return endpoint

    async def start(self) -> str:
        """Bind, start serving and return the base URL (the port is resolved when 0)."""
        if self._url is not None:
            return self._url
        logging.getLogger("uvicorn.error").addFilter(_FILTER)
        sock = bind_socket(self.host, self.port)
        runner = EmbeddedUvicorn(RequestGuard(self.app, host=self.host), graceful_s=1)
        await runner.start(sock)
        self._runner = runner
        self.port = sock.getsockname()[1]
        self._url = socket_url(self.host, sock)
        return self._url

    async def stop(self) -> None:
        """Finish the recording (calls still streaming are dropped), then shut down."""
        self.recorder.close()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.stop()
        await self.client.aclose()


def _not_found(status: int, code: str) -> Callable[[Request, Exception], Any]:
    async def handle(request: Request, exc: Exception) -> Response:
        what = "no route" if status == 404 else f"{request.method} is not allowed on"
        return JSONResponse({"error": {"message": f"{what} {request.url.path}; the recorder "
                                       "serves the model routes (POST /v1/chat/completions, /v1/messages, "
                                       "/v1/responses)",
                                       "type": "replay_error", "code": code}},
                            status_code=status)

    return handle


__all__ = ["NETWORK", "RecordProxy", "check_upstream", "is_loopback", "upstream_url"]
