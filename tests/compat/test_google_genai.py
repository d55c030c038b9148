"""The Gemini routes judged by the real ``google-genai`` client over a real socket
(docs/format.md#wire-gemini).

Every call of a spread of conformance scenarios, streamed (``generate_content_stream``) on one
run and not (``generate_content``) on another, must reach the client as recorded: its text and
thought parts, function calls with id, name and the parsed arguments, the finish mapped to
``finishReason`` and the usage as ``usageMetadata``; throws and error finishes raise the
client's own ``APIError`` with the status of their code and the code in ``details[0].reason``.
The same sweep runs through ``@google/genai`` (Node), which needs ``node`` and the pinned
package (``npm ci`` in ``tests/compat/node_genai``): it skips without them, except in CI.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from google import genai
from google.genai import errors, types

from replay_engine import ChunksEntry, HangEntry, ThrowEntry, load_scenario
from replay_engine.statuscodes import status_for_code
from tests.compat.compat_helpers import NODE_GENAI_DIR, node_or_skip
from tests.compat.gemini_helpers import (
    connected,
    expected,
    fold,
    generate,
    serving,
    stream,
    without_empty_runs,
)
from tests.compat.recorded import json_object, recorded_blocks
from tests.conftest import conformance_dir

pytestmark = pytest.mark.anyio

CORPUS = conformance_dir()
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


def check_error(exc: errors.APIError, code: str, message: str) -> None:
    """The client's own error: the code's status, Google's status name, the replay code."""
    assert exc.code == status_for_code(code), (exc.code, code)
    assert exc.message == message
    details = exc.details["error"]["details"]
    assert details[0]["reason"] == code
    assert isinstance(exc.status, str) and exc.status.isupper()


def representable(chunks: list[dict[str, Any]]) -> bool:
    """Whether every tool block's arguments can go out as ``functionCall.args``."""
    recorded = recorded_blocks(chunks)
    cut = (recorded["finish"] or {}).get("kind") == "max-tokens"
    return cut or all(json_object(b["content"]) is not None for b in recorded["blocks"]
                      if b["kind"] == "tool-call")


async def check_call(url: str, session: str, entry: Any, where: str) -> None:
    """One recorded call, streamed on run ``stream`` and generated on run ``create``."""
    async with connected(f"{url}/runs/stream/sessions/{session}") as streamed, \
            connected(f"{url}/runs/create/sessions/{session}") as created:
        await _check(streamed, created, entry, where)


async def _check(streamed: genai.Client, created: genai.Client, entry: Any, where: str) -> None:
    failure: tuple[str, str] | None = None
    if isinstance(entry, ThrowEntry):
        failure = (entry.code, entry.message)
    elif isinstance(entry, HangEntry):
        pytest.fail(f"{where}: a hang has no place in this sweep")
    else:
        assert isinstance(entry, ChunksEntry)
        finish = recorded_blocks(entry.chunks)["finish"] or {}
        if finish.get("kind") == "error":
            failure = (finish["failure"]["code"], finish["failure"]["message"])
        elif not representable(entry.chunks):
            failure = ("UNREPRESENTABLE", "")
    if failure is not None:
        for run in (stream(streamed), generate(created)):
            with pytest.raises(errors.APIError) as caught:
                await run
            if failure[0] == "UNREPRESENTABLE":
                assert caught.value.code == 500
                assert "not a JSON object" in str(caught.value.message), where
            else:
                check_error(caught.value, *failure)
        return
    assert isinstance(entry, ChunksEntry)
    want = expected(entry.chunks)
    assert without_empty_runs(fold(await stream(streamed))) == want, f"{where} (stream)"
    assert without_empty_runs(fold([await generate(created)])) == want, f"{where} (create)"


@pytest.mark.conformance
@pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")
@pytest.mark.parametrize("name", SCENARIOS)
async def test_google_genai_assembles_every_recorded_call(name: str) -> None:
    assert CORPUS is not None
    scenario = load_scenario(CORPUS / "scenarios" / name)
    async with serving(scenario.scripts) as (server, engine):
        for i, script in enumerate(scenario.scripts):
            for j, item in enumerate(script.entries):
                await check_call(server.url, f"s{i}", item.entry, f"{name}[{i}] call {j}")
        for run in ("stream", "create"):
            assert engine.consumed_problems(run) == []
        journal = engine.journal("stream") + engine.journal("create")
        assert {r.dialect for r in journal} == {"gemini"}
        assert {r.model for r in journal} == {"gemini-replay"}


async def _node(url: str, mode: str, calls: int) -> list[dict[str, Any]]:
    node = node_or_skip(NODE_GENAI_DIR, "@google/genai")
    process = await asyncio.create_subprocess_exec(
        node, str(NODE_GENAI_DIR / "assemble.mjs"), url, mode, str(calls),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=NODE_GENAI_DIR)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    result: list[dict[str, Any]] = json.loads(out)
    return result


@pytest.mark.conformance
@pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")
@pytest.mark.parametrize("mode", ["stream", "generate"])
@pytest.mark.parametrize("name", SCENARIOS)
async def test_google_genai_node_assembles_every_call(name: str, mode: str) -> None:
    node_or_skip(NODE_GENAI_DIR, "@google/genai")
    assert CORPUS is not None
    scenario = load_scenario(CORPUS / "scenarios" / name)
    entries = [item.entry for item in scenario.scripts[0].entries]  # the anonymous session's
    async with serving(scenario.scripts) as (server, engine):
        got = await _node(server.url, mode, len(entries))
        journal = engine.journal()
    assert len(got) == len(entries)
    for n, (entry, call) in enumerate(zip(entries, got, strict=True)):
        where = f"{name} call {n} ({mode})"
        folded = fold([types.GenerateContentResponse.model_validate(
            {k: v for k, v in r.items() if k != "sdkHttpResponse"}) for r in call["responses"]])
        if isinstance(entry, ThrowEntry):
            failure: tuple[str, str] | None = (entry.code, entry.message)
        else:
            assert isinstance(entry, ChunksEntry), where
            finish = recorded_blocks(entry.chunks)["finish"] or {}
            failure = ((finish["failure"]["code"], finish["failure"]["message"])
                       if finish.get("kind") == "error" else None)
            if failure is None and not representable(entry.chunks):
                failure = ("UNREPRESENTABLE", "")
        if failure is not None:
            error = call.get("error")
            assert error is not None, where
            assert error["status"] == status_for_code(failure[0]), where
            assert f'"reason":"{failure[0]}"' in error["message"], where
            continue
        assert "error" not in call, where
        assert without_empty_runs(folded) == expected(entry.chunks), where
    assert engine.consumed_problems() == [] or len(scenario.scripts) > 1
    assert {r.dialect for r in journal} == {"gemini"}
    assert len(journal) == len(entries)  # no client retry consumed a call behind our back
