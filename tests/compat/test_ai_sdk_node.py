"""The AI SDK in Node against a real replay server: ``@ai-sdk/openai`` (its default model speaks
the Responses API) and ``@ai-sdk/openai-compatible`` (chat completions), each with
``streamText`` and ``generateText``, assemble every recorded call, each reasoning block shown once.

The tests need ``node`` and the pinned packages (``npm ci`` in ``tests/compat/node_aisdk``, run
on first use); they skip without them, except in CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from replay_engine import ChunksEntry, ThrowEntry, load_scenario
from replay_engine.server import serve_scenario
from replay_engine.statuscodes import status_for_code
from tests.compat.compat_helpers import CORPUS, needs_corpus, node_or_skip
from tests.compat.recorded import PREFIX, json_object, recorded_blocks
from tests.wire.wire_helpers import write_scenario

pytestmark = [pytest.mark.anyio, needs_corpus]

NODE_AISDK_DIR = Path(__file__).parent / "node_aisdk"
"""The pinned ``ai``, ``@ai-sdk/openai`` and ``@ai-sdk/openai-compatible`` (the last majors that
run on node 20)."""
PROVIDERS = {"openai": "@ai-sdk/openai", "compatible": "@ai-sdk/openai-compatible"}
"""assemble.mjs's provider argument, and the package it needs."""
SCENARIOS = [
    "Aurora__apps__cli__tests__snapshots__multi-turn-conversation",  # reasoning, text, packed rows
    "Aurora__apps__cli__tests__snapshots__code-mode-dispatch-spill",  # long packed reasoning
    "Aurora__examples__acp-agent__tests__snapshots__parallel-tool-calls",
    "apps__web__tests__snapshots__cordis-tool-round",  # block-end-only blocks
    "examples__acp-agent__tests__snapshots__max-tokens-continue",  # incomplete, truncated arguments
    "examples__acp-agent__tests__snapshots__empty-response-retry",  # error finish, then a retry
    "Aurora__examples__acp-agent__tests__snapshots__error-finish",  # AUTH throw, no prefix
]
FINISH = {"stop": "stop", "tool-calls": "tool-calls", "max-tokens": "length"}


async def _node(url: str, mode: str, calls: int, tools: list[str],
                provider: str) -> list[dict[str, Any]]:
    node = node_or_skip(NODE_AISDK_DIR, PROVIDERS[provider])
    process = await asyncio.create_subprocess_exec(
        node, str(NODE_AISDK_DIR / "assemble.mjs"), url, mode, str(calls), json.dumps(tools),
        provider,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=NODE_AISDK_DIR)
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    result: list[dict[str, Any]] = json.loads(out)
    return result


def expected(entry: Any) -> dict[str, Any]:
    """What the AI SDK hands the agent for one recorded call."""
    if isinstance(entry, ThrowEntry):
        return {"error": status_for_code(entry.code)}
    assert isinstance(entry, ChunksEntry)
    recorded = recorded_blocks(entry.chunks)
    finish = recorded["finish"]
    if finish["kind"] == "error":  # a failed response: the SDK raises its message
        return {"error": finish["failure"]["message"]}
    usage = recorded["usage"]
    blocks = recorded["blocks"]
    return {
        "reasoning": [b["content"] for b in blocks if b["kind"] == "reasoning" and b["content"]],
        "text": "".join(b["content"] for b in blocks if b["kind"] == "text"),
        "toolCalls": [{"id": b["id"], "name": b["name"], "input": json_object(b["content"])
                       if json_object(b["content"]) is not None else b["content"]}
                      for b in blocks if b["kind"] == "tool-call"],
        "finishReason": FINISH[finish["kind"]],
        "usage": {"inputTokens": usage.get("inputTokens", 0) + usage.get("cacheReadTokens", 0),
                  "outputTokens": usage.get("outputTokens", 0)},
    }


def assembled(result: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
    """The node result in ``expected``'s shape (an error by its status or its message)."""
    if "error" in result:
        error = result["error"]
        return {"error": error["message"] if isinstance(want.get("error"), str) else error["status"]}
    return {**result, "reasoning": [r for r in result["reasoning"] if r]}


@pytest.mark.conformance
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("mode", ["stream", "generate"])
@pytest.mark.parametrize("name", SCENARIOS)
async def test_ai_sdk_assembles_every_recorded_call(name: str, mode: str, provider: str) -> None:
    node_or_skip(NODE_AISDK_DIR, PROVIDERS[provider])
    assert CORPUS is not None
    root = CORPUS / "scenarios" / name
    scripts = load_scenario(root).scripts
    async with serve_scenario(root) as server:
        for i, script in enumerate(scripts):
            entries = [item.entry for item in script.entries]
            tools = sorted({b["name"] for e in entries if isinstance(e, ChunksEntry)
                            for b in recorded_blocks(e.chunks)["blocks"] if b["kind"] == "tool-call"})
            results = await _node(f"{server.url}/sessions/s{i}/v1", mode, len(entries), tools,
                                  provider)
            for j, (result, entry) in enumerate(zip(results, entries, strict=True)):
                want = expected(entry)
                assert assembled(result, want) == want, f"{name}[{i}] call {j} ({mode}, {provider})"
        assert server.engine.consumed_problems() == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_stream_text_ends_a_failed_stream_without_raising(provider: str,
                                                                tmp_path: Path) -> None:
    """What docs/clients.md says of ``streamText``: an error finish and a throw after its prefix
    both resolve ``text`` with the prefix and ``finishReason`` with ``error`` (the error goes
    to ``onError``); nothing rejects."""
    node_or_skip(NODE_AISDK_DIR, PROVIDERS[provider])
    root = write_scenario(tmp_path / "s", [
        {"kind": "chunks", "chunks": [*PREFIX, {"type": "finish", "reason": {
            "kind": "error", "code": "SERVER", "message": "upstream broke"}}]},
        {"kind": "throw", "chunks": PREFIX, "message": "slow down", "code": "RATE_LIMIT"}])
    async with serve_scenario(root) as server:
        results = await _node(f"{server.url}/v1", "text", 2, [], provider)
        assert len(server.engine.journal()) == 2  # maxRetries: 0, so no retry took a call
    assert results == [{"text": "Half an answer", "finishReason": "error"}] * 2
