"""Streams in flight take their turns through one queue, and each turn of the event loop
releases only one round of them: with many streams, something else on the loop (a new
session's request, a debugger key) waits for one round, not for a turn of every stream."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from replay_engine import ReplayEngine, load_scenario
from replay_engine import events as ev
from replay_engine.server import ReplayServer, create_app
from replay_engine.server.app import served_by
from replay_engine.server.rounds import Rounds
from tests.wire.test_stream_turn import WORDS, _long_log

pytestmark = pytest.mark.anyio

STREAMS = 6


@pytest.fixture
def many_calls(tmp_path: Path) -> Path:
    root = tmp_path / "many"
    root.mkdir()
    _long_log(root / "session.jsonl", "first", 1)
    for n in range(1, STREAMS):
        _long_log(root / f"session.{n}.jsonl", f"child-{n}", 1 + n)
    return root


async def _most_streams(root: Path, round_s: float) -> tuple[int, int]:
    """Stream STREAMS long calls at once; once half the chunks are served (every stream has
    started), the most streams that served chunks between two consecutive wake-ups of a task
    that only yields; and the chunks served in all."""
    engine = ReplayEngine(load_scenario(root).scripts)
    app = create_app(engine)
    streams = served_by(app).streams
    streams.turn_s = float("inf")  # turns end on their chunk count alone
    streams.rounds.round_s = round_s
    served = 0
    serving: set[int] = set()

    def count(event: object) -> None:
        nonlocal served
        if type(event) is ev.ChunkServed:
            served += 1
            serving.add(event.call_id)  # type: ignore[attr-defined]

    engine.subscribe(count)
    done = asyncio.Event()
    most = 0

    async def probe() -> None:
        nonlocal most
        while not done.is_set():
            serving.clear()
            await asyncio.sleep(0)
            if served > STREAMS * WORDS // 2:
                most = max(most, len(serving))

    async with ReplayServer(engine, app=app) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        watcher = asyncio.create_task(probe())
        answers = await asyncio.gather(*(
            http.post("/replay/v1/stream", json={"sessionId": f"s{i}"}) for i in range(STREAMS)))
        done.set()
        await watcher
    assert all(a.status_code == 200 for a in answers)
    return most, served


async def test_a_spent_round_releases_one_stream_per_loop_turn(many_calls: Path) -> None:
    # A zero round: each turn of the loop releases one queued stream, whatever its cost.
    most, served = await _most_streams(many_calls, 0.0)
    assert served >= STREAMS * WORDS
    assert most == 1


async def test_an_ample_round_releases_every_stream(many_calls: Path) -> None:
    most, _ = await _most_streams(many_calls, float("inf"))
    assert most > 1


async def test_the_queue_is_first_come_first_served_and_skips_the_cancelled() -> None:
    rounds = Rounds(round_s=0.0)  # one stream per turn of the loop
    order: list[str] = []

    async def stream(name: str) -> None:
        await rounds.pause(0.001)
        order.append(name)

    tasks = {name: asyncio.create_task(stream(name)) for name in "abcd"}
    await asyncio.sleep(0)  # every stream is queued now
    assert rounds.waiting == 4
    tasks["b"].cancel()
    await asyncio.gather(*tasks.values(), return_exceptions=True)
    assert order == ["a", "c", "d"]
    assert rounds.waiting == 0
