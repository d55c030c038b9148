"""The recorder's Messages and Responses rebuilders over the whole corpus, fed in arbitrary
pieces: every call the wire carries exactly comes back chunk for chunk, and every call's
content survives (streamed and ``stream: false``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from replay_engine import ChunksEntry, ReplayEngine
from replay_engine.record.anthropic import ANTHROPIC_MESSAGES, MessagesRebuilder
from replay_engine.record.dialect import SseEvent, SseParser
from replay_engine.record.responses import OPENAI_RESPONSES, ResponsesRebuilder
from replay_engine.server import ReplayServer
from tests.record.producible import messages_producible, responses_producible
from tests.record.recordtools import CORPUS
from tests.wire.test_conformance_wire import _corpus_scripts
from tests.wire.wire_helpers import recorded_content

pytestmark = [pytest.mark.anyio, pytest.mark.conformance,
              pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")]

DIALECTS: dict[str, tuple[Any, Callable[[list[dict[str, Any]]], bool], int]] = {
    "/v1/messages": (ANTHROPIC_MESSAGES, messages_producible, 450),
    "/v1/responses": (OPENAI_RESPONSES, responses_producible, 500),
}
"""Route: the dialect, its producibility check and how many corpus calls at least pass it."""


def _content(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Content as both wires carry it: blocks, finish kind, and the usage counters they state."""
    content = recorded_content(chunks)
    content.pop("usage", None)
    kind = (content.get("finish") or {}).get("kind")
    content["finish"] = kind if kind in ("max-tokens", "error") else "end"
    return content


@pytest.mark.parametrize("route", sorted(DIALECTS))
async def test_rebuilds_every_producible_corpus_call_from_the_wire_bytes(route: str) -> None:
    dialect, producible_of, at_least = DIALECTS[route]
    scripts, names = _corpus_scripts()
    engine = ReplayEngine(scripts)
    producible = 0
    async with ReplayServer(engine) as server, httpx.AsyncClient(base_url=server.url) as http:
        for i, script in enumerate(scripts):
            for j, item in enumerate(script.entries):
                assert isinstance(item.entry, ChunksEntry)
                chunks = item.entry.chunks
                body = {"model": "m", "messages": [], "input": [], "stream": True,
                        "max_tokens": 100}
                async with http.stream("POST", route, json=body,
                                       headers={"X-Session-Id": f"s{i}"}) as response:
                    raw = await response.aread()
                parser, rebuilder, got = SseParser(), dialect.rebuilder(), []
                try:
                    for k in range(0, len(raw), 11):
                        for event in parser.feed(raw[k:k + 11]):
                            got += rebuilder.feed(event)
                except Exception as exc:  # an error finish streams as a failure on Messages
                    assert route == "/v1/messages" and chunks[-1]["reason"]["kind"] == "error", (
                        f"{names[i]} call {j}: {exc}")
                    continue
                assert rebuilder.ended, f"{names[i]} call {j}"
                got += rebuilder.end()
                if producible_of(chunks):
                    producible += 1
                    assert got == chunks, f"{names[i]} call {j}"
                else:
                    assert _content(got) == _content(chunks), f"{names[i]} call {j}"
    assert producible >= at_least


@pytest.mark.parametrize("route", sorted(DIALECTS))
async def test_a_non_streamed_answer_rebuilds_the_calls_content(route: str) -> None:
    dialect = DIALECTS[route][0]
    scripts, names = _corpus_scripts()
    engine = ReplayEngine(scripts)
    checked = 0
    async with ReplayServer(engine) as server, httpx.AsyncClient(base_url=server.url) as http:
        for i, script in enumerate(scripts):
            for j, item in enumerate(script.entries):
                assert isinstance(item.entry, ChunksEntry)
                chunks = item.entry.chunks
                body = {"model": "m", "messages": [], "input": [], "max_tokens": 100}
                response = await http.post(route, json=body, headers={"X-Session-Id": f"s{i}"})
                if response.status_code != 200:  # an error finish, or arguments Messages refuses
                    continue
                got = dialect.completion_chunks(response.json())
                assert got[-1]["type"] == "finish" and got[-2]["type"] == "usage"
                want = _content(chunks)
                if route == "/v1/messages":  # tool_use input is parsed JSON: equal as JSON
                    for content in (got_content := _content(got)), want:
                        for tool in content.get("tools", []):
                            try:
                                tool["arguments"] = json.loads(tool["arguments"] or "{}")
                            except ValueError:  # cut by a max-tokens finish: sent as {}
                                assert content["finish"] == "max-tokens"
                                tool["arguments"] = {}
                    assert got_content == want, f"{names[i]} call {j}"
                else:
                    assert _content(got) == want, f"{names[i]} call {j}"
                checked += 1
    assert checked >= 900


