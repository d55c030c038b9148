"""Accepting connections in bursts: every connection waiting on the listening socket is taken
in one turn of the event loop, whatever the loop.

uvloop (which ``dsh-replay serve`` runs when installed) accepts one waiting connection per turn
of its loop. While streams are in flight a turn lasts up to a round of stream work
(``rounds.ROUND_S``), so the 50th of 50 agents connecting together waited about 50 turns
before its request was even read. ``BurstListener`` watches the listening socket itself and
hands each accepted socket to the loop as an accepted connection, the same on either loop.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from collections.abc import Callable

BURST = 128
"""Connections taken from the listening socket per readiness, at most (then the loop runs)."""
PAUSE_S = 1.0
"""How long accepting pauses when the process is out of file descriptors or memory."""
_EXHAUSTED = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class BurstListener:
    """Accepts every waiting connection on ``sock`` at each readiness and serves it with a
    protocol from ``factory``; stands in for the ``asyncio.Server`` uvicorn keeps (``close``,
    ``wait_closed``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket,
                 factory: Callable[[], asyncio.Protocol], backlog: int) -> None:
        self._loop = loop
        self._sock = sock
        self._factory = factory
        self._opening: set[asyncio.Task[object]] = set()
        self._closed = False
        sock.setblocking(False)
        sock.listen(backlog)
        loop.add_reader(sock.fileno(), self._accept)

    def _accept(self) -> None:
        """Take the waiting connections (up to ``BURST``), each opened as a transport."""
        for _ in range(BURST):
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as exc:
                if exc.errno in _EXHAUSTED and not self._closed:
                    # Like asyncio's own server: stop watching a while rather than spin.
                    self._loop.remove_reader(self._sock.fileno())
                    self._loop.call_later(PAUSE_S, self._resume)
                return
            conn.setblocking(False)
            task: asyncio.Task[object] = self._loop.create_task(self._open(conn))
            self._opening.add(task)
            task.add_done_callback(self._opening.discard)

    async def _open(self, conn: socket.socket) -> object:
        """Serve ``conn`` as an accepted connection (closed if the loop cannot take it)."""
        try:
            return await self._loop.connect_accepted_socket(self._factory, conn)
        except BaseException:
            conn.close()
            raise

    def _resume(self) -> None:
        if not self._closed:
            self._loop.add_reader(self._sock.fileno(), self._accept)

    def close(self) -> None:
        """Stop accepting; the connections already open are left to the server's shutdown."""
        if self._closed:
            return
        self._closed = True
        self._loop.remove_reader(self._sock.fileno())

    async def wait_closed(self) -> None:
        """Wait until the connections accepted before ``close`` have their transports."""
        if self._opening:
            await asyncio.gather(*self._opening, return_exceptions=True)


def burst_listener(loop: asyncio.AbstractEventLoop, sock: socket.socket,
                   factory: Callable[[], asyncio.Protocol], backlog: int) -> BurstListener | None:
    """A ``BurstListener`` on ``sock``, or None where the loop cannot watch a socket itself
    (Windows' proactor loop): the caller then uses the loop's own server."""
    try:
        return BurstListener(loop, sock, factory, backlog)
    except NotImplementedError:
        return None
