"""The integer rule of docs/format.md#edge-cases on every wire and in the recorder: a recorded ``12.0`` is the
integer 12.

Each route reads usage counters through one rule (``replay_engine.jsonnumbers``), so the
same recording gives the same numbers whichever client asks; the real SDKs judge it, and the
raw bytes of the native and Gemini routes are read too (a JSON ``12.0`` is a float to any
client that parses it, whatever an SDK's own model makes of it). Only the counters change on
the native route: the rest of each chunk goes out as loaded.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from replay_engine.record.anthropic import ANTHROPIC_MESSAGES
from replay_engine.record.gemini import GEMINI
from replay_engine.record.openai_chat import OPENAI_CHAT
from replay_engine.record.responses import OPENAI_RESPONSES
from replay_engine.server import serve_scenario
from tests.compat.gemini_helpers import MODEL as GEMINI_MODEL
from tests.compat.gemini_helpers import connected

pytestmark = pytest.mark.anyio

USAGE = {"inputTokens": 12.0, "outputTokens": 5.0, "cacheReadTokens": 3.0, "reasoningTokens": 2.0}


def _entry() -> dict[str, Any]:
    return {"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "hi"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi"}},
        {"type": "usage", "usage": USAGE},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]}


async def _closing(client: Any, stack: contextlib.AsyncExitStack) -> Any:
    """``client``, closed when the test's stack unwinds (before the server stops)."""
    return await stack.enter_async_context(client)


def _scenario(root: Path, calls: int) -> Path:
    root.mkdir()
    (root / "replay.override.json").write_text(json.dumps([_entry()] * calls))
    return root


async def test_float_counters_are_integers_on_chat_completions(tmp_path: Path) -> None:
    async with serve_scenario(_scenario(tmp_path / "s", 2)) as server, contextlib.AsyncExitStack() as stack:
        client = await _closing(openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k",
                                                   max_retries=0), stack)
        done = await client.chat.completions.create(model="m", messages=[{"role": "user",
                                                                           "content": "q"}])
        assert done.usage is not None
        assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (15, 5)
        assert done.usage.prompt_tokens_details is not None
        assert done.usage.prompt_tokens_details.cached_tokens == 3
        async with client.chat.completions.stream(model="m", messages=[]) as stream:
            final = await stream.get_final_completion()
        assert final.usage is not None and final.usage.prompt_tokens == 15
        assert final.usage.completion_tokens_details is not None
        assert final.usage.completion_tokens_details.reasoning_tokens == 2
        assert isinstance(final.usage.prompt_tokens, int)


async def test_float_counters_are_integers_on_messages(tmp_path: Path) -> None:
    async with serve_scenario(_scenario(tmp_path / "s", 2)) as server, contextlib.AsyncExitStack() as stack:
        client = await _closing(anthropic.AsyncAnthropic(base_url=server.url, api_key="k",
                                                         max_retries=0), stack)
        made = await client.messages.create(model="m", max_tokens=10,
                                            messages=[{"role": "user", "content": "q"}])
        assert (made.usage.input_tokens, made.usage.output_tokens) == (12, 5)
        assert made.usage.cache_read_input_tokens == 3
        async with client.messages.stream(model="m", max_tokens=10, messages=[]) as stream:
            final = await stream.get_final_message()
        assert (final.usage.input_tokens, final.usage.output_tokens) == (12, 5)


async def test_float_counters_are_integers_on_responses(tmp_path: Path) -> None:
    async with serve_scenario(_scenario(tmp_path / "s", 2)) as server, contextlib.AsyncExitStack() as stack:
        client = await _closing(openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k",
                                                   max_retries=0), stack)
        made = await client.responses.create(model="m", input="q")
        assert made.usage is not None
        assert (made.usage.input_tokens, made.usage.output_tokens) == (15, 5)
        assert made.usage.input_tokens_details.cached_tokens == 3
        assert made.usage.output_tokens_details.reasoning_tokens == 2
        async with client.responses.stream(model="m", input="q") as stream:
            final = await stream.get_final_response()
        assert final.usage is not None and final.usage.input_tokens == 15


