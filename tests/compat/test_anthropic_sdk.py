"""The Messages route judged by the real ``anthropic`` SDK over a real socket (docs/format.md#wire-anthropic).

Every call of a spread of conformance scenarios, streamed (``messages.stream(...)
.get_final_message()``) and not (``messages.create()``), must assemble the recorded
blocks: text, thinking with its signature, tool_use id, name and input equal to the
parsed recorded arguments (``{}`` where a max-tokens finish cut them), the mapped stop reason
and the usage, which ``message_delta`` states whole. The Node SDK (``@anthropic-ai/sdk``, the
session in the path form of the base URL) must assemble the same (``npm ci`` in
``tests/compat/node``; skipped without node, except in CI).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from replay_engine import ChunksEntry, SessionScript, ThrowEntry, load_scenario
from replay_engine.server import serve_scenario
from tests.compat.compat_helpers import NODE_DIR, node_or_skip
from tests.compat.recorded import (
    PREFIX,
    SIGNED,
    Served,
    check_every_call,
    json_object,
    recorded_blocks,
    scenario_scripts,
)
from tests.compat.recorded import serving as serving_with
from tests.conftest import conformance_dir

pytestmark = pytest.mark.anyio

CORPUS = conformance_dir()
MODEL = "claude-replay"
SCENARIOS = [
    "Aurora__apps__cli__tests__snapshots__multi-turn-conversation",  # reasoning, text, packed rows
    "Aurora__apps__cli__tests__snapshots__code-mode-dispatch-spill",  # long packed reasoning
    "Aurora__examples__acp-agent__tests__snapshots__parallel-tool-calls",
    "apps__web__tests__snapshots__cordis-tool-round",  # block-end-only blocks
    "examples__acp-agent__tests__snapshots__max-tokens-continue",  # truncated tool arguments
    "examples__headless-agent__tests__snapshots__compaction-recovery",  # error finish
    "examples__acp-agent__tests__snapshots__empty-response-retry",  # error finish, then a retry
    "Aurora__examples__acp-agent__tests__snapshots__error-finish",  # AUTH throw, no prefix
]
STOP = {"stop": "end_turn", "tool-calls": "tool_use", "max-tokens": "max_tokens"}
ERRORS: dict[str, tuple[int, str, type[anthropic.APIStatusError]]] = {
    "AUTH": (401, "authentication_error", anthropic.AuthenticationError),
    "RATE_LIMIT": (429, "rate_limit_error", anthropic.RateLimitError),
    "CONTEXT_WINDOW_EXCEEDED": (400, "invalid_request_error", anthropic.BadRequestError),
    "EMPTY_RESPONSE": (500, "api_error", anthropic.InternalServerError),
    "SERVER": (500, "api_error", anthropic.InternalServerError),
    "HTTP_529": (529, "overloaded_error", anthropic.OverloadedError),
    "ABORTED": (500, "api_error", anthropic.InternalServerError),
    "SCRIPT_EXHAUSTED": (409, "invalid_request_error", anthropic.ConflictError),
}


def _client(url: str, run: str, retries: int) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=f"{url}/runs/{run}", api_key="replay", max_retries=retries)


@contextlib.asynccontextmanager
async def serving(scripts: list[SessionScript]) -> AsyncIterator[Served[anthropic.AsyncAnthropic]]:
    """The replay server with one AsyncAnthropic client per run."""
    async with serving_with(scripts, _client) as served:
        yield served


def _request(session: str) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 1024, "system": "be brief",
            "messages": [{"role": "user", "content": "go"}],
            "extra_headers": {"X-Session-Id": session}}


def expected_content(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in recorded_blocks(chunks)["blocks"]:
        if block["kind"] == "text":
            out.append({"type": "text", "text": block["content"]})
        elif block["kind"] == "reasoning":
            out.append({"type": "thinking", "thinking": block["content"],
                        "signature": block["signature"] or ""})
        else:
            out.append({"type": "tool_use", "id": block["id"], "name": block["name"],
                        "input": json_object(block["content"]), "arguments": block["content"]})
    return out


def sdk_content(message: anthropic.types.Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in message.content:
        if block.type == "text":
            out.append({"type": "text", "text": block.text})
        elif block.type == "thinking":
            out.append({"type": "thinking", "thinking": block.thinking, "signature": block.signature})
        elif block.type == "tool_use":
            out.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
        else:
            out.append({"type": block.type})
    return out


def check_message(message: anthropic.types.Message, chunks: list[dict[str, Any]],
                  partial_json: dict[int, str] | None, where: str) -> None:
    """The SDK's message equals the recording; streamed tool input is also checked raw."""
    recorded = recorded_blocks(chunks)
    expected = expected_content(chunks)
    got = sdk_content(message)
    assert len(got) == len(expected), where
    for n, (want, have) in enumerate(zip(expected, got, strict=True)):
        if want["type"] == "tool_use":
            arguments = want.pop("arguments")
            if partial_json is not None:
                assert partial_json.get(n, "") == arguments, f"{where} block {n}"
            if want["input"] is None and partial_json is not None:
                want["input"] = have["input"]  # not an object: streamed raw, the SDK's own parse
            elif want["input"] is None:  # stream: false: cut arguments are {} (max-tokens only)
                assert recorded["finish"]["kind"] == "max-tokens", where
                want["input"] = {}
        assert have == want, f"{where} block {n}"
    assert message.model == MODEL
    assert message.role == "assistant"
    assert message.stop_reason == STOP[recorded["finish"]["kind"]], where
    usage = recorded["usage"]
    assert message.usage.input_tokens == usage.get("inputTokens", 0), where
    assert message.usage.output_tokens == usage.get("outputTokens", 0), where
    assert message.usage.cache_read_input_tokens == usage.get("cacheReadTokens"), where


