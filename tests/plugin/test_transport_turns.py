"""The in-process transport hands the client what the app writes in one turn of the servers'
loop as one delivery: an answer served without a wait wakes the client once, and what was
written before a wait reaches the client before the wait ends."""

from __future__ import annotations

import asyncio
import queue
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.types import Receive, Scope, Send

from replay_engine.testing.servers import LoopThread
from replay_engine.testing.transport import Ended, Exchange

WAIT_S = 30.0
"""Bound on waiting for a delivery (they come at once; this only stops a broken test)."""
HEAD = {"type": "http.response.start", "status": 200, "headers": []}


@pytest.fixture
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.close()


def body(data: bytes, more: bool) -> dict[str, Any]:
    return {"type": "http.response.body", "body": data, "more_body": more}


def exchange(loop: LoopThread, app: Any) -> queue.SimpleQueue[Any]:
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions"}
    Exchange(app, scope, b"{}", loop.loop, inbox.put).start()
    return inbox


def test_an_answer_served_without_a_wait_is_one_delivery(loop: LoopThread) -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send(HEAD)
        await send(body(b"data: 1\n\n", True))
        await send(body(b"data: 2\n\n", False))

    inbox = exchange(loop, app)
    first = inbox.get(timeout=WAIT_S)
    assert first == [HEAD, body(b"data: 1\n\n", True), body(b"data: 2\n\n", False)]
    ended = inbox.get(timeout=WAIT_S)
    assert isinstance(ended, Ended) and ended.error is None


def test_what_was_written_before_a_wait_arrives_during_it(loop: LoopThread) -> None:
    go_on = asyncio.Event()  # bound to the servers' loop when the app awaits it

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send(HEAD)
        await send(body(b"data: 1\n\n", True))
        await go_on.wait()
        await send(body(b"data: 2\n\n", False))

    inbox = exchange(loop, app)
    assert inbox.get(timeout=WAIT_S) == [HEAD, body(b"data: 1\n\n", True)]
    loop.post(go_on.set)
    assert inbox.get(timeout=WAIT_S) == [body(b"data: 2\n\n", False)]
    assert isinstance(inbox.get(timeout=WAIT_S), Ended)
