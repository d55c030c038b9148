"""Model text that reads as a replay token (``{{fromRequest:…}}``, ``{{session:N}}``) is recorded
so that it replays as it was said: recorded through the recorder, replayed to a real OpenAI
client, the text and tool arguments are exactly the upstream's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

from replay_engine.record import record_scenario
from replay_engine.scenario.check import check_scenario
from replay_engine.server import serve_scenario
from tests.record.fakeupstream import FakeUpstream, chunk, json_body, sse
from tests.record.recordcheck import no_tracebacks, post

pytestmark = pytest.mark.anyio
__all__ = ["no_tracebacks"]

TEXT_PARTS = ["Order {{fromRequest:order-([0-9]+)}} is ready; ", "ask {{sess", "ion:2}} or ",
              "{{{{fromRequest:x}}, {{fromRequest:unterminated and {{session:1}}."]
ARGS = '{"note":"{{fromRequest:[0-9]{4}}}","who":"{{session:3}}"}'
FINAL = "Done: {{fromRequest:order-([0-9]+)}}"


def streamed() -> Any:
    return sse([chunk({"role": "assistant", "content": ""}),
                *(chunk({"content": p}) for p in TEXT_PARTS),
                chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                       "function": {"name": "note", "arguments": ARGS[:20]}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGS[20:]}}]}),
                chunk({}, "tool_calls")])


def whole() -> Any:
    return json_body({"object": "chat.completion", "choices": [{
        "index": 0, "message": {"role": "assistant", "content": FINAL},
        "finish_reason": "stop"}]})


MESSAGES: list[Any] = [{"role": "user", "content": "where is my order?"}]


async def _replay(url: str) -> tuple[str, str, str]:
    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-x", max_retries=0)
    stream = await client.chat.completions.create(model="m", stream=True, messages=MESSAGES)
    text, args = "", ""
    async for part in stream:
        if not part.choices:
            continue
        delta = part.choices[0].delta
        text += delta.content or ""
        for call in delta.tool_calls or []:
            args += (call.function.arguments or "") if call.function else ""
    follow = [*MESSAGES, {"role": "assistant", "content": text, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "note", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "noted"}]
    answer = await client.chat.completions.create(model="m", stream=False, messages=follow)
    await client.close()
    return text, args, answer.choices[0].message.content or ""


@pytest.mark.parametrize("log_format", ["v1", "v4"])
async def test_token_like_model_text_replays_as_it_was_said(
        tmp_path: Path, no_tracebacks: Any, log_format: str) -> None:
    target = tmp_path / "rec"
    async with FakeUpstream([streamed(), whole()]) as upstream:
        async with record_scenario(target, upstream.url, log_format=log_format) as rec:
            first = await post(rec.url + "/v1/chat/completions",
                               {"model": "m", "stream": True, "messages": MESSAGES})
            assert first.status == 200
            text = "".join(json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                           for line in first.body.decode().split("\n\n")
                           if line.startswith("data: {"))
            follow = [*MESSAGES, {"role": "assistant", "content": text, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "note", "arguments": ARGS}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "noted"}]
            second = await post(rec.url + "/v1/chat/completions",
                                {"model": "m", "stream": False, "messages": follow})
            assert second.status == 200
    assert [r.code for r in rec.reports] == [None, None]
    problems, _ = check_scenario(str(target))
    assert problems == []
    async with serve_scenario(target) as replay:
        replayed = await _replay(replay.url)
    assert replayed == ("".join(TEXT_PARTS), ARGS, FINAL)
