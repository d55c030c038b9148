"""The native NDJSON route and the control API, driven with httpx against a real server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from replay_engine import Pace, load_scenario
from replay_engine import events as ev
from replay_engine.server import MAX_BODY_BYTES, serve_scenario
from tests.wire.wire_helpers import EngineWatch, sdk, sdk_stream, text_entry, wire_content, write_scenario

pytestmark = pytest.mark.anyio


async def _ndjson(http: httpx.AsyncClient, path: str = "/replay/v1/stream",
                  body: dict[str, Any] | None = None) -> tuple[int, list[dict[str, Any]]]:
    response = await http.post(path, json=body or {})
    return response.status_code, [json.loads(line) for line in response.text.splitlines()]


async def test_native_route_streams_the_loaded_script_line_for_line(samples: Path) -> None:
    scripts = load_scenario(samples / "basic-chat").scripts
    async with serve_scenario(samples / "basic-chat") as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        for call in range(2):
            async with http.stream("POST", "/replay/v1/stream",
                                   json={"sessionId": "a", "messages": []}) as response:
                assert response.status_code == 200
                assert response.headers["content-type"] == "application/x-ndjson"
                lines = [json.loads(line) async for line in response.aiter_lines()]
            assert lines == scripts[0].entries[call].entry.chunks  # type: ignore[union-attr]
        # Lossless: fields the OpenAI wire cannot carry are here.
        assert lines[-1] == {"type": "finish", "reason": {"kind": "stop"},
                             "replayState": {"note": "kept losslessly"}}
        status, body = await _ndjson(http, body={"sessionId": "a"})
    assert status == 409
    assert body == [{"error": {
        "message": "script exhausted — session requested model call #3 but its script has only 2 "
                   "[session a, script 0, run default; counting from 0 as the debugger does: "
                   "call #2, past calls #0 to #1]",
        "type": "replay_error", "code": "SCRIPT_EXHAUSTED"}}]


async def test_native_throw_ends_with_an_error_line(tmp_path: Path) -> None:
    prefix = text_entry("half")["chunks"][:2]
    root = write_scenario(tmp_path / "s", [
        {"kind": "throw", "chunks": prefix, "message": "upstream 502", "code": "HTTP_502"},
        {"kind": "throw", "chunks": [], "message": "denied", "code": "AUTH"}])
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        first = await _ndjson(http)
        second = await _ndjson(http)
    assert first == (200, [*prefix, {"type": "error", "message": "upstream 502", "code": "HTTP_502"}])
    assert second == (200, [{"type": "error", "message": "denied", "code": "AUTH"}])


async def test_unrecorded_session_is_refused_with_409(samples: Path) -> None:
    async with serve_scenario(samples / "basic-chat") as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        assert (await _ndjson(http, body={"sessionId": "first"}))[0] == 200
        response = await http.post("/v1/chat/completions", json={"stream": True},
                                   headers={"X-Session-Id": "second"})
        bad = await http.post("/replay/v1/stream", json={"sessionId": 7})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "UNRECORDED_SESSION"
    assert "unrecorded session (#2); the scenario recorded only 1 session(s)" in \
        response.json()["error"]["message"]
    assert bad.status_code == 400 and "sessionId must be a string" in bad.text


async def test_runs_are_isolated_and_assert_consumed_reports_each(samples: Path) -> None:
    async with serve_scenario(samples / "basic-chat") as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        a = sdk(server.url, run="a")
        b = sdk(server.url, run="b")
        # Interleaved: the same session id in two runs binds independently.
        first_a = wire_content(await sdk_stream(a, "agent"))
        first_b = wire_content(await sdk_stream(b, "agent"))
        assert first_a == first_b and first_a["finish"] == "tool_calls"
        pending = await http.post("/runs/a/replay/v1/assert-consumed")
        assert pending.status_code == 409
        verdict = pending.json()
        assert (verdict["ok"], verdict["problems"], verdict["strict"]) == (
            False, ["session agent consumed 1/2 recorded call(s)"], False)
        # the stream helper says "go", not the recorded prompt: named, yet no problem unless strict
        assert verdict["firstDivergence"].startswith("session agent: call #0 of script 0 "
                                                     "(turn/step 1/1): user message 1: recorded")
        assert wire_content(await sdk_stream(a, "agent"))["text"].startswith("The workspace")
        done = await http.post("/runs/a/replay/v1/assert-consumed")
        assert done.status_code == 200 and done.json()["ok"] is True
        state_b = (await http.get("/runs/b/replay/v1/state")).json()
        default = await http.post("/replay/v1/assert-consumed")
        health = (await http.get("/runs/b/healthz")).json()
        await a.close()
        await b.close()
    assert [(x["sessionKey"], x["cursor"]) for x in state_b["bindings"]] == [("agent", 1)]
    assert state_b["run"] == "b" and state_b["consumed"] is False
    assert default.status_code == 409
    assert default.json()["problems"] == ["1 recorded script(s) never bound to a live session"]
    assert health == {"status": "ok"}


async def test_reset_forgets_bindings_and_cursors(samples: Path) -> None:
    async with serve_scenario(samples / "basic-chat") as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        await _ndjson(http)
        await _ndjson(http)
        assert (await _ndjson(http))[0] == 409
        assert (await http.post("/replay/v1/reset")).json() == {"ok": True}
        assert (await http.get("/replay/v1/state")).json()["bindings"] == []
        status, lines = await _ndjson(http, body={"sessionId": "fresh"})
        journal = (await http.get("/replay/v1/journal")).json()
    assert status == 200 and lines[0] == {"type": "block-start", "index": 0, "blockType": "reasoning"}
    assert journal["run"] == "default"
    # the reset emptied the journal too: only the call after it is left
    assert [(c["sessionKey"], c["callIndex"], c["outcome"]) for c in journal["calls"]] == [
        ("fresh", 0, "finished")]


async def test_hang_writes_ready_file_and_client_disconnect_cancels(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [{"kind": "hang", "readyFile": "marks/ready"},
                                           text_entry("next")])
    ready_dir = tmp_path / "ready"
    async with serve_scenario(root, ready_dir=ready_dir) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        watch = EngineWatch(server.engine)
        async with http.stream("POST", "/replay/v1/stream", json={"sessionId": "x"}) as response:
            lines = response.aiter_lines()
            prefix = [json.loads(await anext(lines)), json.loads(await anext(lines))]
            waiting = (await watch.wait_for(ev.HangWaiting))[0]
            marker = ready_dir / "marks" / "ready"
            assert waiting.ready_file == str(marker)
            assert marker.exists() and marker.stat().st_size == 0
            state = (await http.get("/replay/v1/state")).json()["bindings"][0]
        # Leaving the block closed the connection mid-stream.
        await watch.wait_for(ev.CallCancelled)
        after = (await http.get("/replay/v1/state")).json()["bindings"][0]
        status, lines_next = await _ndjson(http, body={"sessionId": "x"})
    assert prefix == [{"type": "block-start", "index": 0, "blockType": "text"},
                      {"type": "text-delta", "index": 0, "text": "partial"}]
    assert (state["status"], state["readyFile"]) == ("hanging", str(marker))
    assert (after["status"], after["cursor"]) == ("idle", 1)
    assert status == 200 and lines_next[1] == {"type": "text-delta", "index": 0, "text": "next"}
    assert [r.outcome for r in server.engine.journal()] == ["cancelled", "finished"]


async def test_ready_file_never_truncates_a_non_empty_file(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [{"kind": "hang", "readyFile": "taken"}])
    (tmp_path / "taken").write_text("keep me")
    async with serve_scenario(root, ready_dir=tmp_path) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post("/v1/chat/completions", json={"stream": True})
    events = [json.loads(line.removeprefix("data: ")) for line in response.text.split("\n\n") if line]
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert events[1]["choices"][0]["delta"] == {"content": "partial"}
    assert events[-1]["error"]["code"] == "READY_FILE"
    assert "already exists and is not empty" in events[-1]["error"]["message"]
    assert "data: [DONE]" not in response.text
    assert (tmp_path / "taken").read_text() == "keep me"


async def test_non_stream_hang_cancelled_answers_aborted(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [{"kind": "hang"}])
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        watch = EngineWatch(server.engine)
        call = asyncio.create_task(http.post("/v1/chat/completions", json={"messages": []}))
        await watch.wait_for(ev.HangWaiting)
        cancel = await http.post("/replay/v1/cancel", json={"sessionId": None})
        response = await call
    assert cancel.json() == {"ok": True, "cancelled": 1}
    assert response.status_code == 500
    assert response.json()["error"] == {"message": "aborted", "type": "replay_error",
                                        "code": "ABORTED"}


async def test_stopping_the_server_aborts_a_hanging_stream(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [{"kind": "hang"}])
    lines: list[str] = []
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        watch = EngineWatch(server.engine)
        async with http.stream("POST", "/replay/v1/stream", json={}) as response:
            async for line in response.aiter_lines():
                lines.append(line)
                if len(lines) == 2:
                    await watch.wait_for(ev.HangWaiting)
                    await server.stop()
    assert json.loads(lines[-1]) == {"type": "error", "message": "aborted", "code": "ABORTED"}


async def test_pace_keeps_order_for_concurrent_sessions(tmp_path: Path) -> None:
    entry = text_entry("one two three four five six", parts=6)
    root = write_scenario(tmp_path / "s", [entry], children=[[entry]])
    for pace in (Pace("fixed", 2), Pace.parse("recorded:50", 2)):
        async with serve_scenario(root, pace=pace) as server:
            client = sdk(server.url)
            a, b = await asyncio.gather(sdk_stream(client, "a"), sdk_stream(client, "b"))
            await client.close()
        for wire in (a, b):
            texts = [c["choices"][0]["delta"].get("content") for c in wire if c["choices"]]
            assert texts[:-1] == ["", "one ", "two ", "three ", "four ", "five ", "six"]
            assert wire[0]["choices"][0]["delta"]["role"] == "assistant"
            assert wire[-1]["choices"][0]["finish_reason"] == "stop"
        assert server.engine.pace == pace


async def test_body_limit_and_malformed_bodies(samples: Path) -> None:
    async with serve_scenario(samples / "basic-chat") as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        big = b'{"messages": "' + b"x" * MAX_BODY_BYTES + b'"}'
        too_big = await http.post("/v1/chat/completions", content=big)

        async def chunked() -> Any:
            for _ in range(33):
                yield b" " * (1024 * 1024)

        too_big_chunked = await http.post("/replay/v1/stream", content=chunked())
        malformed = await http.post("/v1/chat/completions", content=b'{"stream": tru')
        not_object = await http.post("/replay/v1/stream", content=b"[1, 2]")
        bad_mode = await http.post("/replay/v1/mode", json={"mode": "fast"})
        state = (await http.get("/replay/v1/state")).json()
    assert too_big.status_code == 413 and too_big.json()["error"]["code"] == "BODY_TOO_LARGE"
    assert too_big_chunked.status_code == 413
    assert malformed.status_code == 400
    assert malformed.json()["error"]["code"] == "INVALID_JSON"
    assert malformed.json()["error"]["message"].startswith("request body is not valid JSON")
    assert not_object.status_code == 400
    assert not_object.json()["error"]["message"] == "request body must be a JSON object, got list"
    assert bad_mode.status_code == 400
    assert state["bindings"] == []  # no refused request touched the engine


async def test_from_request_placeholder_resolves_against_the_request(tmp_path: Path) -> None:
    entry = text_entry("ticket {{fromRequest:ticket-([0-9]+)}} is fixed")
    root = write_scenario(tmp_path / "s", [entry, entry])
    async with serve_scenario(root) as server:
        client = sdk(server.url)
        wire = await sdk_stream(client, None, [{"role": "user", "content": "please fix ticket-42"}])
        with pytest.raises(Exception) as caught:
            await sdk_stream(client, None, [{"role": "user", "content": "nothing here"}])
        await client.close()
    assert wire_content(wire)["text"] == "ticket 42 is fixed"
    assert getattr(caught.value, "status_code", None) == 500
    assert getattr(caught.value, "body", {})["code"] == "PLACEHOLDER"


async def test_native_route_takes_the_header_when_the_body_has_no_session(samples: Path) -> None:
    async with serve_scenario(samples / "basic-chat") as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        await http.post("/replay/v1/stream", json={}, headers={"X-Session-Id": "from-header"})
        await http.post("/replay/v1/stream", json={"sessionId": "from-header"})
        state = (await http.get("/replay/v1/state")).json()
    assert [(b["sessionKey"], b["cursor"]) for b in state["bindings"]] == [("from-header", 2)]
