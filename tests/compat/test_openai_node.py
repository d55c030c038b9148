"""openai-node against a real replay server: the ``.stream()`` helper and raw ``create`` chunks
on chat completions, ``responses.stream(...)`` and ``responses.create(...)`` on Responses.

The tests need ``node`` and the pinned package (``npm ci`` in ``tests/compat/node``); they
skip without them, except in CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import openai
import pytest

from replay_engine import ChunksEntry, ThrowEntry, load_scenario
from replay_engine.server import serve_scenario
from tests.compat.compat_helpers import (
    CHUNK_SCENARIOS,
    CORPUS,
    NODE_DIR,
    Assembled,
    accumulate,
    base_usage,
    expected_calls,
    needs_corpus,
    node_or_skip,
    scenario_dir,
    tool,
)
from tests.compat.test_responses_sdk import ERRORS, SCENARIOS, check_response
from tests.wire.wire_helpers import write_scenario

pytestmark = [pytest.mark.anyio, needs_corpus]


async def _node(url: str, mode: str, calls: int) -> list[dict[str, Any]]:
    node = node_or_skip()
    process = await asyncio.create_subprocess_exec(
        node, str(NODE_DIR / "assemble.mjs"), url + "/v1", mode, str(calls),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=NODE_DIR)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    result: list[dict[str, Any]] = json.loads(out)
    return result


def _from_completion(completion: dict[str, Any]) -> Assembled:
    choice = completion["choices"][0]
    message = choice["message"]
    return Assembled(
        text=message.get("content") or "",
        tools=[tool(t["id"], t["function"]["name"], t["function"]["arguments"])
               for t in message.get("tool_calls") or []],
        finish=choice["finish_reason"], usage=base_usage(completion.get("usage")))


@pytest.mark.parametrize("mode", ["helper", "raw"])
@pytest.mark.parametrize("name", [*CHUNK_SCENARIOS, "basic-chat"])
async def test_openai_node_assembles_every_call(name: str, mode: str) -> None:
    node_or_skip()
    want = expected_calls(name)
    async with serve_scenario(scenario_dir(name)) as server:
        results = await _node(server.url, mode, len(want))
        assert server.engine.consumed_problems() == []
    for n, (result, expected) in enumerate(zip(results, want, strict=True)):
        if "error" in result:  # an error finish rejects, as a throw after its prefix does
            error = result["error"]
            assert Assembled(error=(error["status"], error["code"])) == expected, f"{name} call {n}"
            continue
        if mode == "helper":
            # The helper only accumulates OpenAI's own fields: reasoning_content keeps its
            # last delta, so reasoning is checked on the raw chunks only.
            got = _from_completion(result["completion"])
            expected = expected.without_reasoning()
        else:
            assert result["chunks"][0]["choices"][0]["delta"] == {"role": "assistant",
                                                                  "content": ""}
            got = accumulate(result["chunks"])
        assert got == expected, f"{name} call {n} ({mode})"


async def test_openai_node_does_not_retry_a_scripted_429(tmp_path: Path) -> None:
    node_or_skip()
    root = write_scenario(tmp_path / "s", [
        {"kind": "throw", "chunks": [], "message": "slow down", "code": "RATE_LIMIT"},
        {"kind": "chunks", "chunks": [{"type": "text-delta", "index": 0, "text": "next"},
                                      {"type": "finish", "reason": {"kind": "stop"}}]}])
    async with serve_scenario(root) as server:
        results = await _node(server.url, "helper", 2)
        outcomes = [r.outcome for r in server.engine.journal()]
    assert results[0]["error"]["status"] == 429 and results[0]["error"]["code"] == "RATE_LIMIT"
    assert results[1]["completion"]["choices"][0]["message"]["content"] == "next"
    assert outcomes == ["failed", "finished"]


@pytest.mark.conformance
@pytest.mark.parametrize("mode", ["responses-stream", "responses-create"])
@pytest.mark.parametrize("name", SCENARIOS)
async def test_openai_node_responses_assemble_every_call(name: str, mode: str) -> None:
    """Both Responses calls give the recorded output, status and usage; a recorded error finish
    is a ``failed`` response, not a rejection (docs/clients.md#scripted-failures-what-each-client-sees)."""
    node_or_skip()
    assert CORPUS is not None
    root = CORPUS / "scenarios" / name
    async with serve_scenario(root) as server:
        for i, script in enumerate(load_scenario(root).scripts):
            entries = [item.entry for item in script.entries]
            results = await _node(f"{server.url}/sessions/s{i}", mode, len(entries))
            for j, (result, entry) in enumerate(zip(results, entries, strict=True)):
                where = f"{name}[{i}] call {j} ({mode})"
                if isinstance(entry, ThrowEntry):
                    assert not entry.chunks
                    assert (result["error"]["status"], result["error"]["code"]) == (
                        ERRORS[entry.code][0], entry.code), where
                    continue
                assert isinstance(entry, ChunksEntry)
                # Built as the SDK builds what it receives (no validation: the replay's codes
                # are no OpenAI literal).
                response = openai.types.responses.Response.construct(**result["response"])
                check_response(response, entry.chunks, where)
        assert server.engine.consumed_problems() == []
