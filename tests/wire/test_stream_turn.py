"""A stream's turn ends on its chunk count or on its clock, whichever comes first: between two
visits of the event loop to anything else, streams in flight serve at most one turn each."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import httpx
import pytest

from replay_engine import ReplayEngine, load_scenario
from replay_engine import events as ev
from replay_engine.server import ReplayServer, create_app
from replay_engine.server.app import served_by
from replay_engine.server.calls import YIELD_MIN
from tests.wire.wire_helpers import text_entry

pytestmark = pytest.mark.anyio

STREAMS = 2
WORDS = 600


def _long_log(path: Path, session_id: str, created_at: int) -> None:
    """A log with one call streaming WORDS text deltas."""
    text = " ".join(f"w{i}" for i in range(WORDS))
    lines = [{"type": "session", "id": session_id, "createdAt": created_at}]
    lines += [{"type": "assistant/chunk", "seq": i, "time": i,
               "data": {"turn": 1, "step": 1, "chunk": chunk}}
              for i, chunk in enumerate(text_entry(text, parts=WORDS)["chunks"])]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


async def _widest_gap(root: Path, turn_s: float) -> tuple[int, int]:
    """Stream STREAMS long calls at once; the most chunks served between two consecutive
    wake-ups of a task that only yields, and the chunks served in all."""
    engine = ReplayEngine(load_scenario(root).scripts)
    app = create_app(engine)
    served_by(app).streams.turn_s = turn_s
    served = 0

    def count(event: object) -> None:
        nonlocal served
        if type(event) is ev.ChunkServed:
            served += 1

    engine.subscribe(count)
    done = asyncio.Event()
    widest = 0

    async def probe() -> None:
        nonlocal widest
        last = served
        while not done.is_set():
            await asyncio.sleep(0)
            widest = max(widest, served - last)
            last = served

    async with ReplayServer(engine, app=app) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        watcher = asyncio.create_task(probe())
        answers = await asyncio.gather(*(
            http.post("/replay/v1/stream", json={"sessionId": f"s{i}"}) for i in range(STREAMS)))
        done.set()
        await watcher
    assert all(a.status_code == 200 for a in answers)
    return widest, served


@pytest.fixture
def long_calls(tmp_path: Path) -> Path:
    root = tmp_path / "long"
    root.mkdir()
    _long_log(root / "session.jsonl", "first", 1)
    for n in range(1, STREAMS):
        _long_log(root / f"session.{n}.jsonl", f"child-{n}", 1 + n)
    return root


async def test_a_turn_past_its_time_yields_after_the_fewest_chunks(long_calls: Path) -> None:
    # A zero time budget: every turn is over at its first clock reading.
    widest, served = await _widest_gap(long_calls, 0.0)
    assert served >= STREAMS * WORDS
    assert widest <= STREAMS * YIELD_MIN


async def test_without_a_time_budget_a_turn_runs_its_whole_chunk_count(long_calls: Path) -> None:
    # The same streams on the count alone serve far more between two visits to the loop.
    widest, _ = await _widest_gap(long_calls, math.inf)
    assert widest > STREAMS * YIELD_MIN
