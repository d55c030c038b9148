"""The wire's common rules (docs/format.md#wire) over a real server: sessions by path, JSON on every answer,
no SDK retries.

Also the opening role chunk, which goes out as soon as a call is bound, before the
step gate holds it.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from replay_engine import ProviderConfig, ReplayEngine
from replay_engine import events as ev
from replay_engine.cli.serve import RETRY_MARK, call_logger
from replay_engine.models import ModelConfig
from replay_engine.server import serve_scenario
from tests.wire.wire_helpers import (
    EngineWatch,
    sdk,
    sdk_stream,
    text_entry,
    wire_content,
    write_scenario,
)

pytestmark = pytest.mark.anyio

CHAT = "/v1/chat/completions"


async def test_a_session_id_in_the_path_binds_like_the_header(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("parent")], children=[[text_entry("child")]])
    async with serve_scenario(root) as server:
        parent = sdk(server.url + "/sessions/p")  # base URL .../sessions/p/v1
        first = await parent.chat.completions.create(model="m", messages=[])
        in_run = [sdk(server.url + f"/runs/t1/sessions/{key}") for key in ("c", "d")]
        streamed = [await sdk_stream(client, None) for client in in_run]
        for client in (parent, *in_run):
            await client.close()
    assert first.choices[0].message.content == "parent"
    assert [wire_content(w)["text"] for w in streamed] == ["parent", "child"]
    assert [r.session for r in server.engine.journal()] == ["p"]
    assert [r.session for r in server.engine.journal("t1")] == ["c", "d"]


async def test_header_and_path_that_disagree_are_refused_before_binding(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("one")])
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        bad = await http.post("/sessions/a" + CHAT, json={}, headers={"X-Session-Id": "b"})
        same = await http.post("/sessions/a" + CHAT, json={}, headers={"X-Session-Id": "a"})
        native = await http.post("/sessions/a/replay/v1/stream", json={"sessionId": "z"})
    assert bad.status_code == 400 and native.status_code == 400
    assert bad.json()["error"]["code"] == "SESSION_MISMATCH"
    assert "'b'" in bad.json()["error"]["message"] and "'a'" in bad.json()["error"]["message"]
    assert bad.headers["x-should-retry"] == "false"
    assert same.status_code == 200
    assert [r.session for r in server.engine.journal()] == ["a"]


async def test_unknown_routes_and_wrong_methods_answer_json(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("one")])
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        missing = await http.get("/v1/nothing-here")
        wrong = await http.get(CHAT)
        nested = await http.delete("/runs/r/sessions/x/v1/models")
    assert missing.status_code == 404 and missing.headers["content-type"] == "application/json"
    assert missing.json()["error"]["code"] == "NOT_FOUND"
    assert "/v1/nothing-here" in missing.json()["error"]["message"]
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert wrong.headers["allow"] == "POST" and "use POST" in wrong.json()["error"]["message"]
    assert nested.status_code == 405 and nested.json()["error"]["type"] == "replay_error"


async def test_model_route_errors_say_do_not_retry_unless_asked(tmp_path: Path) -> None:
    throw = {"kind": "throw", "chunks": [], "message": "slow down", "code": "RATE_LIMIT"}
    root = write_scenario(tmp_path / "s", [throw, throw])
    for sdk_retries, expected in ((False, "false"), (True, None)):
        async with serve_scenario(root, sdk_retries=sdk_retries) as server, \
                httpx.AsyncClient(base_url=server.url) as http:
            streamed = await http.post(CHAT, json={"stream": True})
            plain = await http.post(CHAT, json={})
            exhausted = await http.post(CHAT, json={})
            malformed = await http.post(CHAT, content=b"{not json")
            unknown = await http.get("/v1/responses/resp_nope")
        assert [r.status_code for r in (streamed, plain, exhausted, malformed, unknown)] == [
            429, 429, 409, 400, 404]
        for answer in (streamed, plain, exhausted, malformed, unknown):
            assert answer.headers.get("x-should-retry") == expected, answer.request.url


async def test_one_model_of_the_catalog(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("one")])
    providers = [ProviderConfig(id="acme", models=[ModelConfig(id="acme/large-1")])]
    async with serve_scenario(root, providers=providers) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        found = await http.get("/v1/models/acme/large-1")
        client = sdk(server.url)
        via_sdk = await client.models.retrieve("acme/large-1")
        await client.close()
        missing = await http.get("/runs/r/v1/models/gone")
    assert found.json() == {"id": "acme/large-1", "object": "model", "created": 0,
                            "owned_by": "acme"}
    assert via_sdk.id == "acme/large-1" and via_sdk.owned_by == "acme"
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "MODEL_NOT_FOUND"
    assert "acme/large-1" in missing.json()["error"]["message"]


async def test_retried_requests_are_marked_in_journal_events_and_serve_log(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("one"), text_entry("two")])
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        server.engine.subscribe(call_logger(server.engine), chunks=False)
        watch = EngineWatch(server.engine)
        await http.post(CHAT, json={}, headers={"x-stainless-retry-count": "0"})
        await http.post(CHAT, json={}, headers={"x-stainless-retry-count": "1"})
        refused = await http.post(CHAT, json={}, headers={"x-stainless-retry-count": "2"})
        journal = (await http.get("/replay/v1/journal")).json()["calls"]
    assert refused.status_code == 409
    assert [(c["retry"], c["outcome"]) for c in journal] == [
        (False, "finished"), (True, "finished"), (True, "refused")]
    started = [e.retry for e in watch.events if isinstance(e, ev.CallStarted)]
    failed = [e.retry for e in watch.events if isinstance(e, ev.BindingFailed)]
    assert (started, failed) == ([False, True], [True])
    lines = capsys.readouterr().err.splitlines()
    assert [line.endswith(RETRY_MARK) for line in lines] == [False, True, True]
    assert "call #1 of 2: finished" in lines[1] and "refused SCRIPT_EXHAUSTED" in lines[2]


async def test_the_role_chunk_goes_out_before_the_step_gate(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("held back")])
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        engine: ReplayEngine = server.engine
        engine.set_mode("call")
        watch = EngineWatch(engine)
        async with http.stream("POST", CHAT, json={"stream": True}) as response:
            lines = response.aiter_lines()
            first = await anext(lines)
            await watch.wait_for(ev.CallPaused)
            assert engine.state().bindings[0].status == "paused"
            assert json.loads(first.removeprefix("data: "))["choices"][0]["delta"] == {
                "role": "assistant", "content": ""}
            engine.step(None, how="call")
            rest = [line async for line in lines if line]
    assert rest[-1] == "data: [DONE]"
    assert json.loads(rest[0].removeprefix("data: "))["choices"][0]["delta"] == {
        "content": "held back"}