async def stream_call(api: anthropic.AsyncAnthropic,
                      session: str) -> tuple[anthropic.types.Message, dict[int, str]]:
    """One streamed call: the SDK's final message and the raw tool input per block; its
    ``message_delta`` states the whole usage the final message holds."""
    partial: dict[int, str] = {}
    delta_usage: Any = None
    async with api.messages.stream(**_request(session)) as stream:
        async for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                partial[event.index] = partial.get(event.index, "") + event.delta.partial_json
            elif event.type == "message_delta":
                delta_usage = event.usage
        message = await stream.get_final_message()
    assert delta_usage is not None
    assert (delta_usage.input_tokens, delta_usage.cache_read_input_tokens,
            delta_usage.output_tokens) == (message.usage.input_tokens,
                                           message.usage.cache_read_input_tokens,
                                           message.usage.output_tokens)
    return message, partial


def check_error(exc: anthropic.APIStatusError, code: str, message: str, *, streamed: bool) -> None:
    """A streamed error arrives on a 200 stream, so the SDK raises its base status error."""
    status, kind, cls = ERRORS[code]
    if streamed:
        assert type(exc) is anthropic.APIStatusError and exc.status_code == 200
    else:
        assert isinstance(exc, cls) and exc.status_code == status, (type(exc), code)
    assert exc.body == {"type": "error", "error": {"type": kind, "message": message}, "code": code}