async def test_float_counters_are_integers_on_the_native_route(tmp_path: Path) -> None:
    async with serve_scenario(_scenario(tmp_path / "s", 1)) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        raw = (await http.post("/replay/v1/stream", json={"messages": []})).text
    chunks = [json.loads(line) for line in raw.splitlines()]
    usage = _usage_of(chunks)
    assert usage == {"inputTokens": 12, "outputTokens": 5, "cacheReadTokens": 3,
                     "reasoningTokens": 2}
    assert all(type(v) is int for v in usage.values())
    recorded = _entry()["chunks"]
    assert [c for c in chunks if c["type"] != "usage"] == [c for c in recorded
                                                           if c["type"] != "usage"]


def test_the_native_route_keeps_every_other_value_as_loaded() -> None:
    from replay_engine.wire.native import NdjsonEncoder

    odd = {"type": "usage", "usage": {"inputTokens": 12.0, "outputTokens": 2.5,
                                      "note": "x", "flag": True}, "extra": 1.0}
    assert json.loads(NdjsonEncoder().encode(odd) or b"") == {
        "type": "usage", "usage": {"inputTokens": 12, "outputTokens": 2.5, "note": "x",
                                   "flag": True}, "extra": 1.0}
    text = {"type": "text-delta", "index": 0.0, "text": "hi"}
    assert NdjsonEncoder().encode(text) == b'{"type":"text-delta","index":0.0,"text":"hi"}\n'


async def test_float_counters_are_integers_on_gemini(tmp_path: Path) -> None:
    async with serve_scenario(_scenario(tmp_path / "s", 3)) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        raw = await http.post(f"/v1beta/models/{GEMINI_MODEL}:generateContent", json={})
        async with connected(server.url) as api:
            made = await api.aio.models.generate_content(model=GEMINI_MODEL, contents="q")
            streamed = [r async for r in await api.aio.models.generate_content_stream(
                model=GEMINI_MODEL, contents="q")]
    wire = raw.json()["usageMetadata"]
    assert wire == {"promptTokenCount": 15, "candidatesTokenCount": 3, "totalTokenCount": 20,
                    "cachedContentTokenCount": 3, "thoughtsTokenCount": 2}
    assert all(type(v) is int for v in wire.values())
    for response in (made, streamed[-1]):
        usage = response.usage_metadata
        assert usage is not None
        assert (usage.prompt_token_count, usage.candidates_token_count,
                usage.cached_content_token_count, usage.thoughts_token_count) == (15, 3, 3, 2)


def _usage_of(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    return next(c["usage"] for c in chunks if c["type"] == "usage")


def test_the_recorder_reads_float_counters_as_integers() -> None:
    chat = OPENAI_CHAT.completion_chunks({
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 15.0, "completion_tokens": 5.0, "prompt_cache_hit_tokens": 3.0,
                  "completion_tokens_details": {"reasoning_tokens": 2.0}}})
    assert _usage_of(chat) == {"inputTokens": 12, "outputTokens": 5, "cacheReadTokens": 3,
                               "reasoningTokens": 2}
    messages = ANTHROPIC_MESSAGES.completion_chunks({
        "type": "message", "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 12.0, "output_tokens": 5.0, "cache_read_input_tokens": 3.0}})
    assert _usage_of(messages) == {"inputTokens": 12, "outputTokens": 5, "cacheReadTokens": 3}
    responses = OPENAI_RESPONSES.completion_chunks({
        "object": "response", "status": "completed",
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "hi"}]}],
        "usage": {"input_tokens": 15.0, "output_tokens": 5.0,
                  "input_tokens_details": {"cached_tokens": 3.0},
                  "output_tokens_details": {"reasoning_tokens": 2.0}}})
    assert _usage_of(responses) == {"inputTokens": 12, "outputTokens": 5, "cacheReadTokens": 3,
                                    "reasoningTokens": 2}
    gemini = GEMINI.completion_chunks({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 15.0, "candidatesTokenCount": 3.0,
                          "cachedContentTokenCount": 3.0, "thoughtsTokenCount": 2.0,
                          "totalTokenCount": 20.0}})
    assert _usage_of(gemini) == {"inputTokens": 12, "outputTokens": 5, "cacheReadTokens": 3,
                                 "reasoningTokens": 2}
    for usage in map(_usage_of, (chat, messages, responses, gemini)):
        assert all(type(v) is int for v in usage.values())
