"""One reading of every request: a recording made through each wire by a real client (openai,
anthropic, google-genai) through the real recorder, against a fake upstream on loopback, with
tool results in every form that wire accepts, replays under strict with the same requests as
consumed, and with one tool result changed as diverged (naming it)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import types

from replay_engine.record import record_scenario
from replay_engine.server import serve_scenario
from tests.record.rawupstream import Behaviour, RawUpstream, json_answer
from tests.record.recordtools import log_lines

pytestmark = pytest.mark.anyio

Client = Callable[[str, bool], Awaitable[None]]
"""Sends a wire's two requests to a base URL (True: with one tool result changed)."""
USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def _chat_answer(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": USAGE}


def _messages_answer(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": content, "stop_reason": stop,
            "usage": {"input_tokens": 3, "output_tokens": 2}}


def _responses_answer(output: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 0, "status": "completed",
            "model": "m", "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5,
                                   "input_tokens_details": {"cached_tokens": 0},
                                   "output_tokens_details": {"reasoning_tokens": 0}}}


def _gemini_answer(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0,
                            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2}}


ANSWERS: dict[str, list[dict[str, Any]]] = {
    "chat": [
        _chat_answer({"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]},
            "tool_calls"),
        _chat_answer({"role": "assistant", "content": "done"}, "stop")],
    "messages": [
        _messages_answer([{"type": "tool_use", "id": "c1", "name": "ls", "input": {}},
                          {"type": "tool_use", "id": "c2", "name": "cat", "input": {}}],
                         "tool_use"),
        _messages_answer([{"type": "text", "text": "done"}], "end_turn")],
    "responses": [
        _responses_answer([
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "ls",
             "arguments": "{}", "status": "completed"},
            {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "cat",
             "arguments": "{}", "status": "completed"}]),
        _responses_answer([{"type": "message", "id": "m1", "role": "assistant",
                            "status": "completed", "content": [
                                {"type": "output_text", "text": "done", "annotations": []}]}])],
    "gemini": [
        _gemini_answer([{"functionCall": {"id": "c1", "name": "ls", "args": {}}},
                        {"functionCall": {"id": "c2", "name": "cat", "args": {}}}]),
        _gemini_answer([{"text": "done"}])],
}


def _first(changed: bool) -> str:
    return "list the files"


def _result(changed: bool) -> str:
    return "README.md\nsrc" if not changed else "README.md\nsetup.py"


async def chat(url: str, changed: bool) -> None:
    """Chat: ``tool`` messages."""
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
        user = {"role": "user", "content": "list the files"}
        await client.chat.completions.create(model="m", messages=[user])  # type: ignore[list-item]
        await client.chat.completions.create(model="m", messages=[  # type: ignore[misc]
            user, {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": _result(changed)},
            {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "hi"}]}])


async def messages(url: str, changed: bool) -> None:
    """Messages: ``tool_result`` blocks (a string and a list of text blocks)."""
    async with anthropic.AsyncAnthropic(base_url=url, api_key="k", max_retries=0) as client:
        user = {"role": "user", "content": "list the files"}
        await client.messages.create(model="m", max_tokens=64, messages=[user])  # type: ignore[list-item]
        await client.messages.create(model="m", max_tokens=64, messages=[  # type: ignore[misc]
            user, {"role": "assistant", "content": [
                {"type": "tool_use", "id": "c1", "name": "ls", "input": {}},
                {"type": "tool_use", "id": "c2", "name": "cat", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": _result(changed)},
                {"type": "tool_result", "tool_use_id": "c2",
                 "content": [{"type": "text", "text": "hi"}]}]}])


async def responses(url: str, changed: bool) -> None:
    """Responses: a ``function_call_output`` and a ``custom_tool_call_output`` item."""
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
        user = {"role": "user", "content": "list the files"}
        await client.responses.create(model="m", input=[user])  # type: ignore[list-item]
        await client.responses.create(model="m", input=[  # type: ignore[list-item]
            user,
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
            {"type": "custom_tool_call", "call_id": "c2", "name": "cat", "input": "x"},
            {"type": "function_call_output", "call_id": "c1", "output": _result(changed)},
            {"type": "custom_tool_call_output", "call_id": "c2", "output": "hi"}])


async def gemini(url: str, changed: bool) -> None:
    """Gemini: ``functionResponse`` parts under a ``user`` and under a ``function`` turn."""
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=url))
    config = types.GenerateContentConfig(
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
    user = types.Content(role="user", parts=[types.Part(text="list the files")])
    await client.aio.models.generate_content(model="g", contents=[user], config=config)
    calls = types.Content(role="model", parts=[
        types.Part(function_call=types.FunctionCall(id=ident, name=name, args={}))
        for ident, name in (("c1", "ls"), ("c2", "cat"))])
    await client.aio.models.generate_content(model="g", config=config, contents=[
        user, calls,
        types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
            id="c1", name="ls", response={"output": _result(changed)}))]),
        types.Content(role="function", parts=[types.Part(function_response=types.FunctionResponse(
            id="c2", name="cat", response={"result": {"lines": 1}}))])])


CLIENTS: dict[str, Client] = {"chat": chat, "messages": messages, "responses": responses,
                              "gemini": gemini}


async def _record(wire: str, scenario: Path, log_format: str) -> None:
    behaviours = [Behaviour(json_answer(200, a)) for a in ANSWERS[wire]]
    async with RawUpstream(behaviours) as upstream:
        async with record_scenario(scenario, upstream.url, log_format=log_format) as rec:
            await CLIENTS[wire](rec.url, False)
        assert len(upstream.requests) == 2
    assert rec.problems == []


async def _verdict(scenario: Path, wire: str, changed: bool) -> dict[str, Any]:
    async with serve_scenario(scenario) as server, httpx.AsyncClient(base_url=server.url) as http:
        server.engine.strict = True
        await CLIENTS[wire](server.url, changed)
        answer = await http.post("/replay/v1/assert-consumed")
    found: dict[str, Any] = answer.json()
    assert (answer.status_code == 200) is found["ok"]
    return found


@pytest.mark.parametrize("log_format", ["v1", "v4"])
@pytest.mark.parametrize("wire", list(CLIENTS))
async def test_a_recording_replays_strict_with_its_own_requests(wire: str, log_format: str,
                                                                tmp_path: Path) -> None:
    scenario = tmp_path / wire
    await _record(wire, scenario, log_format)
    (log,) = scenario.glob("session*.jsonl")
    events = log_lines(log)
    results = [e["data"] for e in events if e["type"] == "tool/result"]
    assert [r["callId"] for r in results] == ["c1", "c2"]  # every form, in order, with its id
    assert results[0]["content"] == "README.md\nsrc"
    assert [e["data"]["content"] for e in events if e["type"] == "user/message"] == [
        "list the files"]
    faithful = await _verdict(scenario, wire, False)
    assert faithful["ok"] is True, faithful
    diverged = await _verdict(scenario, wire, True)
    assert diverged["ok"] is False
    assert "tool result c1: recorded 'README.md src', live 'README.md setup.py'" in json.dumps(
        diverged["problems"]), diverged