async def check_call(served: Served[anthropic.AsyncAnthropic], session: str, entry: Any, where: str) -> None:
    """One recorded call, streamed on run ``stream`` and not on run ``create``."""
    if isinstance(entry, ThrowEntry):
        assert not entry.chunks
        for run in ("stream", "create"):
            with pytest.raises(anthropic.APIStatusError) as caught:
                if run == "stream":
                    await stream_call(served.client(run), session)
                else:
                    await served.client(run).messages.create(**_request(session))
            check_error(caught.value, entry.code, entry.message, streamed=False)
        return
    assert isinstance(entry, ChunksEntry)
    chunks = entry.chunks
    finish = recorded_blocks(chunks)["finish"]
    if finish["kind"] == "error":
        failure = finish["failure"]
        with pytest.raises(anthropic.APIStatusError) as caught:
            await stream_call(served.client("stream"), session)
        check_error(caught.value, failure["code"], failure["message"], streamed=True)
        with pytest.raises(anthropic.APIStatusError) as caught:
            await served.client("create").messages.create(**_request(session))
        check_error(caught.value, failure["code"], failure["message"], streamed=False)
        return
    message, partial = await stream_call(served.client("stream"), session)
    check_message(message, chunks, partial, f"{where} (stream)")
    representable = finish["kind"] == "max-tokens" or all(
        b["input"] is not None for b in expected_content(chunks) if b["type"] == "tool_use")
    if representable:
        created = await served.client("create").messages.create(**_request(session))
        check_message(created, chunks, None, f"{where} (create)")
        return
    with pytest.raises(anthropic.InternalServerError) as caught:
        await served.client("create").messages.create(**_request(session))
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "UNREPRESENTABLE"
    assert error["error"]["type"] == "api_error"
    text = error["error"]["message"]
    assert f"session {session}" in text and "not a JSON object" in text
    assert "native route POST /replay/v1/stream" in text


@pytest.mark.conformance
@pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")
@pytest.mark.parametrize("name", SCENARIOS)
async def test_sdk_assembles_every_recorded_call(name: str) -> None:
    assert CORPUS is not None
    scenario = load_scenario(CORPUS / "scenarios" / name)
    async with serving(scenario.scripts) as served:
        await check_every_call(served, scenario, name, check_call)


NODE_SDK = "@anthropic-ai/sdk"


async def _node(base: str, mode: str, calls: int) -> list[dict[str, Any]]:
    """What ``tests/compat/node/anthropic.mjs`` assembled of ``calls`` calls."""
    node = node_or_skip(NODE_DIR, NODE_SDK)
    process = await asyncio.create_subprocess_exec(
        node, str(NODE_DIR / "anthropic.mjs"), base, mode, str(calls),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=NODE_DIR)
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    result: list[dict[str, Any]] = json.loads(out)
    return result


def check_node_result(result: dict[str, Any], entry: Any, streamed: bool, where: str) -> None:
    """One call as the Node SDK assembled it: the recorded message, or the recorded error."""
    failure: tuple[str, str] | None = None
    status: int | None = None
    if isinstance(entry, ThrowEntry):
        failure = (entry.code, entry.message)
        status = None if streamed and entry.chunks else ERRORS[entry.code][0]
    else:
        finish = recorded_blocks(entry.chunks)["finish"]
        if finish["kind"] == "error":  # mid-stream when streamed: the 200 is long gone
            failure = (finish["failure"]["code"], finish["failure"]["message"])
            status = None if streamed else ERRORS[failure[0]][0]
    if failure is not None:
        code, message = failure
        assert result.get("error") == {"status": status, "body": {
            "type": "error", "error": {"type": ERRORS[code][1], "message": message},
            "code": code}}, where
        return
    if "error" in result:  # a stream: false call whose tool arguments are no JSON object
        assert not streamed and result["error"]["status"] == 500, where
        assert result["error"]["body"]["code"] == "UNREPRESENTABLE", where
        return
    message = anthropic.types.Message.model_validate(result["message"])
    partial = {int(k): v for k, v in result["partialJson"].items()} if streamed else None
    check_message(message, entry.chunks, partial, where)


