"""Debugger routes: scripts with origins, step modes, pause/step, and reload."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from replay_engine import ReplayEngine, load_scenario
from replay_engine import events as ev
from replay_engine.server import ReplayServer, serve_scenario
from tests.wire.wire_helpers import EngineWatch, text_entry, write_scenario

pytestmark = pytest.mark.anyio


async def test_scripts_route_gives_each_entry_its_origin(tmp_path: Path, samples: Path) -> None:
    root = write_scenario(tmp_path / "s", primary_log=samples / "basic-chat" / "session.jsonl")
    (root / "replay.override.json").write_text(json.dumps({"patches": [
        {"at": 1, "entry": {"kind": "throw", "chunks": [], "message": "x", "code": "SERVER"}},
        {"at": 2, "entry": text_entry("retry")}]}))
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        body = (await http.get("/replay/v1/scripts")).json()
        per_run = (await http.get("/runs/other/replay/v1/scripts")).json()
    assert body == per_run
    assert body["ok"] is True
    assert [e["origin"] for e in body["scripts"][0]["entries"]] == ["derived", "patched", "appended"]
    # A call taken from the log keeps its recorded turn/step; an appended one has none.
    assert body["scripts"][0]["entries"][1] == {"kind": "throw", "chunks": [], "message": "x",
                                                "code": "SERVER", "origin": "patched",
                                                "callKey": "1/2"}
    assert [e.get("callKey") for e in body["scripts"][0]["entries"]] == ["1/1", "1/2", None]
    assert body["headers"] == {"session.jsonl": {"id": "sample-basic-chat",
                                                 "createdAt": 1767225600000, "seedLength": 0}}


async def test_chunk_mode_pauses_and_steps_through_the_control_api(samples: Path) -> None:
    async with serve_scenario(samples / "basic-chat") as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        watch = EngineWatch(server.engine)
        assert (await http.post("/replay/v1/mode", json={"mode": "chunk"})).json() == {
            "ok": True, "mode": "chunk"}
        lines: list[dict[str, object]] = []

        async def read() -> None:
            async with http.stream("POST", "/replay/v1/stream", json={"sessionId": "s"}) as r:
                lines.extend([json.loads(x) async for x in r.aiter_lines()])

        reader = asyncio.create_task(read())
        await watch.wait_for(ev.CallPaused)
        state = (await http.get("/replay/v1/state")).json()["bindings"][0]
        assert (state["status"], state["chunksServed"]) == ("paused", 0)
        assert (await http.post("/replay/v1/step", json={"sessionId": "s", "how": "chunk"})).json() \
            == {"ok": True}
        paused = await watch.wait_for(ev.CallPaused, 2)
        assert paused[-1].chunk_index == 1
        assert (await http.post("/replay/v1/step", json={"sessionId": "s", "how": "call"})).json() \
            == {"ok": True}
        await reader
        # Pausing needs a call in flight; stepping an unknown session is a 404.
        missing = await http.post("/replay/v1/pause", json={"sessionId": "s"})
        unknown = await http.post("/replay/v1/step", json={"sessionId": "nobody"})
        bad_how = await http.post("/replay/v1/step", json={"how": "leap"})
        assert (await http.post("/replay/v1/mode", json={"mode": "run"})).status_code == 200
    assert len(lines) == 10 and lines[-1] == {"type": "finish", "reason": {"kind": "tool-calls"}}
    assert missing.status_code == 404 and unknown.status_code == 404
    assert bad_how.status_code == 400


async def test_pause_holds_a_paced_stream_until_continue(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("a b c d e f g h", parts=8)])
    async with serve_scenario(root, pace_ms=5) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        watch = EngineWatch(server.engine)
        async with http.stream("POST", "/replay/v1/stream", json={}) as response:
            lines = response.aiter_lines()
            first = json.loads(await anext(lines))
            assert (await http.post("/replay/v1/pause", json={})).json() == {"ok": True}
            await watch.wait_for(ev.CallPaused)
            assert server.engine.paused_sessions() == [None]
            assert (await http.post("/replay/v1/step", json={"how": "continue"})).json() == {
                "ok": True}
            rest = [json.loads(x) async for x in lines]
    assert first["type"] == "block-start"
    assert [c["type"] for c in rest][-1] == "finish" and len(rest) == 11


async def test_reload_swaps_scripts_and_keeps_the_last_good_ones(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("old")])
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        (root / "replay.override.json").write_text(json.dumps([text_entry("new"), text_entry("2")]))
        reloaded = await http.post("/replay/v1/reload")
        (root / "replay.override.json").write_text("[{")
        broken = await http.post("/replay/v1/reload")
        scripts = (await http.get("/replay/v1/scripts")).json()["scripts"]
    assert reloaded.json() == {"ok": True, "changes": [
        {"script": 0, "added": 1, "removed": 0, "changed": 1}]}
    assert broken.status_code == 409 and broken.json()["ok"] is False
    assert "replay.override.json" in broken.json()["error"]
    assert len(scripts[0]["entries"]) == 2


async def test_bare_engine_server_has_no_reload_and_a_default_catalog(samples: Path) -> None:
    engine = ReplayEngine(load_scenario(samples / "basic-chat").scripts)
    async with ReplayServer(engine) as server, httpx.AsyncClient(base_url=server.url) as http:
        assert server.url.startswith("http://127.0.0.1:") and not server.url.endswith("/")
        reload = await http.post("/replay/v1/reload")
        models = (await http.get("/runs/x/v1/models")).json()
        scripts = (await http.get("/replay/v1/scripts")).json()
    assert reload.status_code == 404
    assert models == {"object": "list", "data": [
        {"id": "replay", "object": "model", "created": 0, "owned_by": "replay"}]}
    # No scenario given: the headers are those of the scripts being served.
    assert scripts["headers"] == {"session.jsonl": {"id": "sample-basic-chat", "createdAt": 1767225600000,
                                                    "seedLength": 0}}
    assert len(scripts["scripts"]) == 1


async def test_a_runaway_pattern_fails_its_call_not_the_server(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("{{fromRequest:(a|aa)+$}}"), text_entry("ok")])
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        slow = await http.post("/v1/chat/completions",
                               json={"messages": [{"role": "user", "content": "a" * 40 + "!"}]})
        fine = await http.post("/v1/chat/completions", json={"messages": []})
    assert slow.status_code == 500
    assert slow.json()["error"]["code"] == "PLACEHOLDER"
    assert "ran longer than" in slow.json()["error"]["message"]
    assert fine.json()["choices"][0]["message"]["content"] == "ok"


async def test_a_stopped_server_starts_again_on_its_port(samples: Path) -> None:
    engine = ReplayEngine(load_scenario(samples / "basic-chat").scripts)
    server = ReplayServer(engine)
    first = await server.start()
    assert await server.start() == first  # starting twice is harmless
    await server.stop()
    await server.stop()
    async with server, httpx.AsyncClient(base_url=server.url) as http:
        assert server.url == first
        assert (await http.get("/healthz")).json() == {"status": "ok"}
