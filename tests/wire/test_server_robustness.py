"""The server under awkward clients and slow inputs: clients that leave mid-body, reloads the
server is not told about, and a runaway ``fromRequest`` pattern beside a live stream."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from starlette.types import Receive, Scope, Send

from replay_engine import ReplayEngine, load_scenario
from replay_engine import events as ev
from replay_engine.server import ReplayServer, create_app, serve_scenario
from tests.wire.wire_helpers import EngineWatch, sdk, text_entry, write_scenario

pytestmark = pytest.mark.anyio

BODY_ROUTES = ["/v1/chat/completions", "/replay/v1/stream", "/replay/v1/cancel",
               "/replay/v1/step", "/replay/v1/pause", "/replay/v1/mode",
               "/runs/other/replay/v1/stream"]


class FinishedRequests:
    """Wraps the real app and counts HTTP requests whose handling has ended (either way)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.count = 0
        self._changed = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        finally:
            if scope["type"] == "http":
                self.count += 1
                self._changed.set()

    async def wait_for(self, count: int) -> None:
        """Wait until ``count`` requests have ended."""
        async def loop() -> None:
            while self.count < count:
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(loop(), 10)


async def _leave_mid_body(url: str, path: str) -> None:
    """Send a request's headers and the start of its body, then close the connection."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                 "Content-Length: 200\r\n\r\n{\"sessionId\": ".encode())
    await writer.drain()
    writer.close()
    await writer.wait_closed()


async def test_a_client_leaving_mid_body_binds_nothing_and_logs_no_error(
        samples: Path, caplog: pytest.LogCaptureFixture) -> None:
    engine = ReplayEngine(load_scenario(samples / "basic-chat").scripts)
    app = FinishedRequests(create_app(engine))
    caplog.set_level(logging.WARNING, logger="uvicorn.error")
    async with ReplayServer(engine, app=app) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        for n, path in enumerate(BODY_ROUTES, 1):
            await _leave_mid_body(server.url, path)
            await app.wait_for(n)
        health = await http.get("/healthz")
        state = (await http.get("/replay/v1/state")).json()
        other = (await http.get("/runs/other/replay/v1/state")).json()
        journal = (await http.get("/replay/v1/journal")).json()
        # The server still serves a whole call afterwards.
        served = await http.post("/replay/v1/stream", json={"sessionId": "after"})
    assert health.json() == {"status": "ok"}
    assert state["bindings"] == [] and other["bindings"] == [] and journal["calls"] == []
    assert served.status_code == 200 and served.text.splitlines()[-1].startswith('{"type":"finish"')
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert problems == [], [r.getMessage() for r in problems]


def _log(path: Path, session_id: str, created_at: int, text: str) -> None:
    lines = [{"type": "session", "id": session_id, "createdAt": created_at}]
    lines += [{"type": "assistant/chunk", "seq": i, "time": i,
               "data": {"turn": 1, "step": 1, "chunk": chunk}}
              for i, chunk in enumerate(text_entry(text)["chunks"])]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def _headers(scenario: Any) -> dict[str, Any]:
    return {name: h.to_json() for name, h in scenario.headers.items()}


async def test_scripts_route_follows_a_reload_made_behind_its_back(tmp_path: Path) -> None:
    root = tmp_path / "s"
    root.mkdir()
    _log(root / "session.jsonl", "before", 1, "old")
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        first = (await http.get("/replay/v1/scripts")).json()
        # As the debugger's file watcher does: load anew and reload the engine directly.
        _log(root / "session.jsonl", "after", 2, "new")
        _log(root / "session.1.jsonl", "child", 3, "kid")
        fresh = load_scenario(root)
        server.engine.reload(fresh.scripts)
        untold = (await http.get("/replay/v1/scripts")).json()
        server.set_scenario(fresh)
        told = (await http.get("/runs/r/replay/v1/scripts")).json()
        assert server.scenario is fresh
    assert first["headers"] == {"session.jsonl": {"id": "before", "createdAt": 1, "seedLength": 0}}
    want = {"session.jsonl": {"id": "after", "createdAt": 2, "seedLength": 0},
            "session.1.jsonl": {"id": "child", "createdAt": 3, "seedLength": 0}}
    assert _headers(fresh) == want
    assert untold["headers"] == want and told["headers"] == want
    assert told == untold and told == fresh.to_json() | {"scripts": told["scripts"]}
    assert [s["entries"][0]["chunks"][1]["text"] for s in told["scripts"]] == ["new", "kid"]


async def test_scripts_route_asks_a_scenario_provider_on_every_request(tmp_path: Path) -> None:
    root = tmp_path / "s"
    root.mkdir()
    _log(root / "session.jsonl", "one", 1, "x")
    current = [load_scenario(root)]
    engine = ReplayEngine(current[0].scripts)
    async with ReplayServer(engine, scenario=lambda: current[0]) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        before = (await http.get("/replay/v1/scripts")).json()["headers"]
        _log(root / "session.jsonl", "two", 2, "y")
        current[0] = load_scenario(root)
        engine.reload(current[0].scripts)
        after = (await http.get("/replay/v1/scripts")).json()["headers"]
        assert server.scenario is current[0]
    assert before == {"session.jsonl": {"id": "one", "createdAt": 1, "seedLength": 0}}
    assert after == {"session.jsonl": {"id": "two", "createdAt": 2, "seedLength": 0}}


async def test_a_runaway_pattern_does_not_stall_another_sessions_stream(tmp_path: Path) -> None:
    flowing = {"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "text"},
        *({"type": "text-delta", "index": 0, "text": f"{n} "} for n in range(3000)),
        {"type": "finish", "reason": {"kind": "stop"}}]}
    runaway = text_entry("{{fromRequest:(a|aa)+$}}")
    root = write_scenario(tmp_path / "s", [flowing], children=[[runaway]])
    async with serve_scenario(root, pace_ms=5) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        watch = EngineWatch(server.engine)
        lines: list[str] = []

        async def read_flowing() -> None:
            async with http.stream("POST", "/replay/v1/stream", json={"sessionId": "flow"}) as r:
                lines.extend([x async for x in r.aiter_lines()])

        reader = asyncio.create_task(read_flowing())
        await watch.wait_for(ev.ChunkServed)
        client = sdk(server.url)
        with pytest.raises(openai.InternalServerError) as caught:
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "a" * 40 + "!"}],
                stream=True, extra_headers={"X-Session-Id": "slow"})
        await client.close()
        failed = (await watch.wait_for(ev.CallFailed))[0]
        assert (await http.post("/replay/v1/cancel", json={"sessionId": "flow"})).json() == {
            "ok": True, "cancelled": 1}
        await asyncio.wait_for(reader, 10)
    events = watch.events
    started = next(i for i, e in enumerate(events)
                   if isinstance(e, ev.CallStarted) and e.session == "slow")
    ended = events.index(failed)
    during = [e for e in events[started:ended]
              if isinstance(e, ev.ChunkServed) and e.session == "flow"]
    # The pattern runs for at least its 1 s timeout; at 5 ms a chunk the other stream serves
    # many chunks meanwhile (none at all when the pattern held the event loop).
    assert len(during) >= 5, len(during)
    assert failed.session == "slow" and failed.code == "PLACEHOLDER"
    assert "ran longer than 1s" in failed.message and "[session slow, script 1, call 0" in \
        failed.message
    assert caught.value.status_code == 500
    assert caught.value.body["code"] == "PLACEHOLDER"  # type: ignore[index]
    record = [r for r in server.engine.journal() if r.session == "slow"]
    assert [(r.outcome, r.code) for r in record] == [("failed", "PLACEHOLDER")]
    assert len(lines) > len(during)
