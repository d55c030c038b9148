"""openai-python against a real replay server: raw chunks, the stream helper, stream=False, and
an openai-agents ``Agent`` on its chat-completions model over the same client.

Clients keep their default settings (retries included): the server's answers alone must
make them assemble exactly what was recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

from replay_engine.server import serve_scenario
from tests.compat.compat_helpers import (
    CHUNK_SCENARIOS,
    Assembled,
    accumulate,
    base_usage,
    expected_calls,
    failed,
    needs_corpus,
    scenario_dir,
    tool,
)

pytestmark = [pytest.mark.anyio, needs_corpus]

SCENARIOS = [*CHUNK_SCENARIOS, "basic-chat"]
GO: list[Any] = [{"role": "user", "content": "go"}]


def _client(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url + "/v1", api_key="any")


def _from_message(choice: Any, usage: Any) -> Assembled:
    message = choice.message
    return Assembled(
        text=message.content or "",
        reasoning=getattr(message, "reasoning_content", None) or "",
        tools=[tool(t.id, t.function.name, t.function.arguments) for t in message.tool_calls or []],
        finish=choice.finish_reason,
        usage=base_usage(usage.model_dump()) if usage is not None else None)


@pytest.mark.parametrize("name", SCENARIOS)
async def test_raw_stream_chunks(name: str) -> None:
    want = expected_calls(name)
    async with serve_scenario(scenario_dir(name)) as server:
        client = _client(server.url)
        for n, expected in enumerate(want):
            stream = await client.chat.completions.create(model="m", messages=GO, stream=True)
            chunks: list[dict[str, Any]] = []
            try:
                async for c in stream:
                    chunks.append(c.model_dump(exclude_unset=True))
            except openai.APIError as error:  # an error finish: the stream fails after its prefix
                assert failed(error) == expected, f"{name} call {n}"
                continue
            deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
            assert deltas[0] == {"role": "assistant", "content": ""}, n
            assert all("role" not in d for d in deltas[1:]), n
            assert accumulate(chunks) == expected, f"{name} call {n}"
        await client.close()
        assert server.engine.consumed_problems() == []


@pytest.mark.parametrize("name", SCENARIOS)
async def test_stream_helper_final_completion(name: str) -> None:
    want = expected_calls(name)
    async with serve_scenario(scenario_dir(name)) as server:
        client = _client(server.url)
        for n, expected in enumerate(want):
            try:
                async with client.chat.completions.stream(model="m", messages=GO) as stream:
                    final: Any = await stream.get_final_completion()
            except openai.LengthFinishReasonError as cut:  # how the helper reports a length finish
                assert expected.finish == "length"
                final = cut.completion
            except openai.APIError as error:
                assert failed(error) == expected, f"{name} call {n}"
                continue
            got = _from_message(final.choices[0], final.usage)
            assert got == expected, f"{name} call {n}"
        await client.close()
        assert server.engine.consumed_problems() == []


@pytest.mark.parametrize("name", SCENARIOS)
async def test_stream_false(name: str) -> None:
    want = expected_calls(name)
    async with serve_scenario(scenario_dir(name)) as server:
        client = _client(server.url)
        for n, expected in enumerate(want):
            try:
                completion = await client.chat.completions.create(model="m", messages=GO)
            except openai.APIStatusError as error:
                assert failed(error) == expected.answered_whole(), f"{name} call {n}"
                continue
            assert completion.usage is not None
            got = _from_message(completion.choices[0], completion.usage)
            assert got == expected, f"{name} call {n}"
        await client.close()


@pytest.mark.parametrize("name", SCENARIOS)
async def test_include_usage_sends_usage_alone_last(name: str) -> None:
    want = expected_calls(name)
    async with serve_scenario(scenario_dir(name)) as server:
        client = _client(server.url)
        for n, expected in enumerate(want):
            stream = await client.chat.completions.create(
                model="m", messages=GO, stream=True, stream_options={"include_usage": True})
            chunks = []
            try:
                async for c in stream:
                    chunks.append(c.model_dump(exclude_unset=True))
            except openai.APIError as error:
                assert failed(error) == expected, f"{name} call {n}"
                continue
            assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] is not None
            assert all(c["usage"] is None for c in chunks[:-1])
            assert accumulate(chunks) == expected, f"{name} call {n}"
        await client.close()


async def test_a_throw_with_prefix_streams_the_prefix_then_fails(tmp_path: Path) -> None:
    prefix = [{"type": "block-start", "index": 0, "blockType": "text"},
              {"type": "text-delta", "index": 0, "text": "half an ans"}]
    root = _authored(tmp_path, [{"kind": "throw", "chunks": prefix, "message": "cut off",
                                 "code": "SERVER"}])
    async with serve_scenario(root) as server:
        client = _client(server.url)
        seen: list[str] = []
        with pytest.raises(openai.APIError) as caught:
            stream = await client.chat.completions.create(model="m", messages=GO, stream=True)
            async for chunk in stream:
                seen.append(chunk.choices[0].delta.content or "")
        await client.close()
        assert "".join(seen) == "half an ans"
        assert caught.value.body == {"message": "cut off", "code": "SERVER"}
        assert [r.outcome for r in server.engine.journal()] == ["failed"]


@needs_corpus
async def test_a_throw_without_prefix_is_an_http_error_the_sdk_does_not_retry() -> None:
    want = expected_calls("error-finish")
    assert want == [Assembled(error=(401, "AUTH"))]
    async with serve_scenario(scenario_dir("error-finish")) as server:
        client = _client(server.url)
        with pytest.raises(openai.AuthenticationError) as caught:
            await client.chat.completions.create(model="m", messages=GO, stream=True)
        await client.close()
        assert caught.value.code == "AUTH"
        assert len(server.engine.journal()) == 1


@pytest.mark.parametrize("name", ["basic-chat", "parallel-tool-calls"])
async def test_an_agents_sdk_agent_on_the_chat_model_runs_the_recorded_tools(name: str) -> None:
    """openai-agents' ``OpenAIChatCompletionsModel`` (the docs/clients.md line, the session in the
    path form of the base URL) runs the recorded tool loop: every model response holds the
    recorded reasoning, text, tool calls and usage, and the tools ran with the recorded
    arguments."""
    agents = pytest.importorskip("agents")
    want = expected_calls(name)
    recorded_tools = [t for call in want for t in call.tools]
    ran: list[dict[str, Any]] = []

    def make(tool_name: str) -> Any:
        async def invoke(_context: Any, arguments: str) -> str:
            ran.append({"name": tool_name, "arguments": json.loads(arguments)})
            return f"{tool_name} ran"
        return agents.FunctionTool(
            name=tool_name, description=f"the recorded {tool_name} tool",
            params_json_schema={"type": "object", "additionalProperties": True},
            on_invoke_tool=invoke, strict_json_schema=False)

    async with serve_scenario(scenario_dir(name)) as server, openai.AsyncOpenAI(
            base_url=f"{server.url}/sessions/agent-1/v1", api_key="any") as client:
        model = agents.OpenAIChatCompletionsModel(model="deepseek-chat", openai_client=client)
        agent = agents.Agent(name="a", instructions="go", model=model,
                             tools=[make(n) for n in sorted({t["name"] for t in recorded_tools})])
        result = await agents.Runner.run(agent, "go",
                                         run_config=agents.RunConfig(tracing_disabled=True))
        assert server.engine.consumed_problems() == []
    assert sorted(ran, key=repr) == sorted(
        ({"name": t["name"], "arguments": t["arguments"]} for t in recorded_tools), key=repr)
    assert result.final_output == want[-1].text
    for n, (response, expected) in enumerate(zip(result.raw_responses, want, strict=True)):
        out = response.output
        assert expected.usage is not None
        assert {
            "reasoning": "".join(s.text for o in out if o.type == "reasoning" for s in o.summary),
            "text": "".join(c.text for o in out if o.type == "message" for c in o.content
                            if c.type == "output_text"),
            "tools": [tool(o.call_id, o.name, o.arguments) for o in out if o.type == "function_call"],
            "usage": (response.usage.input_tokens, response.usage.output_tokens),
        } == {
            "reasoning": expected.reasoning, "text": expected.text, "tools": expected.tools,
            "usage": (expected.usage["prompt_tokens"], expected.usage["completion_tokens"]),
        }, f"{name} call {n}"


def _authored(tmp_path: Path, entries: list[dict[str, Any]]) -> Path:
    from tests.wire.wire_helpers import write_scenario

    return write_scenario(tmp_path / "s", entries)
