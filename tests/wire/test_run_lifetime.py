"""Runs do not pile up: reads create none, reset empties the journal, DELETE /runs/{run}
drops the run, and a run's journal keeps its newest calls only."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from replay_engine import ReplayEngine, load_scenario
from replay_engine import events as ev
from replay_engine.server import ReplayServer, serve_scenario
from tests.wire.wire_helpers import text_entry, write_scenario

pytestmark = pytest.mark.anyio

MSG = {"messages": [{"role": "user", "content": "hi"}]}


def _scenario(tmp_path: Path, calls: int = 1) -> Path:
    return write_scenario(tmp_path / "sc", [text_entry(f"answer {i}") for i in range(calls)])


async def test_read_only_routes_create_no_run(tmp_path: Path) -> None:
    async with serve_scenario(_scenario(tmp_path)) as server, httpx.AsyncClient() as client:
        for n in range(50):
            prefix = f"{server.url}/runs/probe-{n}/replay/v1"
            assert (await client.get(prefix + "/state")).status_code == 200
            assert (await client.get(prefix + "/journal")).json()["calls"] == []
            assert (await client.post(prefix + "/assert-consumed")).status_code == 409
            assert (await client.post(prefix + "/pause", json={"sessionId": "s"})).status_code == 404
            assert (await client.post(prefix + "/cancel", json={})).json()["cancelled"] == 0
        assert server.engine.runs() == []


async def test_reset_clears_the_journal_and_delete_drops_the_run(tmp_path: Path) -> None:
    async with serve_scenario(_scenario(tmp_path)) as server, httpx.AsyncClient() as client:
        engine = server.engine
        seen: list[ev.EngineEvent] = []
        engine.subscribe(seen.append, chunks=False)
        run = f"{server.url}/runs/t1"
        assert (await client.post(run + "/replay/v1/stream", json=MSG)).status_code == 200
        assert len((await client.get(run + "/replay/v1/journal")).json()["calls"]) == 1
        assert (await client.post(run + "/replay/v1/reset")).status_code == 200
        assert (await client.get(run + "/replay/v1/journal")).json()["calls"] == []
        assert (await client.post(run + "/replay/v1/stream", json=MSG)).status_code == 200
        assert engine.runs() == ["t1"]
        deleted = await client.delete(run)
        assert deleted.status_code == 200 and deleted.json() == {"ok": True}
        assert engine.runs() == []
        assert any(isinstance(e, ev.RunForgotten) and e.run == "t1" for e in seen)
        assert (await client.delete(run)).status_code == 404
        again = await client.post(run + "/replay/v1/stream", json=MSG)  # a fresh run
        assert again.status_code == 200 and "answer 0" in again.text


async def test_the_journal_keeps_the_newest_calls_and_says_once_that_it_drops(
        tmp_path: Path) -> None:
    scenario = load_scenario(_scenario(tmp_path, calls=7))
    engine = ReplayEngine(scenario.scripts, journal_limit=3)
    trimmed: list[ev.JournalTrimmed] = []
    engine.subscribe(lambda e: trimmed.append(e) if isinstance(e, ev.JournalTrimmed) else None,
                     chunks=False)
    async with ReplayServer(engine) as server, httpx.AsyncClient() as client:
        for _ in range(7):
            answer = await client.post(server.url + "/replay/v1/stream",
                                       json={"sessionId": "s", **MSG})
            assert answer.status_code == 200
        journal = (await client.get(server.url + "/replay/v1/journal")).json()["calls"]
        assert [c["callIndex"] for c in journal] == [4, 5, 6]
        state = (await client.get(server.url + "/replay/v1/state")).json()
        assert state["journalDropped"] == 4
        assert state["consumed"] is True  # the verdict does not depend on the journal
    assert [(e.run, e.limit) for e in trimmed] == [("default", 3)]


def test_a_journal_limit_below_one_is_refused() -> None:
    from replay_engine.errors import ConfigError

    with pytest.raises(ConfigError, match="journal limit"):
        ReplayEngine([], journal_limit=0)


async def test_deleted_runs_leave_nothing_behind(tmp_path: Path) -> None:
    async with serve_scenario(_scenario(tmp_path)) as server, httpx.AsyncClient() as client:
        for n in range(300):
            run = f"{server.url}/runs/r{n}"
            await client.post(run + "/replay/v1/stream", json=MSG)
            assert (await client.delete(run)).status_code == 200
        assert server.engine.runs() == []
