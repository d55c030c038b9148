"""The official ``openai`` SDK drives replay servers: sessions, calls, throws, hangs, catalog."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from replay_engine import ProviderConfig, load_scenario
from replay_engine import events as ev
from replay_engine.server import serve_scenario
from tests.wire.wire_helpers import (
    EngineWatch,
    finish_on_wire,
    rebuild,
    recorded_content,
    sdk,
    sdk_stream,
    text_entry,
    wire_content,
    write_scenario,
)

pytestmark = pytest.mark.anyio


def _tool_entry(call_id: str, name: str, args: list[str]) -> dict[str, Any]:
    whole = "".join(args)
    return {"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "reasoning"},
        {"type": "reasoning-delta", "index": 0, "text": "need a tool"},
        {"type": "block-start", "index": 1, "blockType": "tool-call"},
        *({"type": "tool-call-delta", "index": 1, "id": call_id, "name": name, "argumentsDelta": a}
          for a in args),
        {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "need a tool"}},
        {"type": "block-end", "index": 1,
         "block": {"type": "tool-call", "id": call_id, "name": name, "arguments": whole}},
        {"type": "usage", "usage": {"inputTokens": 50, "outputTokens": 9, "cacheReadTokens": 20,
                                    "reasoningTokens": 3}},
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ]}


async def test_two_sessions_interleaved_each_get_their_own_script(
        tmp_path: Path, samples: Path) -> None:
    child = [_tool_entry("call_9", "read", ['{"path":', '"a.txt"}']), text_entry("done now", parts=3)]
    root = write_scenario(tmp_path / "s", primary_log=samples / "basic-chat" / "session.jsonl",
                          children=[child])
    scripts = load_scenario(root).scripts
    async with serve_scenario(root) as server:
        client = sdk(server.url)
        order = [("parent", 0), ("sub", 0), ("parent", 1), ("sub", 1)]
        for session, call in order:
            wire = await sdk_stream(client, session)
            script = scripts[0 if session == "parent" else 1]
            chunks = script.entries[call].entry.chunks  # type: ignore[union-attr]
            if session == "sub":
                # Canonical DeepSeek-shaped calls come back chunk for chunk.
                assert rebuild(wire) == chunks
            want = recorded_content(chunks)
            want["finish"] = finish_on_wire(want["finish"])
            assert wire_content(wire) == want
            assert {c["model"] for c in wire} == {"deepseek-chat"}
            assert len({c["id"] for c in wire}) == 1
        state = server.engine.state().to_json()
        await client.close()
    assert [(b["sessionKey"], b["scriptIndex"], b["cursor"]) for b in state["bindings"]] == [
        ("parent", 0, 2), ("sub", 1, 2)]
    assert state["consumed"] is True
    journal = server.engine.journal()
    assert [(r.session, r.call_index, r.outcome) for r in journal] == [
        ("parent", 0, "finished"), ("sub", 0, "finished"), ("parent", 1, "finished"),
        ("sub", 1, "finished")]
    assert journal[0].messages == [{"role": "user", "content": "go"}]


async def test_non_stream_completion_through_the_sdk(samples: Path) -> None:
    async with serve_scenario(samples / "basic-chat") as server:
        client = sdk(server.url)
        first = await client.chat.completions.create(model="m", messages=[])
        second = await client.chat.completions.create(model="m", messages=[])
        await client.close()
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    assert message.content is None
    assert message.tool_calls is not None
    assert [(t.id, t.function.name, t.function.arguments) for t in message.tool_calls] == [
        ("call_ls_1", "bash", '{"command":"ls"}')]
    assert message.model_extra == {"reasoning_content": "I should list the files first."}
    assert first.usage is not None
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (184, 18)
    assert first.usage.model_extra == {"prompt_cache_miss_tokens": 120, "prompt_cache_hit_tokens": 64}
    assert second.choices[0].message.content == "The workspace has README.md and src. Hello!"
    assert second.choices[0].finish_reason == "stop"


@pytest.mark.parametrize(("code", "status", "error"), [
    ("AUTH", 401, openai.AuthenticationError),
    ("RATE_LIMIT", 429, openai.RateLimitError),
    ("CONTEXT_WINDOW_EXCEEDED", 400, openai.BadRequestError),
    ("HTTP_503", 503, openai.InternalServerError),
    ("PROVIDER", 500, openai.InternalServerError),
])
async def test_throw_without_prefix_is_an_http_error(
        tmp_path: Path, code: str, status: int, error: type[openai.APIStatusError]) -> None:
    entry = {"kind": "throw", "chunks": [], "message": "scripted failure", "code": code}
    root = write_scenario(tmp_path / "s", [entry, entry])
    async with serve_scenario(root) as server:
        client = sdk(server.url)
        with pytest.raises(error) as caught:
            await client.chat.completions.create(model="m", messages=[], stream=True)
        assert caught.value.status_code == status
        assert caught.value.body == {"message": "scripted failure", "type": "replay_error",
                                     "code": code}
        with pytest.raises(error):  # stream: false answers the same way
            await client.chat.completions.create(model="m", messages=[])
        await client.close()
    assert [r.outcome for r in server.engine.journal()] == ["failed", "failed"]


async def test_throw_after_prefix_streams_it_then_an_error_event(tmp_path: Path) -> None:
    prefix = text_entry("partial answer", parts=2)["chunks"][:3]
    root = write_scenario(tmp_path / "s", [
        {"kind": "throw", "chunks": prefix, "message": "connection reset", "code": "SERVER"}])
    async with serve_scenario(root) as server:
        client = sdk(server.url)
        stream = await client.chat.completions.create(model="m", messages=[], stream=True)
        got: list[str] = []
        with pytest.raises(openai.APIError) as caught:
            async for chunk in stream:
                got.append(chunk.choices[0].delta.content or "")
        await client.close()
    assert "".join(got) == "partial answer"
    assert caught.value.message == "connection reset"
    assert caught.value.body == {"message": "connection reset", "code": "SERVER"}


async def test_hang_cancelled_from_the_control_api_ends_aborted(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [{"kind": "hang"}, text_entry("after")])
    async with serve_scenario(root) as server:
        watch = EngineWatch(server.engine)
        client = sdk(server.url)
        stream = await client.chat.completions.create(model="m", messages=[], stream=True)
        seen: list[str] = []

        async def read() -> None:
            async for chunk in stream:
                seen.append(chunk.choices[0].delta.content or "")

        reader = asyncio.create_task(read())
        await watch.wait_for(ev.HangWaiting)
        async with httpx.AsyncClient(base_url=server.url) as http:
            state = (await http.get("/replay/v1/state")).json()
            assert state["bindings"][0]["status"] == "hanging"
            answer = await http.post("/replay/v1/cancel", json={})
        assert answer.json() == {"ok": True, "cancelled": 1}
        with pytest.raises(openai.APIError) as caught:
            await reader
        assert caught.value.body == {"message": "aborted", "code": "ABORTED"}
        assert seen == ["", "partial"]  # the opening role chunk, then the hang's prefix
        # The server keeps serving: the next call of the script works.
        assert wire_content(await sdk_stream(client, None))["text"] == "after"
        await client.close()
    assert [r.outcome for r in server.engine.journal()] == ["cancelled", "finished"]


async def test_models_list_the_provider_catalog(samples: Path) -> None:
    providers = [ProviderConfig.model_validate(
        {"id": "deepseek", "models": [{"id": "deepseek-v4-flash"}, {"id": "deepseek-v4-pro"}]})]
    async with serve_scenario(samples / "basic-chat", providers=providers) as server:
        client = sdk(server.url)
        models = [m async for m in client.models.list()]
        await client.close()
    assert [(m.id, m.owned_by, m.created) for m in models] == [
        ("deepseek-v4-flash", "deepseek", 0), ("deepseek-v4-pro", "deepseek", 0)]