@pytest.mark.conformance
@pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")
@pytest.mark.parametrize("mode", ["stream", "create"])
@pytest.mark.parametrize("name", SCENARIOS)
async def test_node_sdk_assembles_every_recorded_call(name: str, mode: str) -> None:
    node_or_skip(NODE_DIR, NODE_SDK)
    assert CORPUS is not None
    root = CORPUS / "scenarios" / name
    async with serve_scenario(root) as server:
        for i, script in enumerate(load_scenario(root).scripts):
            entries = [item.entry for item in script.entries]
            results = await _node(f"{server.url}/sessions/s{i}", mode, len(entries))
            for j, (result, entry) in enumerate(zip(results, entries, strict=True)):
                check_node_result(result, entry, mode == "stream", f"{name}[{i}] call {j} ({mode})")
        assert server.engine.consumed_problems() == []


async def test_signature_and_sparse_indices_reach_the_sdk(tmp_path: Path) -> None:
    scripts = scenario_scripts(tmp_path, [SIGNED, SIGNED])
    async with serving(scripts) as served:
        message, partial = await stream_call(served.client("default"), "a")
        check_message(message, SIGNED["chunks"], partial, "stream")
        assert message.content[0].type == "thinking"
        assert message.content[0].signature == "c2lnbmVk"
        created = await served.client("default").messages.create(**_request("a"))
        check_message(created, SIGNED["chunks"], None, "create")
        assert sdk_content(created) == sdk_content(message)


async def test_throws_and_aborts_end_the_stream_with_an_error_event(tmp_path: Path) -> None:
    entries = [
        {"kind": "throw", "chunks": PREFIX, "message": "upstream overloaded", "code": "HTTP_529"},
        {"kind": "throw", "chunks": PREFIX, "message": "upstream overloaded", "code": "HTTP_529"},
        {"kind": "hang"},
        {"kind": "throw", "chunks": [], "message": "slow down", "code": "RATE_LIMIT"},
    ]
    async with serving(scenario_scripts(tmp_path, entries)) as served:
        engine = served.engine
        api = served.client("default")
        async with api.messages.stream(**_request("a")) as stream:
            with pytest.raises(anthropic.APIStatusError) as caught:
                async for _event in stream:
                    pass
            assert stream.current_message_snapshot.content[0].type == "text"
            assert stream.current_message_snapshot.content[0].text == "Half an answer"
        check_error(caught.value, "HTTP_529", "upstream overloaded", streamed=True)

        with pytest.raises(anthropic.APIStatusError) as caught:
            await api.messages.create(**_request("a"))
        check_error(caught.value, "HTTP_529", "upstream overloaded", streamed=False)

        async with api.messages.stream(**_request("a")) as stream:
            with pytest.raises(anthropic.APIStatusError) as caught:
                async for event in stream:
                    if event.type == "text" and event.snapshot == "partial":
                        assert engine.cancel("a") == 1
        check_error(caught.value, "ABORTED", "aborted", streamed=True)

        retrying = served.client("default", retries=2)
        with pytest.raises(anthropic.RateLimitError) as caught:
            await retrying.messages.create(**_request("a"))
        check_error(caught.value, "RATE_LIMIT", "slow down", streamed=False)
        assert engine.consumed_problems() == []  # no SDK retry consumed a call behind our back

        with pytest.raises(anthropic.ConflictError) as caught:
            await api.messages.create(**_request("a"))
        body = caught.value.body
        assert isinstance(body, dict) and body["code"] == "SCRIPT_EXHAUSTED"
        assert body["error"]["type"] == "invalid_request_error"


