"""pydantic-ai's ``Agent.run_stream`` runs a recorded tool loop against a real replay server.

The tool functions really run, with the recorded arguments; every model response of the
run holds the recorded reasoning, text, tool calls and usage, and the replay is consumed.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
from pydantic_ai import Agent, Tool
from pydantic_ai.messages import ModelResponse, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from replay_engine.server import serve_scenario
from tests.compat.compat_helpers import expected_calls, needs_corpus, scenario_dir, tool

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
    assert ran == [{"name": t["name"], "arguments": t["arguments"]} for t in recorded_tools]
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
