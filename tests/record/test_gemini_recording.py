"""Recording the Gemini wire: google-genai calls through the recorder, each response folded
back into recorded chunks as docs/format.md#wire-gemini maps them (text, thought parts with their signature,
whole function calls, usage and finish), and the request's parts as the log's events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google import genai
from google.genai import types

from replay_engine.record import record_scenario
from replay_engine.record.dialect import SseEvent, StreamFailure
from replay_engine.record.gemini import GEMINI, GeminiRebuilder
from replay_engine.scenario.loading import load_scenario
from tests.record.rawupstream import Behaviour, RawUpstream, json_answer
from tests.record.recordtools import log_lines

pytestmark = pytest.mark.anyio


def response(parts: list[dict[str, Any]], finish: str | None = None,
             usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """One GenerateContentResponse."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-2.0-flash"}
    if usage is not None:
        out["usageMetadata"] = usage
    return out


def sse(responses: list[dict[str, Any]]) -> Behaviour:
    """A 200 event stream of ``responses``, as Google sends it (no end marker)."""
    body = b"".join(b"data: " + json.dumps(r).encode() + b"\r\n\r\n" for r in responses)
    return Behaviour(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: "
                     + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)


USAGE = {"promptTokenCount": 12, "cachedContentTokenCount": 2, "candidatesTokenCount": 7,
         "thoughtsTokenCount": 3, "totalTokenCount": 22}
THOUGHT_AND_TOOL = [
    response([{"text": "Let me ", "thought": True}]),
    response([{"text": "look.", "thought": True, "thoughtSignature": "c2ln"}]),
    response([{"text": "Checking"}]),
    response([{"functionCall": {"id": "call-1", "name": "ls", "args": {"path": "."}}}],
             "STOP", USAGE),
]
EXPECTED = [
    {"type": "block-start", "index": 0, "blockType": "reasoning"},
    {"type": "reasoning-delta", "index": 0, "text": "Let me "},
    {"type": "reasoning-delta", "index": 0, "text": "look."},
    {"type": "block-start", "index": 1, "blockType": "text"},
    {"type": "text-delta", "index": 1, "text": "Checking"},
    {"type": "block-start", "index": 2, "blockType": "tool-call"},
    {"type": "tool-call-delta", "index": 2, "id": "call-1", "name": "ls",
     "argumentsDelta": '{"path":"."}'},
    {"type": "block-end", "index": 0,
     "block": {"type": "reasoning", "text": "Let me look.", "signature": "c2ln"}},
    {"type": "block-end", "index": 1, "block": {"type": "text", "text": "Checking"}},
    {"type": "block-end", "index": 2,
     "block": {"type": "tool-call", "id": "call-1", "name": "ls", "arguments": '{"path":"."}'}},
    {"type": "usage", "usage": {"inputTokens": 10, "outputTokens": 10, "cacheReadTokens": 2,
                                "reasoningTokens": 3}},
    {"type": "finish", "reason": {"kind": "tool-calls"}},
]


def test_the_rebuilder_folds_parts_into_blocks_and_ends_at_the_finish_reason() -> None:
    rebuilder = GeminiRebuilder()
    chunks: list[dict[str, Any]] = []
    for r in THOUGHT_AND_TOOL:
        assert not rebuilder.ended
        chunks += rebuilder.feed(SseEvent(None, json.dumps(r)))
    assert rebuilder.ended
    assert chunks + rebuilder.end() == EXPECTED


@pytest.mark.parametrize(("finish", "wanted"), [
    ("STOP", {"kind": "stop"}), ("MAX_TOKENS", {"kind": "max-tokens"}),
    ("SAFETY", {"kind": "stop", "stopReason": "SAFETY"}),
])
def test_finish_reasons_map_back(finish: str, wanted: dict[str, Any]) -> None:
    chunks = GEMINI.completion_chunks(response([{"text": "x"}], finish))
    assert chunks[-1] == {"type": "finish", "reason": wanted}


