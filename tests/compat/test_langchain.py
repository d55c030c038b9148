"""LangChain's ``ChatOpenAI`` and ``ChatAnthropic`` streaming against a real replay server.

``ChatOpenAI`` does not expose ``reasoning_content``; everything else of every call must
arrive exactly: text, tool call id, name and arguments, finish, usage, and an error finish
raises. ``ChatAnthropic`` must read every call's recorded usage from the stream.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessageChunk
from langchain_core.utils.json import parse_partial_json
from langchain_openai import ChatOpenAI

from replay_engine import ChunksEntry, load_scenario
from replay_engine.server import serve_scenario
from tests.compat.compat_helpers import (
    CHUNK_SCENARIOS,
    CORPUS,
    Assembled,
    expected_calls,
    failed,
    needs_corpus,
    scenario_dir,
    tool,
)
from tests.compat.recorded import recorded_blocks

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


@pytest.mark.parametrize("stream_usage", [True, None])
@pytest.mark.parametrize("name", [*CHUNK_SCENARIOS, "basic-chat"])
async def test_chat_openai_astream(name: str, stream_usage: bool | None) -> None:
    """Usage arrives with ``stream_usage=True`` (the include_usage chunk, as LangChain users ask
    a real provider for token counts) and without it (a custom ``base_url`` leaves it off, and
    the replay then puts usage on the finish chunk), as docs/clients.md says."""
    want = expected_calls(name)
    async with serve_scenario(scenario_dir(name)) as server:
        llm = ChatOpenAI(model="deepseek-chat", base_url=server.url + "/v1", api_key="any",
                         stream_usage=stream_usage)
        for n, expected in enumerate(want):
            message: AIMessageChunk | None = None
            try:
                async for chunk in llm.astream("go"):
                    message = chunk if message is None else message + chunk
            except openai.APIError as error:  # an error finish raises, as a throw does
                assert failed(error) == expected, f"{name} call {n}"
                continue
            assert message is not None
            assert _assembled(message) == _as_langchain(expected), f"{name} call {n}"
        assert server.engine.consumed_problems() == []


ANTHROPIC_SCENARIOS = [
    "Aurora__apps__cli__tests__snapshots__multi-turn-conversation",  # reasoning, text, cache reads
    "Aurora__examples__acp-agent__tests__snapshots__parallel-tool-calls",
    "apps__web__tests__snapshots__cordis-tool-round",
    "examples__acp-agent__tests__snapshots__max-tokens-continue",
]
STOP_REASONS = {"stop": "end_turn", "tool-calls": "tool_use", "max-tokens": "max_tokens"}


@pytest.mark.parametrize("name", ANTHROPIC_SCENARIOS)
async def test_chat_anthropic_astream_reads_the_recorded_usage(name: str) -> None:
    """langchain-anthropic reads streamed usage from ``message_delta`` alone: its input tokens
    (input plus cache reads) and output tokens are the recorded ones on every call."""
    assert CORPUS is not None
    root = CORPUS / "scenarios" / name
    scripts = load_scenario(root).scripts
    checked = 0
    async with serve_scenario(root) as server:
        for i, script in enumerate(scripts):
            names = sorted({b["name"] for item in script.entries
                            if isinstance(item.entry, ChunksEntry)
                            for b in recorded_blocks(item.entry.chunks)["blocks"]
                            if b["kind"] == "tool-call"})
            # The agent's tools, as an agent binds them (its answers then hold content blocks).
            llm = ChatAnthropic(model_name="claude-replay", base_url=server.url, api_key="any",
                                max_retries=0, timeout=30, stop=None,
                                default_headers={"X-Session-Id": f"s{i}"}).bind_tools(
                [{"name": n, "description": f"the recorded {n} tool",
                  "input_schema": {"type": "object"}} for n in names])
            for j, item in enumerate(script.entries):
                assert isinstance(item.entry, ChunksEntry)
                recorded = recorded_blocks(item.entry.chunks)
                message: AIMessageChunk | None = None
                async for chunk in llm.astream("go"):
                    message = chunk if message is None else message + chunk
                assert message is not None and message.usage_metadata is not None
                usage = recorded["usage"]
                where = f"{name}[{i}] call {j}"
                assert message.usage_metadata["input_tokens"] == (
                    usage.get("inputTokens", 0) + usage.get("cacheReadTokens", 0)), where
                assert message.usage_metadata["output_tokens"] == usage.get("outputTokens", 0), where
                assert message.response_metadata["stop_reason"] == STOP_REASONS[
                    recorded["finish"]["kind"]], where
                text = "".join(b["content"] for b in recorded["blocks"] if b["kind"] == "text")
                assert message.text == text, where
                checked += 1
        assert server.engine.consumed_problems() == []
    assert checked == sum(len(s.entries) for s in scripts)
