"""Messages and Responses failures record as the sidecar that replays them, and
``stream: false`` answers record their content."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from replay_engine.record import record_scenario
from replay_engine.server import serve_scenario
from tests.record.agent import API_KEY
from tests.record.recordtools import every_byte, scripts_json
from tests.wire.wire_helpers import text_entry, write_scenario

pytestmark = pytest.mark.anyio

PREFIX = [{"type": "block-start", "index": 0, "blockType": "text"},
          {"type": "text-delta", "index": 0, "text": "par"},
          {"type": "text-delta", "index": 0, "text": "tial"}]
ENTRIES = [
    text_entry("hello there", parts=2),
    {"kind": "throw", "chunks": [], "message": f"bad key {API_KEY}", "code": "AUTH"},
    {"kind": "throw", "chunks": PREFIX, "message": "slow down", "code": "RATE_LIMIT"},
    text_entry("after the storm", parts=3),
]

Attempt = Callable[[str, int], Awaitable[tuple[Any, ...]]]


async def messages_attempt(url: str, n: int) -> tuple[Any, ...]:
    """Call ``n`` through the anthropic SDK's stream helper, surviving failures."""
    async with anthropic.AsyncAnthropic(base_url=url, api_key=API_KEY, max_retries=0) as client:
        text = ""
        try:
            async with client.messages.stream(
                    model="m", max_tokens=100,
                    messages=[{"role": "user", "content": f"call {n}"}]) as stream:
                async for piece in stream.text_stream:
                    text += piece
            return ("ok", text)
        except anthropic.APIStatusError as exc:  # an error event mid-stream raises one with 200
            return ("status", exc.status_code) if exc.status_code != 200 else ("broken", text)
        except anthropic.APIError:
            return ("broken", text)


async def responses_attempt(url: str, n: int) -> tuple[Any, ...]:
    """Call ``n`` through the openai SDK's Responses stream helper, surviving failures."""
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key=API_KEY, max_retries=0) as client:
        text = ""
        try:
            async with client.responses.stream(model="m", input=f"call {n}") as stream:
                async for event in stream:
                    if event.type == "response.output_text.delta":
                        text += event.delta
                    elif event.type == "error":  # the helper yields it rather than raising
                        return ("broken", text)
            return ("ok", text)
        except openai.APIStatusError as exc:
            return ("status", exc.status_code)
        except openai.APIError:
            return ("broken", text)


@pytest.mark.parametrize("attempt", [messages_attempt, responses_attempt],
                         ids=["messages", "responses"])
async def test_failures_record_as_the_sidecar_that_replays_them(attempt: Attempt,
                                                                tmp_path: Path) -> None:
    source = write_scenario(tmp_path / "source", ENTRIES)
    target = tmp_path / "recorded"
    async with serve_scenario(source) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            live = [await attempt(rec.url, n) for n in range(4)]
    assert live == [("ok", "hello there"), ("status", 401), ("broken", "partial"),
                    ("ok", "after the storm")]
    assert [r.code for r in rec.reports] == [None, "AUTH", "RATE_LIMIT", None]
    decided = json.loads((target / "replay.override.json").read_text(encoding="utf-8"))
    assert decided[1] == dict(ENTRIES[1], message="bad key [redacted]")
    assert decided[2] == ENTRIES[2]
    assert [e["kind"] for e in decided] == ["chunks", "throw", "throw", "chunks"]
    assert API_KEY.encode() not in every_byte(target)
    async with serve_scenario(target) as replay:
        again = [await attempt(replay.url, n) for n in range(4)]
        assert replay.engine.consumed_problems() == []
    assert again == live


async def test_non_streamed_answers_record_their_content(tmp_path: Path) -> None:
    tool = [{"type": "block-start", "index": 0, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 0, "id": "t1", "name": "ls",
             "argumentsDelta": '{"path":"."}'},
            {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "t1",
                                                        "name": "ls", "arguments": '{"path":"."}'}},
            {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 4}},
            {"type": "finish", "reason": {"kind": "tool-calls"}}]
    source = write_scenario(tmp_path / "source",
                            [{"kind": "chunks", "chunks": tool}, text_entry("done", parts=1)])
    async with serve_scenario(source) as upstream:
        async with record_scenario(tmp_path / "m", upstream.url) as rec:
            async with anthropic.AsyncAnthropic(base_url=rec.url, api_key=API_KEY,
                                                max_retries=0) as client:
                first = await client.messages.create(
                    model="m", max_tokens=10, messages=[{"role": "user", "content": "go"}])
                assert first.content[0].type == "tool_use"
                second = await client.messages.create(model="m", max_tokens=10, messages=[
                    {"role": "user", "content": "go"},
                    {"role": "assistant", "content": [first.content[0].model_dump()]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                  "content": "a b"}]}])
                assert second.content[0].type == "text"
    got = scripts_json(tmp_path / "m")[0]
    assert got[0] == {"kind": "chunks", "chunks": tool}
    assert [c["text"] for c in got[1]["chunks"] if c["type"] == "text-delta"] == ["done"]
    log = [json.loads(line) for line in (tmp_path / "m" / "session.jsonl").read_text().splitlines()]
    results = [e["data"] for e in log if e["type"] == "tool/result"]
    assert [(r["callId"], r["content"], r["step"]) for r in results] == [("t1", "a b", 2)]
