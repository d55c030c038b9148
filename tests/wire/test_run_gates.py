"""Each run steps on its own: step mode, breakpoints, pause and continue of run A never hold
or release run B's calls; control errors repeat only the start of what they refuse."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from replay_engine.engine.events import CallFinished, CallPaused
from replay_engine.server import serve_scenario
from tests.wire.wire_helpers import EngineWatch, sdk, sdk_stream, text_entry, write_scenario

pytestmark = pytest.mark.anyio


async def _call(url: str, run: str | None = None) -> str:
    """One streamed call on ``run``'s routes; the text it got."""
    async with sdk(url, run) as client:
        got = await sdk_stream(client, None)
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in got if c["choices"])


def _scenario(tmp_path: Path) -> Path:
    return write_scenario(tmp_path / "sc", [text_entry("one two three", parts=3)])


async def test_the_mode_of_run_a_holds_run_a_only(tmp_path: Path) -> None:
    async with serve_scenario(_scenario(tmp_path)) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        watch = EngineWatch(server.engine)
        r = await http.post("/runs/A/replay/v1/mode", json={"mode": "chunk"})
        assert r.json() == {"ok": True, "mode": "chunk"}
        assert server.engine.mode_of("A") == "chunk" and server.engine.mode_of("B") == "run"
        assert (await http.get("/runs/A/replay/v1/state")).json()["mode"] == "chunk"
        assert (await http.get("/runs/B/replay/v1/state")).json()["mode"] == "run"
        held = asyncio.create_task(_call(server.url, "A"))
        (paused,) = await watch.wait_for(CallPaused)
        assert paused.run == "A"
        assert await asyncio.wait_for(_call(server.url, "B"), 10) == "one two three"  # not held
        assert not held.done()
        r = await http.post("/runs/B/replay/v1/mode", json={"mode": "run"})  # B's switch
        assert r.status_code == 200 and not held.done()  # releases nothing of A
        assert server.engine.mode_of("A") == "chunk"
        r = await http.post("/runs/A/replay/v1/step", json={"how": "continue"})
        assert r.json() == {"ok": True}
        await asyncio.wait_for(held, 10)
        assert server.engine.mode_of("A") == "run"
        finished = await watch.wait_for(CallFinished, 2)
        assert sorted(e.run for e in finished) == ["A", "B"]


async def test_breakpoints_and_pause_belong_to_their_run(tmp_path: Path) -> None:
    async with serve_scenario(_scenario(tmp_path)) as server:
        engine = server.engine
        watch = EngineWatch(engine)
        assert engine.toggle_breakpoint(0, 0, run="A") is True
        assert engine.breakpoints_of("A") == frozenset({(0, 0)})
        assert engine.breakpoints == frozenset() and engine.breakpoints_of("B") == frozenset()
        held = asyncio.create_task(_call(server.url, "A"))
        await watch.wait_for(CallPaused)
        await asyncio.wait_for(_call(server.url), 10)  # the default run
        await asyncio.wait_for(_call(server.url, "B"), 10)
        assert engine.paused_sessions("A") == [None] and engine.paused_sessions("B") == []
        engine.set_mode("run", run="B")  # another run's "continue" releases nothing here
        assert engine.paused_sessions("A") == [None]
        engine.set_mode("run", run="A")
        await asyncio.wait_for(held, 10)
        engine.forget("A")  # a deleted run takes its gate along
        assert engine.breakpoints_of("A") == frozenset()


async def test_control_errors_repeat_only_the_start_of_a_rejected_value(tmp_path: Path) -> None:
    huge = "x" * 20_000_000
    async with serve_scenario(_scenario(tmp_path)) as server, \
            httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        for path, body in [("/replay/v1/mode", {"mode": huge}),
                           ("/replay/v1/step", {"how": huge}),
                           ("/replay/v1/cancel", {"sessionId": [huge]}),
                           ("/replay/v1/stream", {"messages": [], "sessionId": huge})]:
            r = await http.post(path, json=body, headers={"x-session-id": huge[:100]})
            assert 400 <= r.status_code < 500, (path, r.status_code)
            assert len(r.content) < 4000, (path, len(r.content))
        r = await http.post("/replay/v1/mode", json={"mode": huge})
        message = r.json()["error"]["message"]
        assert "20000000 characters" in message and message.startswith("mode must be")
        assert server.engine.mode == "run"
