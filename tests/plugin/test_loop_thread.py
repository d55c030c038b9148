"""The plugin's server loop thread: calls return the loop's result or raise its error on the
caller's thread, and clean-up queued with ``post_later`` waits for the next wake, running
before it in the order queued."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from replay_engine.testing.servers import LoopThread


@pytest.fixture
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.close()


def test_call_runs_on_the_loop_thread_and_returns_its_result(loop: LoopThread) -> None:
    assert loop.call(threading.current_thread) is loop._thread
    assert loop.call(lambda: 42) == 42


def test_call_raises_the_loop_side_error_here(loop: LoopThread) -> None:
    def fail() -> None:
        raise LookupError("no such run")

    with pytest.raises(LookupError, match="no such run"):
        loop.call(fail)


def test_work_queued_later_waits_for_the_next_wake_and_runs_first(loop: LoopThread) -> None:
    ran: list[str] = []
    loop.post_later(lambda: ran.append("end 1"))
    loop.post_later(lambda: ran.append("end 2"))

    async def look() -> list[str]:  # loop activity that is no wake of ours
        return list(ran)

    assert asyncio.run_coroutine_threadsafe(look(), loop.loop).result() == []
    loop.post(lambda: ran.append("begin"))
    assert loop.call(lambda: list(ran)) == ["end 1", "end 2", "begin"]


@pytest.mark.parametrize("wake", ["call", "run"])
def test_call_and_run_wake_for_work_queued_later(loop: LoopThread, wake: str) -> None:
    ran: list[str] = []
    loop.post_later(lambda: ran.append("end"))

    async def look() -> list[str]:
        return list(ran)

    seen = loop.call(lambda: list(ran)) if wake == "call" else loop.run(look())
    assert seen == ["end"]


def test_closing_runs_what_was_queued_later() -> None:
    thread = LoopThread()
    ran: list[str] = []
    thread.post_later(lambda: ran.append("end"))
    thread.close()
    assert ran == ["end"]
