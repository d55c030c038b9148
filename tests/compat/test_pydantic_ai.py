"""pydantic-ai against a real replay server: ``Agent.run_stream`` runs a recorded tool loop on
the chat route, and the Responses model shows every recorded reasoning once.

The tool functions really run, with the recorded arguments; every model response of the
run holds the recorded reasoning, text, tool calls and usage, and the replay is consumed.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
from pydantic_ai import Agent, Tool
from pydantic_ai.direct import model_request, model_request_stream
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from replay_engine import ChunksEntry, load_scenario
from replay_engine.server import serve_scenario
from tests.compat.compat_helpers import CORPUS, expected_calls, needs_corpus, scenario_dir, tool
from tests.compat.recorded import recorded_blocks

pytestmark = [pytest.mark.anyio, needs_corpus]

FINISH = {"tool_calls": "tool_call", "stop": "stop", "length": "length"}
"""pydantic-ai's own names for the wire's finish reasons."""


@pytest.mark.parametrize("name", ["parallel-tool-calls", "packed-chunks", "basic-chat"])
async def test_run_stream_runs_the_recorded_tools_with_the_recorded_arguments(name: str) -> None:
    want = expected_calls(name)
    recorded_tools = [t for call in want for t in call.tools]
    ran: list[dict[str, Any]] = []

    def make(tool_name: str) -> Tool[Any]:
        def run(**arguments: Any) -> str:
            ran.append({"name": tool_name, "arguments": arguments})
            return f"{tool_name} ran"
        return Tool.from_schema(run, name=tool_name, description=f"the recorded {tool_name} tool",
                                json_schema={"type": "object", "additionalProperties": True})

    async with serve_scenario(scenario_dir(name)) as server, openai.AsyncOpenAI(
            base_url=server.url + "/v1", api_key="any") as client:
        model = OpenAIChatModel("deepseek-chat", provider=OpenAIProvider(openai_client=client))
        agent = Agent(model, tools=[make(n) for n in sorted({t["name"] for t in recorded_tools})])
        async with agent.run_stream("go") as result:
            output = await result.get_output()
        assert server.engine.consumed_problems() == []
    # Parallel calls run concurrently: each ran once with its recorded arguments, in any order.
    assert sorted(ran, key=repr) == sorted(
        ({"name": t["name"], "arguments": t["arguments"]} for t in recorded_tools), key=repr)
    assert output == want[-1].text
    responses = [m for m in result.all_messages() if isinstance(m, ModelResponse)]
    assert len(responses) == len(want)
    for n, (response, expected) in enumerate(zip(responses, want, strict=True)):
        parts = response.parts
        got = {
            "reasoning": "".join(p.content for p in parts if isinstance(p, ThinkingPart)),
            "text": "".join(p.content for p in parts if isinstance(p, TextPart)),
            "tools": [tool(p.tool_call_id, p.tool_name, p.args) for p in parts
                      if isinstance(p, ToolCallPart)],
            "finish": response.finish_reason,
            "usage": (response.usage.input_tokens, response.usage.output_tokens),
        }
        assert expected.usage is not None
        assert got == {
            "reasoning": expected.reasoning, "text": expected.text, "tools": expected.tools,
            "finish": FINISH[expected.finish or "stop"],
            "usage": (expected.usage["prompt_tokens"], expected.usage["completion_tokens"]),
        }, f"{name} call {n}"


RESPONSES_FINISH = {"stop": "stop", "tool-calls": "stop"}
"""What pydantic-ai's Responses model makes of a recorded finish: a completed response is a
``stop`` whether or not it called tools (docs/clients.md lists this)."""
RESPONSES_SCENARIOS = [
    "Aurora__apps__cli__tests__snapshots__multi-turn-conversation",  # reasoning, text, packed rows
    "Aurora__apps__cli__tests__snapshots__code-mode-dispatch-spill",  # long packed reasoning
    "Aurora__examples__acp-agent__tests__snapshots__parallel-tool-calls",
]


@pytest.mark.parametrize("streamed", [True, False])
@pytest.mark.parametrize("name", RESPONSES_SCENARIOS)
async def test_responses_model_shows_each_recorded_reasoning_once(name: str, streamed: bool) -> None:
    """pydantic-ai's ``OpenAIResponsesModel`` reads reasoning from summaries only: each recorded
    reasoning block is one thinking part with its text (not empty, not twice), beside the
    recorded text, tool calls, finish and usage."""
    assert CORPUS is not None
    root = CORPUS / "scenarios" / name
    scripts = load_scenario(root).scripts
    async with serve_scenario(root) as server:
        for i, script in enumerate(scripts):
            # Default retries, as an agent keeps them: a loaded machine can make the client
            # reuse a keep-alive connection the server just closed (scripted failures never
            # retry: they carry x-should-retry: false).
            async with openai.AsyncOpenAI(base_url=f"{server.url}/sessions/s{i}/v1",
                                          api_key="any") as client:
                model = OpenAIResponsesModel("gpt-5", provider=OpenAIProvider(openai_client=client))
                for j, item in enumerate(script.entries):
                    assert isinstance(item.entry, ChunksEntry)
                    asked = [ModelRequest.user_text_prompt("go")]
                    if streamed:
                        async with model_request_stream(model, asked) as stream:
                            async for _event in stream:
                                pass
                        response = stream.get()
                    else:
                        response = await model_request(model, asked)
                    recorded = recorded_blocks(item.entry.chunks)
                    where = f"{name}[{i}] call {j} ({'stream' if streamed else 'create'})"
                    parts = response.parts
                    assert [p.content for p in parts if isinstance(p, ThinkingPart) and p.content] == [
                        b["content"] for b in recorded["blocks"]
                        if b["kind"] == "reasoning" and b["content"]], where
                    assert "".join(p.content for p in parts if isinstance(p, TextPart)) == "".join(
                        b["content"] for b in recorded["blocks"] if b["kind"] == "text"), where
                    assert [tool(p.tool_call_id, p.tool_name, p.args) for p in parts
                            if isinstance(p, ToolCallPart)] == [
                        tool(b["id"], b["name"], b["content"]) for b in recorded["blocks"]
                        if b["kind"] == "tool-call"], where
                    assert response.finish_reason == RESPONSES_FINISH[
                        recorded["finish"]["kind"]], where
                    usage = recorded["usage"]
                    assert (response.usage.input_tokens, response.usage.output_tokens) == (
                        usage.get("inputTokens", 0) + usage.get("cacheReadTokens", 0),
                        usage.get("outputTokens", 0)), where
        assert server.engine.consumed_problems() == []
