"""Every conformance call over the OpenAI/DeepSeek wire, read by the official SDK.

A DeepSeek-style client rebuilds each call chunk for chunk when a DeepSeek
stream could have produced it; every call's content survives the wire, in
streaming and in ``stream: false`` form. An error finish ends its call like a throw after its
prefix: the prefix, then the SDK raises the finish's code (``stream: false``: the HTTP error
of that code); ``--chat-error-finish reason`` sends the code as ``finish_reason`` instead.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import httpx
import openai
import pytest

from replay_engine import ChunksEntry, ReplayEngine, SessionScript, WireOptions
from replay_engine.models import ScriptEntry
from replay_engine.scenario.sidecar import validate_entry
from replay_engine.server import ReplayServer
from replay_engine.statuscodes import status_for_code
from replay_engine.wire.dialect import failure_of, is_error_finish
from tests.conftest import conformance_dir
from tests.wire.wire_helpers import (
    deepseek_producible,
    finish_on_wire,
    rebuild,
    recorded_content,
    sdk,
    sdk_stream,
    usage_back,
    wire_content,
)

pytestmark = [pytest.mark.anyio, pytest.mark.conformance]

CORPUS = conformance_dir()


@functools.cache
def _corpus_scripts() -> tuple[list[SessionScript], list[str]]:
    """Every corpus script as the reference loads it, keeping chunks entries without placeholders.

    The scripts come from ``expected/`` (what loading must give), so every scenario of the
    corpus reaches the wire whatever log format it was recorded in.
    """
    assert CORPUS is not None
    scripts: list[SessionScript] = []
    names: list[str] = []
    for path in sorted((CORPUS / "expected").glob("*.json")):
        expected = json.loads(path.read_text(encoding="utf-8"))
        for n, script in enumerate(expected.get("scripts", [])):
            entries = [ScriptEntry(validate_entry(e), "derived") for e in script["entries"]
                       if e["kind"] == "chunks" and "{{fromRequest:" not in json.dumps(e)]
            if entries:
                scripts.append(SessionScript(script["recordedId"], script["createdAt"], entries,
                                             script["primary"]))
                names.append(f"{path.stem}[{n}]")
    return scripts, names


def _expected_content(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    content = recorded_content(chunks)
    content["finish"] = finish_on_wire(content["finish"])
    return content


def _failure(chunks: list[dict[str, Any]]) -> tuple[str, str] | None:
    """Message and code of the call's error finish (None: it has none)."""
    finish = chunks[-1].get("reason") if chunks and chunks[-1]["type"] == "finish" else None
    return failure_of(finish) if is_error_finish(finish) else None


async def _stream_until_failure(client: openai.AsyncOpenAI, session: str,
                                ) -> tuple[list[dict[str, Any]], openai.APIError | None]:
    """One streamed call's chunks and, when it failed after them, the SDK's error."""
    stream = await client.chat.completions.create(
        model="deepseek-chat", messages=[{"role": "user", "content": "go"}], stream=True,
        extra_headers={"X-Session-Id": session})
    chunks: list[dict[str, Any]] = []
    try:
        async for chunk in stream:
            chunks.append(chunk.model_dump(exclude_unset=True))
    except openai.APIError as error:
        return chunks, error
    return chunks, None


@pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")
async def test_sdk_stream_rebuilds_every_deepseek_producible_call() -> None:
    scripts, names = _corpus_scripts()
    engine = ReplayEngine(scripts)
    total = producible = failures = 0
    async with ReplayServer(engine) as server:
        client = sdk(server.url)
        for i, script in enumerate(scripts):
            for j, item in enumerate(script.entries):
                assert isinstance(item.entry, ChunksEntry)
                chunks = item.entry.chunks
                wire, error = await _stream_until_failure(client, f"s{i}")
                where = f"{names[i]} call {j}"
                total += 1
                failure = _failure(chunks)
                if failure is not None:  # the prefix, then the SDK raises the finish's code
                    failures += 1
                    assert error is not None and (error.message, error.code) == failure, where
                    want = _expected_content(chunks)
                    want["usage"] = want["finish"] = None
                    assert wire_content(wire) == want, where
                    continue
                assert error is None, where
                assert wire_content(wire) == _expected_content(chunks), where
                if deepseek_producible(chunks):
                    producible += 1
                    assert rebuild(wire) == chunks, where
        await client.close()
    assert engine.consumed_problems() == []
    # 1042 servable corpus calls; the others carry what a DeepSeek stream cannot
    # (blocks with no deltas, interleaved block-ends, error finishes, replayState).
    assert total >= 1000 and failures > 0
    print(f"deepseek-producible calls rebuilt chunk for chunk: {producible}/{total}")
    assert producible / total >= 0.85, (producible, total)


@pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")
async def test_the_reason_form_sends_every_error_finish_as_its_code() -> None:
    scripts, names = _corpus_scripts()
    failing = [(i, j) for i, script in enumerate(scripts) for j, item in enumerate(script.entries)
               if isinstance(item.entry, ChunksEntry) and _failure(item.entry.chunks)]
    assert failing
    engine = ReplayEngine(scripts)
    async with ReplayServer(engine, wire=WireOptions(chat_error_finish="reason")) as server:
        client = sdk(server.url)
        for i, script in enumerate(scripts):
            for j, item in enumerate(script.entries):
                assert isinstance(item.entry, ChunksEntry)
                wire = await sdk_stream(client, f"s{i}")  # never raises in this form
                if (i, j) in failing:
                    want = _expected_content(item.entry.chunks)
                    assert wire_content(wire) == want, f"{names[i]} call {j}"
        await client.close()
    assert engine.consumed_problems() == []


@pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")
async def test_non_stream_completion_carries_every_call() -> None:
    scripts, names = _corpus_scripts()
    engine = ReplayEngine(scripts)
    async with ReplayServer(engine) as server, httpx.AsyncClient(base_url=server.url) as http:
        for i, script in enumerate(scripts):
            for j, item in enumerate(script.entries):
                assert isinstance(item.entry, ChunksEntry)
                response = await http.post("/runs/plain/v1/chat/completions",
                                           json={"model": "m", "messages": []},
                                           headers={"X-Session-Id": f"s{i}"})
                body = response.json()
                failure = _failure(item.entry.chunks)
                if failure is not None:  # the HTTP error a throw after its prefix answers
                    assert response.status_code == status_for_code(failure[1])
                    assert body == {"error": {"message": failure[0], "type": "replay_error",
                                              "code": failure[1]}}
                    assert response.headers["x-should-retry"] == "false"
                    continue
                assert response.status_code == 200
                want = _expected_content(item.entry.chunks)
                message = body["choices"][0]["message"]
                got = {
                    "text": message["content"] or "",
                    "reasoning": message.get("reasoning_content", ""),
                    "tools": [{"id": t["id"], "name": t["function"]["name"],
                               "arguments": t["function"]["arguments"]}
                              for t in message.get("tool_calls", [])],
                    "usage": usage_back(body["usage"]),
                    "finish": body["choices"][0]["finish_reason"],
                }
                if want["finish"] is None:
                    want["finish"] = "stop"
                if want["usage"] is None:  # always present, counters the recording lacks at 0
                    want["usage"] = {"inputTokens": 0, "outputTokens": 0}
                assert got == want, f"{names[i]} call {j}"
    assert engine.consumed_problems("plain") == []
