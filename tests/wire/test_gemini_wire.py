"""The Gemini routes (docs/format.md#wire-gemini) driven by the real google-genai client over a real socket.

Text, thoughts with their signature, function calls with ids, finish and usage, streamed and
not, under ``/v1/`` and ``/v1beta/``; throws as the client's own ``APIError`` with the status
of their code; a tool loop with the tool really run; run and session prefixes; the engine's
controls (step gate, pacing, hang and cancel, ``{{fromRequest}}``) and the journal's dialect.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.genai import errors, types

from replay_engine import events as ev
from replay_engine.server import serve_scenario
from replay_engine.statuscodes import status_for_code
from tests.compat.gemini_helpers import (
    MODEL,
    connected,
    expected,
    fold,
    generate,
    serving,
    stream,
    without_empty_runs,
)
from tests.compat.recorded import PREFIX, SIGNED, scenario_scripts
from tests.wire.wire_helpers import EngineWatch, text_entry, write_scenario

pytestmark = pytest.mark.anyio

THROWS = [("AUTH", 401, "UNAUTHENTICATED", errors.ClientError),
          ("RATE_LIMIT", 429, "RESOURCE_EXHAUSTED", errors.ClientError),
          ("CONTEXT_WINDOW_EXCEEDED", 400, "INVALID_ARGUMENT", errors.ClientError),
          ("HTTP_404", 404, "NOT_FOUND", errors.ClientError),
          ("HTTP_503", 503, "UNAVAILABLE", errors.ServerError),
          ("SERVER", 500, "INTERNAL", errors.ServerError)]


def _tool_call(call_id: str, name: str, arguments: str, finish: str = "tool-calls") -> dict[str, Any]:
    return {"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 0, "id": call_id, "name": name,
         "argumentsDelta": arguments[:4]},
        {"type": "tool-call-delta", "index": 0, "id": call_id, "argumentsDelta": arguments[4:]},
        {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": call_id,
                                                    "name": name, "arguments": arguments}},
        {"type": "usage", "usage": {"inputTokens": 20, "outputTokens": 9}},
        {"type": "finish", "reason": {"kind": finish}}]}


@pytest.mark.parametrize("version", [None, "v1beta"], ids=["v1", "v1beta"])
async def test_text_thoughts_calls_and_usage_reach_the_client(tmp_path: Path,
                                                              version: str | None) -> None:
    async with serving(scenario_scripts(tmp_path, [SIGNED, SIGNED])) as (server, engine), \
            connected(server.url, session="a", version=version) as api:
        streamed = await stream(api)
        created = await generate(api)
        journal = engine.journal()
    want = expected(SIGNED["chunks"])
    assert fold(streamed) == want
    assert fold([created]) == want
    assert want["runs"][0] == {"kind": "reasoning", "text": "Think twice.", "signature": b"signed"}
    # outputTokens 7 counts the 3 reasoning tokens: 4 candidates beside 3 thoughts
    assert want["usage"] == {"prompt_token_count": 16, "candidates_token_count": 4,
                             "total_token_count": 23, "cached_content_token_count": 4,
                             "thoughts_token_count": 3}
    # One response per recorded delta; the signature rides on the thought run's last part.
    thoughts = [r.candidates[0].content.parts[0] for r in streamed[:2]]
    assert [(p.text, p.thought, p.thought_signature) for p in thoughts] == [
        ("Think ", True, None), ("twice.", True, b"signed")]
    assert created.function_calls == [types.FunctionCall(id="toolu_1", name="read",
                                                         args={"path": "a.txt"})]
    assert {r.response_id for r in streamed} == {streamed[0].response_id}
    assert [r.model_version for r in (*streamed, created)] == [MODEL] * (len(streamed) + 1)
    assert [(r.dialect, r.model, r.session) for r in journal] == [("gemini", MODEL, "a")] * 2


@pytest.mark.parametrize(("code", "status", "name", "kind"), THROWS)
async def test_a_throw_is_the_clients_own_api_error(tmp_path: Path, code: str, status: int,
                                                   name: str, kind: type[errors.APIError]) -> None:
    throw = {"kind": "throw", "chunks": [], "message": "scripted", "code": code}
    async with serving(scenario_scripts(tmp_path, [throw, throw])) as (server, engine), \
            connected(server.url) as api:
        for call in (stream(api), generate(api)):
            with pytest.raises(kind) as caught:
                await call
            assert (caught.value.code, caught.value.status, caught.value.message) == (
                status, name, "scripted")
            assert caught.value.details["error"]["details"][0]["reason"] == code
            assert caught.value.response.headers["x-should-retry"] == "false"
        assert status_for_code(code) == status
        assert engine.consumed_problems() == []
        with pytest.raises(errors.ClientError) as exhausted:
            await generate(api)
    assert exhausted.value.code == 409
    assert exhausted.value.details["error"]["details"][0]["reason"] == "SCRIPT_EXHAUSTED"


async def test_a_throw_after_its_prefix_and_an_error_finish_end_the_stream(tmp_path: Path) -> None:
    failed = {"kind": "chunks", "chunks": [*PREFIX, {"type": "finish", "reason": {
        "kind": "error", "failure": {"code": "EMPTY_RESPONSE", "message": "nothing came"}}}]}
    throw = {"kind": "throw", "chunks": PREFIX, "message": "overloaded", "code": "HTTP_529"}
    async with serving(scenario_scripts(tmp_path, [throw, failed, failed])) as (server, _), \
            connected(server.url) as api:
        for code, status, message in (("HTTP_529", 529, "overloaded"),
                                      ("EMPTY_RESPONSE", 500, "nothing came")):
            got: list[str] = []
            with pytest.raises(errors.APIError) as caught:
                async for response in await api.aio.models.generate_content_stream(
                        model=MODEL, contents="go"):
                    got.append(response.text or "")
            assert "".join(got) == "Half an answer"
            assert (caught.value.code, caught.value.message) == (status, message)
            assert caught.value.details["error"]["details"][0]["reason"] == code
        with pytest.raises(errors.ServerError) as refused:
            await generate(api)
    assert refused.value.details["error"]["details"][0]["reason"] == "EMPTY_RESPONSE"


async def test_a_tool_loop_runs_the_tool_and_sends_its_result_back(tmp_path: Path) -> None:
    answer = {"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "The sum is {{fromRequest:sum=([0-9]+)}}."},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "x"}},
        {"type": "finish", "reason": {"kind": "stop"}}]}
    ran: list[tuple[int, int]] = []

    def add(a: int, b: int) -> str:
        """Add two integers."""
        ran.append((a, b))
        return f"sum={a + b}"

    config: dict[str, Any] = {
        "system_instruction": "add numbers", "tools": [add],
        "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True)}
    calls = [_tool_call("call_add", "add", '{"a": 2, "b": 40}'), answer]
    async with serving(scenario_scripts(tmp_path, calls)) as (server, engine), \
            connected(f"{server.url}/runs/t1/sessions/adder") as api:
        contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="2 + 40?")])]
        first = await generate(api, contents, **config)
        assert first.candidates and first.candidates[0].content
        contents.append(first.candidates[0].content)
        for call in first.function_calls or []:
            result = add(**(call.args or {}))
            contents.append(types.Content(role="user", parts=[types.Part(
                function_response=types.FunctionResponse(id=call.id, name=call.name,
                                                         response={"output": result}))]))
        final = await stream(api, contents, **config)
        journal = engine.journal("t1")
    assert ran == [(2, 40)]
    assert "".join(r.text or "" for r in final) == "The sum is 42."
    assert engine.consumed_problems("t1") == []
    assert [(r.session, r.dialect) for r in journal] == [("adder", "gemini")] * 2
    sent = journal[1].messages
    assert sent["systemInstruction"]["parts"][0]["text"] == "add numbers"
    response = sent["contents"][2]["parts"][0]["functionResponse"]
    assert response == {"id": "call_add", "name": "add", "response": {"output": "sum=42"}}


async def test_from_request_searches_the_system_instruction_then_contents(tmp_path: Path) -> None:
    entry = {"kind": "chunks", "chunks": [
        {"type": "text-delta", "index": 0, "text": "ticket {{fromRequest:T-([0-9]+)}}"},
        {"type": "finish", "reason": {"kind": "stop"}}]}
    async with serving(scenario_scripts(tmp_path, [entry, entry])) as (server, _), \
            connected(server.url) as api:
        first = await generate(api, "see T-22", system_instruction="T-1 is closed")
        second = await stream(api, "nothing here", system_instruction="T-1 is closed")
    assert first.text == "ticket 22"
    assert "".join(r.text or "" for r in second) == "ticket 1"


async def test_the_step_gate_and_pacing_hold_each_response(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("one two three", parts=3)] * 2)
    async with serve_scenario(root, pace_ms=5) as server, \
            httpx.AsyncClient(base_url=server.url) as http, connected(server.url) as api:
        paced = await stream(api)
        assert [r.text for r in paced[:3]] == ["one ", "two ", "three"]
        assert (await http.post("/replay/v1/mode", json={"mode": "chunk"})).status_code == 200
        watch = EngineWatch(server.engine)
        call = asyncio.create_task(stream(api))
        await watch.wait_for(ev.CallPaused)
        assert server.engine.state().bindings[0].status == "paused"
        assert (await http.post("/replay/v1/step", json={"how": "chunk"})).json() == {"ok": True}
        await watch.wait_for(ev.CallPaused, 2)
        assert not call.done()
        await http.post("/replay/v1/step", json={"how": "continue"})
        gated = await call
    assert "".join(r.text or "" for r in gated) == "one two three"
    assert gated[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert gated[-1].usage_metadata.prompt_token_count == 3


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "generate"])
async def test_a_hang_is_cancelled_and_ends_aborted(tmp_path: Path, streamed: bool) -> None:
    root = write_scenario(tmp_path / "s", [{"kind": "hang", "readyFile": "hang.ready"}])
    ready = tmp_path / "hang.ready"
    async with serve_scenario(root, ready_dir=tmp_path) as server, \
            httpx.AsyncClient(base_url=server.url) as http, connected(server.url, session="a") as api:
        call = asyncio.create_task(stream(api) if streamed else generate(api))
        deadline = time.monotonic() + 10
        while not ready.exists():  # the engine creates it once the hang waits
            assert time.monotonic() < deadline and not call.done(), "the hang never got ready"
            await asyncio.sleep(0.01)
        cancelled = await http.post("/replay/v1/cancel", json={"sessionId": "a"})
        assert cancelled.json() == {"ok": True, "cancelled": 1}
        with pytest.raises(errors.ServerError) as caught:
            await call
        record = server.engine.journal()[0]
    assert caught.value.code == 500
    assert caught.value.details["error"]["details"][0]["reason"] == "ABORTED"
    assert (record.outcome, record.code, record.dialect) == ("cancelled", "ABORTED", "gemini")


async def test_without_alt_sse_the_stream_is_one_json_array(tmp_path: Path) -> None:
    async with serving(scenario_scripts(tmp_path, [SIGNED, SIGNED])) as (server, _), \
            httpx.AsyncClient(base_url=server.url) as http:
        path = f"/v1beta/models/{MODEL}:streamGenerateContent"
        array = await http.post(path, json={"contents": []})
        sse = await http.post(path, params={"alt": "sse"}, json={"contents": []})
    assert array.headers["content-type"] == "application/json"
    events = [json.loads(line.removeprefix("data: ")) for line in sse.text.split("\n\n") if line]
    strip = [{k: v for k, v in e.items() if k != "responseId"} for e in events]
    assert [{k: v for k, v in e.items() if k != "responseId"} for e in array.json()] == strip
    assert strip[-1]["candidates"][0]["finishReason"] == "STOP"


async def test_unrepresentable_arguments_and_odd_signatures(tmp_path: Path) -> None:
    bad = _tool_call("c1", "run", "[1, 2]")
    cut = _tool_call("c2", "run", '{"path": "a', finish="max-tokens")
    odd = {"kind": "chunks", "chunks": [
        {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "",
                                                    "signature": "not base64!"}},
        {"type": "finish", "reason": {"kind": "stop"}}]}
    async with serving(scenario_scripts(tmp_path, [bad, bad, cut, odd])) as (server, _), \
            connected(server.url, session="s") as api:
        for call in (generate(api), stream(api)):
            with pytest.raises(errors.ServerError) as caught:
                await call
            assert caught.value.details["error"]["details"][0]["reason"] == "UNREPRESENTABLE"
            assert "not a JSON object" in str(caught.value.message)
        truncated = await generate(api)
        signed = await stream(api)
    assert truncated.function_calls == [types.FunctionCall(id="c2", name="run", args={})]
    assert truncated.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert without_empty_runs(fold(signed))["runs"] == [
        {"kind": "reasoning", "text": "", "signature": b"not base64!"}]


async def test_unknown_gemini_routes_answer_in_googles_shape(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("one")])
    async with serve_scenario(root) as server, httpx.AsyncClient(base_url=server.url) as http:
        wrong = await http.get(f"/runs/r/v1beta/models/{MODEL}:generateContent")
        missing = await http.post(f"/v1beta/models/{MODEL}:countTokens", json={})
        disagree = await http.post(f"/sessions/b/v1/models/{MODEL}:generateContent",
                                   json={"contents": []}, headers={"X-Session-Id": "a"})
    assert wrong.status_code == 405
    assert wrong.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert wrong.json()["error"]["details"][0]["reason"] == "METHOD_NOT_ALLOWED"
    assert missing.status_code == 404
    assert missing.json()["error"]["status"] == "NOT_FOUND"
    assert disagree.status_code == 400 and disagree.headers["x-should-retry"] == "false"
    assert disagree.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert server.engine.journal() == []


PRODUCIBLE = [
    {"type": "block-start", "index": 0, "blockType": "reasoning"},
    {"type": "reasoning-delta", "index": 0, "text": "Think "},
    {"type": "reasoning-delta", "index": 0, "text": "twice."},
    {"type": "block-start", "index": 1, "blockType": "text"},
    {"type": "text-delta", "index": 1, "text": "Reading "},
    {"type": "text-delta", "index": 1, "text": "it."},
    {"type": "block-start", "index": 2, "blockType": "tool-call"},
    {"type": "tool-call-delta", "index": 2, "id": "c1", "name": "read",
     "argumentsDelta": '{"path":"a.txt"}'},
    {"type": "block-end", "index": 0,
     "block": {"type": "reasoning", "text": "Think twice.", "signature": "c2lnbmVk"}},
    {"type": "block-end", "index": 1, "block": {"type": "text", "text": "Reading it."}},
    {"type": "block-end", "index": 2, "block": {"type": "tool-call", "id": "c1", "name": "read",
                                                "arguments": '{"path":"a.txt"}'}},
    {"type": "usage", "usage": {"inputTokens": 12, "outputTokens": 7, "cacheReadTokens": 4,
                                "reasoningTokens": 3}},
    {"type": "finish", "reason": {"kind": "tool-calls"}},
]
"""A call as the recorder writes one from the Gemini wire: served back, it must record the same."""


def test_what_the_wire_sends_the_recorder_reads_back_unchanged() -> None:
    from replay_engine.record.dialect import SseEvent, rebuild_events
    from replay_engine.record.gemini import GEMINI, GeminiRebuilder
    from replay_engine.wire.gemini import GeminiAssembler, GeminiStreamEncoder

    encoder = GeminiStreamEncoder(MODEL, PRODUCIBLE)
    wire = encoder.opening() + b"".join(encoder.encode(c) or b"" for c in PRODUCIBLE) + encoder.close()
    events = [SseEvent(None, e.removeprefix(b"data: ").decode())
              for e in wire.split(b"\n\n") if e]
    assert rebuild_events(GeminiRebuilder(), events) == PRODUCIBLE
    assembler = GeminiAssembler()
    for chunk in PRODUCIBLE:
        assembler.add(chunk)
    # Not streamed, each block is one part: the same blocks, usage and finish, one delta each.
    back = GEMINI.completion_chunks(assembler.result(MODEL))
    ends = [c for c in PRODUCIBLE if c["type"] in ("block-end", "usage", "finish")]
    assert [c for c in back if c["type"] in ("block-end", "usage", "finish")] == ends
    assert [c["type"] for c in back if c["type"].endswith("-delta")] == [
        "reasoning-delta", "text-delta", "tool-call-delta"]
