"""fromRequest patterns run in the engine's own bounded worker pool: a few workers, one per run,
and a bounded queue, so one run's runaway patterns cannot starve the others' streams."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from replay_engine import ReplayEngine
from replay_engine.engine import resolving
from replay_engine.errors import PlaceholderError
from tests.unit.enginetools import scripts

pytestmark = pytest.mark.anyio

MSGS = [{"role": "user", "content": "ticket T-42"}]
FIN = {"type": "finish", "reason": {"kind": "stop"}}


def _entry() -> Any:
    from replay_engine import ChunksEntry

    return ChunksEntry(kind="chunks", chunks=[
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "{{fromRequest:T-([0-9]+)}}"}, FIN])


async def _text(engine: ReplayEngine, session: str, run: str = "default") -> str:
    handle = await engine.open_call_async(session, MSGS, run=run)
    return "".join([c.get("text", "") async for c in handle.chunks()])


async def test_patterns_wait_for_the_engines_own_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = ReplayEngine(scripts(*([_entry()] for _ in range(6))), placeholder_workers=2)
    assert await _text(engine, "first") == "42"
    limiter = engine.placeholder_limiter
    assert limiter is not None and limiter.total_tokens == 2
    assert limiter is not anyio.to_thread.current_default_thread_limiter()
    holders = [object(), object()]
    for holder in holders:  # every worker busy: calls now queue on this limiter
        await limiter.acquire_on_behalf_of(holder)
    monkeypatch.setattr(resolving, "PLACEHOLDER_QUEUE", 2)
    results: dict[str, str] = {}
    async with anyio.create_task_group() as tg:
        async def call(session: str, run: str) -> None:
            results[session] = await _text(engine, session, run)

        tg.start_soon(call, "a", "r1")
        tg.start_soon(call, "b", "r2")
        with anyio.fail_after(5):
            while engine._pool.waiting < 2:
                await anyio.sleep(0)
        with pytest.raises(PlaceholderError, match="already waiting"):
            await _text(engine, "c", "r3")  # the queue is full: refused at once
        assert results == {}
        for holder in holders:
            limiter.release_on_behalf_of(holder)
    assert results == {"a": "42", "b": "42"}


async def test_one_run_uses_one_worker_at_a_time() -> None:
    engine = ReplayEngine(scripts(*([_entry()] for _ in range(4))), placeholder_workers=4)
    assert await _text(engine, "s0", run="busy") == "42"
    run_limiter = engine._runs["busy"].limiter
    assert run_limiter is not None and run_limiter.total_tokens == 1
    holder = object()
    await run_limiter.acquire_on_behalf_of(holder)
    done: list[str] = []
    async with anyio.create_task_group() as tg:
        async def busy() -> None:
            done.append(await _text(engine, "s1", run="busy"))

        tg.start_soon(busy)
        with anyio.fail_after(5):  # another run is not held up by the busy run's slot
            assert await _text(engine, "s0", run="other") == "42"
        assert done == []
        run_limiter.release_on_behalf_of(holder)
    assert done == ["42"]


def test_the_pool_keeps_a_core_for_the_event_loop() -> None:
    import os

    assert 1 <= resolving.PLACEHOLDER_WORKERS <= max(1, (os.cpu_count() or 2) - 1)