async def test_from_request_searches_system_then_messages(tmp_path: Path) -> None:
    entry = {"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "ticket {{fromRequest:T-([0-9]+)}}"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "x"}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]}
    async with serving(scenario_scripts(tmp_path, [entry, entry])) as served:
        api = served.client("default")
        request = _request("a")
        request["system"] = "T-1 is closed"
        request["messages"] = [{"role": "user", "content": [{"type": "text", "text": "see T-22"}]}]
        message = await api.messages.create(**request)
        assert sdk_content(message) == [{"type": "text", "text": "ticket 22"}]
        request["messages"] = [{"role": "user", "content": "nothing here"}]
        async with api.messages.stream(**request) as stream:
            assert await stream.get_final_text() == "ticket 1"


def test_message_start_and_message_delta_state_the_recorded_usage() -> None:
    from replay_engine.wire.anthropic import MessagesStreamEncoder

    encoder = MessagesStreamEncoder(MODEL, SIGNED["chunks"], message_id="msg_x")
    opening = encoder.opening()
    assert opening.startswith(b"event: message_start\ndata: ")
    data = json.loads(opening.split(b"data: ", 1)[1])
    assert data["message"]["id"] == "msg_x"
    assert data["message"]["usage"] == {"input_tokens": 12, "output_tokens": 0,
                                        "cache_read_input_tokens": 4}
    wire = b"".join(encoder.encode(c) or b"" for c in SIGNED["chunks"]) + encoder.close()
    delta = next(json.loads(e.split(b"data: ", 1)[1]) for e in wire.split(b"\n\n")
                 if e.startswith(b"event: message_delta"))
    # Cumulative, as the current wire sends it: the input counters are repeated.
    assert delta["usage"] == {"input_tokens": 12, "cache_read_input_tokens": 4, "output_tokens": 7}
    assert delta["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}


async def test_stream_false_gives_cut_arguments_as_empty_input_only_in_a_max_tokens_call(
        tmp_path: Path) -> None:
    def cut(kind: str) -> dict[str, Any]:
        return {"kind": "chunks", "chunks": [
            {"type": "block-start", "index": 0, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 0, "id": "toolu_c", "name": "write",
             "argumentsDelta": '{"path": "a.txt", "text": "unfini'},
            {"type": "finish", "reason": {"kind": kind}}]}

    async with serving(scenario_scripts(tmp_path, [cut("max-tokens"), cut("tool-calls")])) as served:
        api = served.client("default")
        made = await api.messages.create(**_request("a"))
        assert made.stop_reason == "max_tokens"
        assert sdk_content(made) == [{"type": "tool_use", "id": "toolu_c", "name": "write",
                                      "input": {}}]
        with pytest.raises(anthropic.InternalServerError) as caught:
            await api.messages.create(**_request("a"))
        body = caught.value.body
        assert isinstance(body, dict) and body["code"] == "UNREPRESENTABLE"
        assert "not a JSON object" in body["error"]["message"]


async def test_scripted_auth_and_rate_limit_throws_raise_the_sdk_errors(tmp_path: Path) -> None:
    entries = [
        {"kind": "throw", "chunks": [], "message": "bad key", "code": "AUTH"},
        {"kind": "throw", "chunks": [], "message": "bad key", "code": "AUTH"},
        {"kind": "throw", "chunks": [], "message": "slow down", "code": "RATE_LIMIT"},
        {"kind": "throw", "chunks": [], "message": "slow down", "code": "RATE_LIMIT"},
        SIGNED,
    ]
    async with serving(scenario_scripts(tmp_path, entries)) as served:
        api = served.client("default", retries=3)  # the SDK's own retries stay enabled
        with pytest.raises(anthropic.AuthenticationError) as auth:
            await api.messages.create(**_request("a"))
        check_error(auth.value, "AUTH", "bad key", streamed=False)
        with pytest.raises(anthropic.AuthenticationError):
            await stream_call(api, "a")
        for _ in range(2):
            with pytest.raises(anthropic.RateLimitError) as limited:
                await api.messages.create(**_request("a"))
            check_error(limited.value, "RATE_LIMIT", "slow down", streamed=False)
            assert limited.value.response.headers["x-should-retry"] == "false"
        # Four requests, four calls: no SDK retry consumed one, the next call is still there.
        assert [r.retry for r in served.engine.journal()] == [False] * 4
        message, partial = await stream_call(api, "a")
        check_message(message, SIGNED["chunks"], partial, "after the throws")
        assert served.engine.consumed_problems() == []
