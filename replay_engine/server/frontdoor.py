"""uvicorn's HTTP protocol with the front-door rules every server of this project keeps.

uvicorn alone lets a client dribble a request head for ever, answers a malformed request, a
full house and an app's failure in plain text, and at its connection cap refuses every newcomer while idle
keep-alive connections sit on the slots. The protocol built here adds a deadline on each
request head, answers those refusals in JSON, and at the cap closes the connection idle the
longest to make room before it refuses anyone (503 only when every connection is busy).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable
from typing import Any

from starlette.types import Receive, Scope, Send

TOO_MANY_CONNECTIONS = "TOO_MANY_CONNECTIONS"
"""Code of the 503 a client gets when every one of the server's connections is busy."""
MALFORMED_HTTP = "MALFORMED_HTTP"
"""Code of the 400 a request that is not HTTP/1.1 gets."""


def refusal_body(message: str, code: str, kind: str = "invalid_request_error") -> bytes:
    """The JSON error body of a front-door refusal (the OpenAI shape every dialect's SDK reads)."""
    return json.dumps({"error": {"message": message, "type": kind, "code": code}},
                      separators=(",", ":")).encode("utf-8")


def internal_error_body() -> bytes:
    """The JSON body of the 500 a request gets when the app failed before it answered."""
    return refusal_body("the server failed on this request; see its log", "INTERNAL",
                        "server_error")


def _longest_idle(connections: Iterable[Any], keep: object) -> Any | None:
    best: Any | None = None
    for conn in connections:
        since = getattr(conn, "idle_since", None)
        if conn is keep or since is None or conn.transport.is_closing():
            continue
        if best is None or since < best.idle_since:
            best = conn
    return best


def front_door_protocol(base: type[asyncio.Protocol], head_timeout: float,
                        max_connections: int) -> type[asyncio.Protocol]:
    """uvicorn's protocol ``base`` (httptools or h11) with the head deadline, JSON refusals
    and the idle-first connection cap (give uvicorn ``limit_concurrency=None``)."""

    class FrontDoor(base):  # type: ignore[valid-type,misc]
        _head_timer: asyncio.TimerHandle | None = None
        idle_since: float | None = None
        """Loop time since when the connection waits for a request (None: one is in flight)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._inner_app: Any = self.app
            self.app: Any = self._admit

        # -- the head deadline --------------------------------------------------------------

        def _arm(self) -> None:
            self._disarm()
            self._head_timer = self.loop.call_later(head_timeout, self._head_expired)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_expired(self) -> None:
            self._head_timer = None
            cycle = self.cycle
            if (cycle is None or cycle.response_complete) and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:
            if len(self.connections) >= max_connections:
                self._make_room()
            super().connection_made(transport)
            self.idle_since = self.loop.time()
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                self._disarm()
                self.idle_since = None

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self.idle_since = self.loop.time()
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            self.idle_since = None
            super().connection_lost(exc)

        # -- the cap ------------------------------------------------------------------------

        def _make_room(self) -> bool:
            """Close the connection idle the longest (not this one); False when none is."""
            victim = _longest_idle(self.connections, self)
            if victim is None:
                return False
            victim.idle_since = None
            victim.transport.close()
            self.connections.discard(victim)  # its slot is free now, not when it is lost
            return True

        def _over_cap(self) -> bool:
            return len(self.connections) > max_connections or len(self.tasks) > max_connections

        async def _admit(self, scope: Scope, receive: Receive, send: Send) -> None:
            if self._over_cap() and not (self._make_room() and not self._over_cap()):
                await _busy(scope, receive, send, max_connections)
                return
            cycle = self.cycle
            try:
                await self._inner_app(scope, receive, send)
            except Exception:
                if cycle is not None and not cycle.response_started:  # else uvicorn's text 500
                    with contextlib.suppress(Exception):  # it still logs the error itself
                        await _json_answer(send, 500, internal_error_body())
                raise

        # -- JSON refusals --------------------------------------------------------------------

        def send_400_response(self, msg: str) -> None:
            body = refusal_body(f"the request is not valid HTTP/1.1 ({msg.rstrip('.')}); "
                                "send one well-formed request", MALFORMED_HTTP)
            self.transport.write(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json"
                                 b"\r\ncontent-length: " + str(len(body)).encode("ascii")
                                 + b"\r\nconnection: close\r\n\r\n" + body)
            self.transport.close()

    return FrontDoor


async def _json_answer(send: Send, status: int, body: bytes,
                       extra: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        *extra, (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _busy(scope: Scope, receive: Receive, send: Send, cap: int) -> None:
    body = refusal_body(f"the server is busy: all {cap} of its connections have a request in "
                        "flight; retry when one ends", TOO_MANY_CONNECTIONS, "server_busy")
    await _json_answer(send, 503, body, ((b"retry-after", b"1"),))


def http_protocol(head_timeout: float, max_connections: int) -> type[asyncio.Protocol]:
    """httptools' protocol when installed (faster), else h11's, behind the front door."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
        return front_door_protocol(HttpToolsProtocol, head_timeout, max_connections)
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol
        return front_door_protocol(H11Protocol, head_timeout, max_connections)
