"""uvicorn's HTTP protocol with the front-door rules every server of this project keeps.

uvicorn alone lets a client dribble a request head for ever, buffers a head of any size (with
httptools), answers a malformed request, a full house and an app's failure in plain text, and
at its connection cap refuses every newcomer while idle keep-alive connections sit on the
slots. The protocol built here adds a deadline and a size cap (``MAX_HEAD_BYTES``, answered
431) on each request head, whichever parser runs, answers those refusals in JSON, and at the
cap closes the connection idle the longest to make room before it refuses anyone (503 only
when every connection is busy).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable
from typing import Any, Literal

import h11
from starlette.types import Receive, Scope, Send

TOO_MANY_CONNECTIONS = "TOO_MANY_CONNECTIONS"
"""Code of the 503 a client gets when every one of the server's connections is busy."""
MALFORMED_HTTP = "MALFORMED_HTTP"
"""Code of the 400 a request that is not HTTP/1.1 gets."""
HEAD_TOO_LARGE = "REQUEST_HEAD_TOO_LARGE"
"""Code of the 431 a request whose head is over ``MAX_HEAD_BYTES`` gets."""
MAX_HEAD_BYTES = 64 * 1024
"""Largest request head (request line and header lines) a server of this project reads; the
bytes of a longer one are dropped unparsed and the request is answered 431."""
REFUSAL_LINGER_S = 2.0
"""After a 431 the connection reads and drops what the client still sends for this long
before it closes, so the client reads its answer rather than a reset."""
HttpParser = Literal["auto", "h11", "httptools"]
"""Which uvicorn HTTP parser serves: httptools when installed (``auto``), or the one named."""
_HEAD_ENDS = (b"\n\r\n", b"\n\n")


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
        _head_open = True
        """httptools: the bytes fed next belong to a request head (set by its callbacks)."""
        _head_bytes = 0
        """Bytes of the current request head received so far (``_head_cap``)."""
        _head_tail = b""
        _refused = False
        """A 431 was sent: what the client still sends is dropped unparsed until it closes."""
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
            if self._refused or not self._head_cap(data):
                return
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

        # -- the head size cap -----------------------------------------------------------------

        def _reading_head(self) -> bool:
            """Whether the bytes fed next belong to a request head (not to a request body)."""
            conn = getattr(self, "conn", None)
            if isinstance(conn, h11.Connection):
                return conn.their_state is not h11.SEND_BODY
            return self._head_open

        def on_message_begin(self) -> None:  # httptools' callbacks; h11 has no such calls
            self._head_open = True
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._head_open = False
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._head_open = True
            super().on_message_complete()

        def _head_cap(self, data: bytes) -> bool:
            """Count ``data`` against the head cap; False (and the 431 sent) when over it.

            Only bytes read while a head is awaited count, up to the blank line ending it;
            the parser never sees the bytes of an oversized head, so nothing past
            ``MAX_HEAD_BYTES`` (and one read) is buffered for it."""
            if not self._reading_head():
                self._head_bytes, self._head_tail = 0, b""
                return True
            seen = self._head_tail + data
            ends = [i + len(mark) for mark in _HEAD_ENDS if (i := seen.find(mark)) >= 0]
            if ends:
                used = self._head_bytes + min(ends) - len(self._head_tail)
                self._head_bytes, self._head_tail = 0, b""
            else:
                used = self._head_bytes = self._head_bytes + len(data)
                self._head_tail = seen[-2:]
            if used <= MAX_HEAD_BYTES:
                return True
            self._refuse_head()
            return False

        def _refuse_head(self) -> None:
            self._refused = True
            self._disarm()
            body = refusal_body(
                f"the request head (request line and headers) is over the server's limit of "
                f"{MAX_HEAD_BYTES // 1024} KiB; send fewer or shorter headers", HEAD_TOO_LARGE)
            self.transport.write(_raw_answer(431, "Request Header Fields Too Large", body))
            if self.transport.can_write_eof():
                self.transport.write_eof()
                self.loop.call_later(REFUSAL_LINGER_S, self.transport.close)
            else:
                self.transport.close()

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
            self.transport.write(_raw_answer(400, "Bad Request", body))
            self.transport.close()

    return FrontDoor


def _raw_answer(status: int, reason: str, body: bytes) -> bytes:
    """A whole JSON answer written straight to the socket (no request reached the app)."""
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode("ascii") + body


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


def http_protocol(head_timeout: float, max_connections: int,
                  parser: HttpParser = "auto") -> type[asyncio.Protocol]:
    """httptools' protocol when installed (faster), else h11's, behind the front door;
    ``parser`` names one (ImportError when httptools is asked for and missing)."""
    if parser != "h11":
        try:
            from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
            return front_door_protocol(HttpToolsProtocol, head_timeout, max_connections)
        except ImportError:
            if parser == "httptools":
                raise
    from uvicorn.protocols.http.h11_impl import H11Protocol
    return front_door_protocol(H11Protocol, head_timeout, max_connections)
