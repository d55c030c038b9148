"""Agents connecting together are all accepted in one turn of the event loop, on asyncio's
loop and on uvloop alike (uvloop's own server takes one waiting connection per turn, so the
50th of 50 agents waited 50 turns, each a round of stream work, before its request was read)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import pytest
import uvloop
from starlette.types import Receive, Scope, Send

from replay_engine.server.runner import EmbeddedUvicorn

AGENTS = 40

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


async def _turns_until_all_served() -> tuple[int, int]:
    """Connect AGENTS clients while the loop is held, then count the loop's turns until the
    app has seen every one of their requests; also the answers the clients then read."""
    seen = 0
    everyone = asyncio.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal seen
        seen += 1
        if seen == AGENTS:
            everyone.set()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    server = EmbeddedUvicorn(app)
    url = await server.listen("127.0.0.1", 0)
    port = int(url.rsplit(":", 1)[1])
    clients = []
    try:
        # The kernel completes these connections into the listening backlog while the loop
        # is held here: when it runs again they are all waiting.
        for _ in range(AGENTS):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            clients.append(sock)
        turns = 0
        loop = asyncio.get_running_loop()

        def tick() -> None:
            nonlocal turns
            if not everyone.is_set():
                turns += 1
                loop.call_soon(tick)

        loop.call_soon(tick)
        await asyncio.wait_for(everyone.wait(), 30)
        answered = 0
        for sock in clients:
            sock.setblocking(False)
            data = b""
            while chunk := await asyncio.wait_for(loop.sock_recv(sock, 4096), 30):
                data += chunk
            answered += data.startswith(b"HTTP/1.1 200") and data.endswith(b"ok")
        return turns, answered
    finally:
        for sock in clients:
            sock.close()
        await server.stop()


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_waiting_connections_are_accepted_together(loop: str) -> None:
    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        turns, answered = runner.run(_turns_until_all_served())
    assert answered == AGENTS
    # Accepting, reading the head and running the app take a few turns per connection, all
    # connections in step; one connection per turn would take at least AGENTS turns.
    assert turns < AGENTS // 2, turns
