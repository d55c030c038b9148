"""LangChain's ``ChatOpenAI`` streaming against a real replay server.

``ChatOpenAI`` does not expose ``reasoning_content``; everything else of every call must
arrive exactly: text, tool call id, name and arguments, finish, usage.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.utils.json import parse_partial_json
from langchain_openai import ChatOpenAI

from replay_engine.server import serve_scenario
from tests.compat.compat_helpers import (
    CHUNK_SCENARIOS,
    Assembled,
    expected_calls,
    needs_corpus,
    scenario_dir,
    tool,
)

pytestmark = [pytest.mark.anyio, needs_corpus]


def _assembled(message: AIMessageChunk) -> Assembled:
    usage: Any = message.usage_metadata
    tools = [tool(t["id"], t["name"], t["args"]) for t in message.tool_calls]
    # Arguments cut off by a length finish are no JSON: LangChain keeps them as invalid calls.
    tools += [tool(t["id"], t["name"], t["args"]) for t in message.invalid_tool_calls]
    assert isinstance(message.content, str)
    return Assembled(
        text=message.content, tools=tools,
        finish=message.response_metadata.get("finish_reason"),
        usage={"prompt_tokens": usage["input_tokens"], "completion_tokens": usage["output_tokens"],
               "total_tokens": usage["total_tokens"]} if usage else None)


def _as_langchain(expected: Assembled) -> Assembled:
    """What LangChain makes of a call: no reasoning; cut-off arguments parsed as partial JSON."""
    out = expected.without_reasoning()
    out.tools = [{**t, "arguments": parse_partial_json(t["arguments"])}
                 if isinstance(t["arguments"], str) else t for t in out.tools]
    return out


@pytest.mark.parametrize("name", [*CHUNK_SCENARIOS, "basic-chat"])
async def test_chat_openai_astream(name: str) -> None:
    want = expected_calls(name)
    async with serve_scenario(scenario_dir(name)) as server:
        # stream_usage asks for the include_usage chunk, as LangChain users do for token counts.
        llm = ChatOpenAI(model="deepseek-chat", base_url=server.url + "/v1", api_key="any",
                         stream_usage=True)
        for n, expected in enumerate(want):
            message: AIMessageChunk | None = None
            async for chunk in llm.astream("go"):
                message = chunk if message is None else message + chunk
            assert message is not None
            assert _assembled(message) == _as_langchain(expected), f"{name} call {n}"
        assert server.engine.consumed_problems() == []
