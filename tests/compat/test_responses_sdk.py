"""The Responses route judged by the real ``openai`` SDK over a real socket (docs/format.md#wire-responses).

Every call of a spread of conformance scenarios, streamed (``responses.stream(...)``,
``get_final_response()`` when it completes) and not (``responses.create()``), must
give the recorded output items in order (reasoning, message, function_call) with their
text, reasoning text, call_id, name and arguments, the status the finish maps to, and
the usage; the streamed deltas must add up to the same content. Reasoning is checked in both
forms the route sends (a ``summary_text`` summary by default, ``reasoning_text`` content with
``--responses-reasoning content``), each item carrying it in exactly one of the two.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest

from replay_engine import ChunksEntry, SessionScript, ThrowEntry, WireOptions, load_scenario
from tests.compat.recorded import PREFIX, SIGNED, Served, check_every_call, recorded_blocks, scenario_scripts
from tests.compat.recorded import serving as serving_with
from tests.conftest import conformance_dir

pytestmark = pytest.mark.anyio

CORPUS = conformance_dir()
MODEL = "gpt-replay"
SCENARIOS = [
    "Aurora__apps__cli__tests__snapshots__multi-turn-conversation",  # reasoning, text, packed rows
    "Aurora__apps__cli__tests__snapshots__code-mode-dispatch-spill",  # long packed reasoning
    "Aurora__examples__acp-agent__tests__snapshots__parallel-tool-calls",
    "apps__web__tests__snapshots__cordis-tool-round",  # block-end-only blocks
    "examples__acp-agent__tests__snapshots__max-tokens-continue",  # incomplete, truncated arguments
    "examples__headless-agent__tests__snapshots__compaction-recovery",  # error finish
    "examples__acp-agent__tests__snapshots__empty-response-retry",  # error finish, then a retry
    "Aurora__examples__acp-agent__tests__snapshots__error-finish",  # AUTH throw, no prefix
]
ITEM = {"text": "message", "reasoning": "reasoning", "tool-call": "function_call"}
STATUS = {"stop": "completed", "tool-calls": "completed", "max-tokens": "incomplete",
          "error": "failed"}
TERMINAL = {"completed": "response.completed", "incomplete": "response.incomplete",
            "failed": "response.failed"}
ERRORS: dict[str, tuple[int, type[openai.APIStatusError]]] = {
    "AUTH": (401, openai.AuthenticationError),
    "RATE_LIMIT": (429, openai.RateLimitError),
    "SERVER": (500, openai.InternalServerError),
}


def _client(url: str, run: str, retries: int) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{url}/runs/{run}/v1", api_key="replay", max_retries=retries)


@contextlib.asynccontextmanager
async def serving(scripts: list[SessionScript], reasoning: str = "summary",
                  ) -> AsyncIterator[Served[openai.AsyncOpenAI]]:
    """The replay server (reasoning in the given form) with one AsyncOpenAI client per run."""
    wire = WireOptions(responses_reasoning="content" if reasoning == "content" else "summary")
    async with serving_with(scripts, _client, wire) as served:
        yield served


def _request(session: str) -> dict[str, Any]:
    return {"model": MODEL, "instructions": "be brief", "input": "go",
            "extra_headers": {"X-Session-Id": session}}


def expected_output(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in recorded_blocks(chunks)["blocks"]:
        if block["kind"] == "tool-call":
            out.append({"type": "function_call", "call_id": block["id"], "name": block["name"],
                        "arguments": block["content"]})
        else:
            out.append({"type": ITEM[block["kind"]], "text": block["content"]})
    return out


def sdk_output(response: openai.types.responses.Response) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in response.output:
        if item.type == "function_call":
            assert item.status == "completed"
            out.append({"type": item.type, "call_id": item.call_id, "name": item.name,
                        "arguments": item.arguments})
        elif item.type == "message":
            assert item.role == "assistant" and item.status == "completed"
            assert [part.type for part in item.content] == ["output_text"]
            out.append({"type": item.type, "text": "".join(
                part.text for part in item.content if part.type == "output_text")})
        elif item.type == "reasoning":  # in exactly one of the two forms
            if item.content is not None:
                assert item.summary == [] and {c.type for c in item.content} == {"reasoning_text"}
                out.append({"type": item.type, "text": "".join(c.text for c in item.content)})
            else:
                assert [part.type for part in item.summary] == ["summary_text"]
                out.append({"type": item.type, "text": item.summary[0].text})
        else:
            out.append({"type": item.type})
    return out


def check_response(response: openai.types.responses.Response, chunks: list[dict[str, Any]],
                   where: str) -> None:
    recorded = recorded_blocks(chunks)
    assert sdk_output(response) == expected_output(chunks), where
    assert response.model == MODEL
    status = STATUS[recorded["finish"]["kind"]]
    assert response.status == status, where
    if status == "incomplete":
        assert response.incomplete_details is not None
        assert response.incomplete_details.reason == "max_output_tokens"
    if status == "failed":
        failure = recorded["finish"]["failure"]
        assert response.error is not None
        assert (response.error.code, response.error.message) == (failure["code"],
                                                                  failure["message"]), where
    usage = recorded["usage"]
    cached = usage.get("cacheReadTokens", 0)
    assert response.usage is not None
    assert response.usage.input_tokens == usage.get("inputTokens", 0) + cached, where
    assert response.usage.input_tokens_details.cached_tokens == cached
    assert response.usage.output_tokens == usage.get("outputTokens", 0)
    assert response.usage.output_tokens_details.reasoning_tokens == usage.get("reasoningTokens", 0)
    assert response.usage.total_tokens == (response.usage.input_tokens
                                           + response.usage.output_tokens)


async def stream_call(api: openai.AsyncOpenAI, session: str) -> tuple[list[Any], Any]:
    """One streamed call: every event, and the final response (the SDK's own when completed)."""
    events: list[Any] = []
    async with api.responses.stream(**_request(session)) as stream:
        async for event in stream:
            events.append(event)
        final = (await stream.get_final_response() if events[-1].type == "response.completed"
                 else getattr(events[-1], "response", None))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[0].response.status == "in_progress" and events[0].response.output == []
    assert events[0].response.model == MODEL
    return events, final


DELTAS = ("response.output_text.delta", "response.reasoning_text.delta",
          "response.reasoning_summary_text.delta", "response.function_call_arguments.delta")
REASONING_EVENTS = {
    "summary": ["response.output_item.added", "response.reasoning_summary_part.added",
                "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
                "response.reasoning_summary_part.done", "response.output_item.done"],
    "content": ["response.output_item.added", "response.reasoning_text.delta",
                "response.reasoning_text.done", "response.output_item.done"],
}
"""A reasoning item's events in order (its deltas, one or more, shown once), by form."""


def streamed_content(events: list[Any]) -> dict[int, str]:
    """What the delta events add up to, per output index."""
    pieces: dict[int, str] = {}
    for event in events:
        if event.type in DELTAS:
            pieces[event.output_index] = pieces.get(event.output_index, "") + event.delta
    return pieces


def reasoning_forms(events: list[Any]) -> set[str]:
    """The forms the stream's reasoning items took (checking each item's event order)."""
    forms: set[str] = set()
    reasoning = {e.output_index for e in events
                 if e.type == "response.output_item.added" and e.item.type == "reasoning"}
    for index in reasoning:
        kinds = [e.type for e in events if getattr(e, "output_index", None) == index]
        deduped = [k for n, k in enumerate(kinds) if n == 0 or k != kinds[n - 1] or
                   not k.endswith(".delta")]
        form = "summary" if "response.reasoning_summary_part.added" in kinds else "content"
        wanted = REASONING_EVENTS[form]
        assert deduped in (wanted, [k for k in wanted if not k.endswith(".delta")]), kinds
        forms.add(form)
    return forms


def check_stream(events: list[Any], final: Any, chunks: list[dict[str, Any]], where: str) -> None:
    assert final is not None, where
    check_response(final, chunks, where)
    assert events[-1].type == TERMINAL[final.status]
    wanted = expected_output(chunks)
    deltas = streamed_content(events)
    for n, item in enumerate(wanted):
        content = item.get("arguments", item.get("text"))
        assert deltas.get(n, "") == content, f"{where} item {n}"
    added = [e.item.type for e in events if e.type == "response.output_item.added"]
    done = [e.item.type for e in events if e.type == "response.output_item.done"]
    assert added == done == [item["type"] for item in wanted], where


async def check_call(served: Served[openai.AsyncOpenAI], session: str, entry: Any, where: str,
                     forms: set[str] | None = None) -> None:
    """One recorded call, streamed on run ``stream`` and not on run ``create`` (``forms``
    collects the forms its streamed reasoning took)."""
    if isinstance(entry, ThrowEntry):
        assert not entry.chunks
        status, cls = ERRORS[entry.code]
        for run in ("stream", "create"):
            with pytest.raises(cls) as caught:
                if run == "stream":
                    await stream_call(served.client(run), session)
                else:
                    await served.client(run).responses.create(**_request(session))
            assert caught.value.status_code == status
            assert caught.value.body == {"message": entry.message, "type": "replay_error",
                                         "code": entry.code}
        return
    assert isinstance(entry, ChunksEntry)
    events, final = await stream_call(served.client("stream"), session)
    check_stream(events, final, entry.chunks, f"{where} (stream)")
    if forms is not None:
        forms |= reasoning_forms(events)
    created = await served.client("create").responses.create(**_request(session))
    check_response(created, entry.chunks, f"{where} (create)")


@pytest.mark.conformance
@pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")
@pytest.mark.parametrize(("name", "reasoning"), [
    *((name, "summary") for name in SCENARIOS),
    *((name, "content") for name in SCENARIOS[:2]),  # the reasoning-heavy ones
])
async def test_sdk_assembles_every_recorded_call(name: str, reasoning: str) -> None:
    assert CORPUS is not None
    scenario = load_scenario(CORPUS / "scenarios" / name)
    seen: set[str] = set()

    async def check(served: Served[openai.AsyncOpenAI], session: str, entry: Any,
                    where: str) -> None:
        await check_call(served, session, entry, where, seen)

    async with serving(scenario.scripts, reasoning) as served:
        await check_every_call(served, scenario, name, check)
    if name in SCENARIOS[:2]:
        assert seen == {reasoning}


async def test_throws_and_aborts_end_the_stream_with_an_error_event(tmp_path: Path) -> None:
    entries = [
        {"kind": "throw", "chunks": PREFIX, "message": "upstream broke", "code": "SERVER"},
        {"kind": "throw", "chunks": PREFIX, "message": "upstream broke", "code": "SERVER"},
        {"kind": "hang"},
        {"kind": "throw", "chunks": [], "message": "slow down", "code": "RATE_LIMIT"},
    ]
    async with serving(scenario_scripts(tmp_path, entries)) as served:
        api = served.client("default")
        events, final = await stream_call(api, "a")
        assert final is None
        assert streamed_content(events) == {0: "Half an answer"}
        error = events[-1]
        assert (error.type, error.code, error.message) == ("error", "SERVER", "upstream broke")

        with pytest.raises(openai.InternalServerError) as caught:
            await api.responses.create(**_request("a"))
        assert caught.value.body == {"message": "upstream broke", "type": "replay_error",
                                     "code": "SERVER"}

        seen: list[Any] = []
        async with api.responses.stream(**_request("a")) as stream:
            async for event in stream:
                seen.append(event)
                if event.type == "response.output_text.delta" and event.delta == "partial":
                    assert served.engine.cancel("a") == 1
        assert [e.sequence_number for e in seen] == list(range(len(seen)))
        assert (seen[-1].type, seen[-1].code) == ("error", "ABORTED")

        retrying = served.client("default", retries=2)
        with pytest.raises(openai.RateLimitError):
            await retrying.responses.create(**_request("a"))
        assert served.engine.consumed_problems() == []  # no SDK retry consumed a call


async def test_an_error_finish_is_a_failed_response_not_an_exception(tmp_path: Path) -> None:
    """What docs/clients.md says the Python client makes of a recorded error finish:
    ``responses.create()`` returns it failed, with the code; the ``responses.stream()`` helper
    yields ``response.failed`` (the code in it) and then ``get_final_response()`` raises a
    ``RuntimeError`` that has lost the code."""
    failing = {"kind": "chunks", "chunks": [
        *PREFIX, {"type": "finish", "reason": {"kind": "error", "code": "SERVER",
                                                "message": "upstream broke"}}]}
    async with serving(scenario_scripts(tmp_path, [failing, failing])) as served:
        api = served.client("default")
        created = await api.responses.create(**_request("a"))
        assert created.status == "failed" and created.output_text == "Half an answer"
        assert created.error is not None
        assert (created.error.code, created.error.message) == ("SERVER", "upstream broke")
        async with api.responses.stream(**_request("a")) as stream:
            events = [event async for event in stream]
            last = events[-1]
            assert last.type == "response.failed" and last.response.error is not None
            assert last.response.error.code == "SERVER"
            with pytest.raises(RuntimeError, match="response.completed"):
                await stream.get_final_response()
        assert served.engine.consumed_problems() == []


async def test_from_request_searches_instructions_then_input(tmp_path: Path) -> None:
    entry = {"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "ticket {{fromRequest:T-([0-9]+)}}"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "x"}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]}
    async with serving(scenario_scripts(tmp_path, [entry, entry])) as served:
        api = served.client("default")
        request = _request("a")
        request["instructions"] = "T-1 is closed"
        request["input"] = [{"role": "user", "content": [{"type": "input_text", "text": "T-22?"}]}]
        created = await api.responses.create(**request)
        assert created.output_text == "ticket 22"
        request["input"] = "nothing here"
        async with api.responses.stream(**request) as stream:
            final = await stream.get_final_response()
        assert final.output_text == "ticket 1"


async def test_sparse_indices_become_consecutive_output_items(tmp_path: Path) -> None:
    async with serving(scenario_scripts(tmp_path, [SIGNED, SIGNED])) as served:
        events, final = await stream_call(served.client("default"), "a")
        check_stream(events, final, SIGNED["chunks"], "stream")
        assert [e.output_index for e in events if e.type == "response.output_item.added"] == [0, 1, 2]
        created = await served.client("default").responses.create(**_request("a"))
        check_response(created, SIGNED["chunks"], "create")


async def test_an_agents_sdk_agent_runs_a_recorded_tool_loop(tmp_path: Path) -> None:
    agents = pytest.importorskip("agents")
    calls = [
        {"kind": "chunks", "chunks": [
            {"type": "block-start", "index": 0, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 0, "id": "call_add", "name": "add",
             "argumentsDelta": '{"a": 2, '},
            {"type": "tool-call-delta", "index": 0, "id": "call_add", "argumentsDelta": '"b": 40}'},
            {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "call_add",
                                                        "name": "add", "arguments": '{"a": 2, "b": 40}'}},
            {"type": "usage", "usage": {"inputTokens": 20, "outputTokens": 9}},
            {"type": "finish", "reason": {"kind": "tool-calls"}}]},
        {"kind": "chunks", "chunks": [
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "The sum is "},
            {"type": "text-delta", "index": 0, "text": "{{fromRequest:sum=([0-9]+)}}."},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "The sum is 42."}},
            {"type": "usage", "usage": {"inputTokens": 30, "outputTokens": 6}},
            {"type": "finish", "reason": {"kind": "stop"}}]},
    ]
    ran: list[tuple[int, int]] = []

    @agents.function_tool
    def add(a: int, b: int) -> str:
        """Add two integers."""
        ran.append((a, b))
        return f"sum={a + b}"

    async with serving(scenario_scripts(tmp_path, calls)) as served:
        # The agent names no model: it runs on the provider's default, a Responses model.
        provider = agents.OpenAIProvider(base_url=f"{served.url}/sessions/adder/v1", api_key="replay")
        agent = agents.Agent(name="adder", instructions="add", tools=[add])
        run_config = agents.RunConfig(model_provider=provider, tracing_disabled=True)
        result = await agents.Runner.run(agent, "what is 2 + 40?", run_config=run_config)
        assert ran == [(2, 40)]
        assert result.final_output == "The sum is 42."
        assert served.engine.consumed_problems() == []
        journal = served.engine.journal()
        assert [(r.session, r.dialect) for r in journal] == [("adder", "responses")] * 2
        assert "sum=42" in json.dumps(journal[1].messages)  # the tool's output went back