def test_messages_rebuilder_keeps_signatures_and_skips_unknown_blocks() -> None:
    events = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 0,
                                                         "cache_read_input_tokens": 2}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "thinking_delta", "thinking": "hm"}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "signature_delta", "signature": "sig"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "redacted_thinking", "data": "x"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2,
         "content_block": {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}},
        {"type": "content_block_delta", "index": 2,
         "delta": {"type": "input_json_delta", "partial_json": "{}"}},
        {"type": "content_block_stop", "index": 2},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
         "usage": {"output_tokens": 7}},
        {"type": "message_stop"},
    ]
    rebuilder = MessagesRebuilder()
    got = [c for e in events for c in rebuilder.feed(SseEvent(e["type"], json.dumps(e)))]
    assert rebuilder.ended
    got += rebuilder.end()
    assert got == [
        {"type": "block-start", "index": 0, "blockType": "reasoning"},
        {"type": "reasoning-delta", "index": 0, "text": "hm"},
        {"type": "block-end", "index": 0,
         "block": {"type": "reasoning", "text": "hm", "signature": "sig"}},
        {"type": "block-start", "index": 1, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 1, "id": "t1", "name": "ls", "argumentsDelta": "{}"},
        {"type": "block-end", "index": 1,
         "block": {"type": "tool-call", "id": "t1", "name": "ls", "arguments": "{}"}},
        {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 7, "cacheReadTokens": 2}},
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ]


def test_responses_rebuilder_maps_a_failed_and_an_incomplete_response() -> None:
    usage = {"input_tokens": 9, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 3,
             "output_tokens_details": {"reasoning_tokens": 1}, "total_tokens": 12}
    for status, reason in (
            ("failed", {"kind": "error", "failure": {"code": "server_error", "message": "boom"}}),
            ("incomplete", {"kind": "max-tokens"})):
        final = {"status": status, "usage": usage, "error": {"code": "server_error",
                                                            "message": "boom"},
                 "incomplete_details": {"reason": "max_output_tokens"}}
        rebuilder = ResponsesRebuilder()
        event = {"type": f"response.{status}", "response": final}
        assert rebuilder.feed(SseEvent(event["type"], json.dumps(event))) == []
        assert rebuilder.ended
        assert rebuilder.end() == [
            {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 3, "cacheReadTokens": 4,
                                        "reasoningTokens": 1}},
            {"type": "finish", "reason": reason}]
    with pytest.raises(Exception, match="slow down") as failure:
        ResponsesRebuilder().feed(SseEvent("error", json.dumps(
            {"type": "error", "code": "RATE_LIMIT", "message": "slow down"})))
    assert getattr(failure.value, "code", None) == "RATE_LIMIT"


def test_request_messages_of_both_wires_split_user_text_from_tool_results() -> None:
    messages = ANTHROPIC_MESSAGES.messages({"system": "be brief", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls",
                                           "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a b"},
            {"type": "text", "text": "and now?"}]}]})
    assert [(m.role, m.text, m.call_id) for m in messages] == [
        ("system", "be brief", None), ("user", "hi", None), ("assistant", "", None),
        ("tool", "a b", "t1"), ("user", "and now?", None)]
    items = OPENAI_RESPONSES.messages({"instructions": "be brief", "input": [
        {"role": "developer", "content": "rules"}, {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a b"}]})
    assert [(m.role, m.call_id) for m in items] == [
        ("system", None), ("system", None), ("user", None), ("assistant", None), ("tool", "c1")]
    assert items[4].text == "a b"
    first = OPENAI_RESPONSES.messages({"input": "hi"})
    assert first[0].raw == items[2].raw  # a string input is the user item the next call repeats