def test_a_json_array_answer_reads_as_the_stream_it_carries() -> None:
    assert GEMINI.completion_chunks(THOUGHT_AND_TOOL) == EXPECTED
    with pytest.raises(ValueError):
        GEMINI.completion_chunks({"choices": []})
    with pytest.raises(ValueError, match="quota"):
        GEMINI.completion_chunks([{"error": {"code": 429, "message": "quota"}}])


def test_an_error_event_names_the_replay_code_or_the_status_code() -> None:
    rebuilder = GeminiRebuilder()
    with pytest.raises(StreamFailure) as caught:
        rebuilder.feed(SseEvent(None, json.dumps({"error": {
            "code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}})))
    assert (caught.value.code, caught.value.message) == ("RATE_LIMIT", "slow down")
    with pytest.raises(StreamFailure) as caught:
        GeminiRebuilder().feed(SseEvent(None, json.dumps({"error": {
            "code": 500, "message": "m", "details": [{"reason": "QUOTA_EXCEEDED"}]}})))
    assert caught.value.code == "QUOTA_EXCEEDED"


def test_request_parts_become_user_and_tool_messages() -> None:
    body = {"systemInstruction": {"parts": [{"text": "be brief"}]}, "contents": [
        {"role": "user", "parts": [{"text": "list files"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "call-1", "name": "ls", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "call-1", "name": "ls",
                                                         "response": {"files": ["a"]}}}]},
    ]}
    got = [(m.role, m.call_id) for m in GEMINI.messages(body)]
    assert got == [("system", None), ("user", None), ("assistant", None), ("tool", "call-1")]


async def test_google_genai_records_through_the_proxy(tmp_path: Path) -> None:
    final = response([{"text": "done"}], "STOP", {"promptTokenCount": 5,
                                                    "candidatesTokenCount": 1})
    behaviours = [sse(THOUGHT_AND_TOOL), Behaviour(json_answer(200, final))]
    scenario = tmp_path / "gemini"
    async with RawUpstream(behaviours) as upstream:
        async with record_scenario(scenario, upstream.url) as rec:
            client = genai.Client(api_key="secret-gemini-key-123",
                                  http_options=types.HttpOptions(base_url=rec.url))
            config = types.GenerateContentConfig(
                automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
            parts = [r async for r in await client.aio.models.generate_content_stream(
                model="gemini-2.0-flash", contents="list files", config=config)]
            calls = [p.function_calls for p in parts if p.function_calls]
            assert calls and calls[0][0].name == "ls" and calls[0][0].args == {"path": "."}
            answer = await client.aio.models.generate_content(
                model="gemini-2.0-flash", config=config, contents=[
                    types.Content(role="user", parts=[types.Part(text="list files")]),
                    types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(
                        id="call-1", name="ls", args={"path": "."}))]),
                    types.Content(role="user", parts=[types.Part(
                        function_response=types.FunctionResponse(id="call-1", name="ls",
                                                                 response={"files": ["a"]}))]),
                ])
            assert answer.text == "done"
        paths = [head.split(" ")[1] for head, _ in upstream.requests]
    assert paths == ["/v1/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
                     "/v1/models/gemini-2.0-flash:generateContent"]
    assert rec.problems == []
    loaded = load_scenario(scenario)
    entries = loaded.scripts[0].entries
    assert [e.entry.chunks for e in entries][0] == EXPECTED  # type: ignore[union-attr]
    assert entries[1].entry.chunks[-1] == {"type": "finish", "reason": {"kind": "stop"}}  # type: ignore[union-attr]
    kinds = [line["type"] for line in log_lines(scenario / "session.jsonl")]
    assert kinds.count("tool/result") == 1 and kinds.count("user/message") == 1
    assert b"secret-gemini-key-123" not in (scenario / "session.jsonl").read_bytes()
