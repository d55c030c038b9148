"""Every conformance call over the OpenAI/DeepSeek wire, read by the official SDK.

A DeepSeek-style client rebuilds each call chunk for chunk when a DeepSeek
stream could have produced it; every call's content survives the wire, in
streaming and in ``stream: false`` form.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import httpx
import pytest

from replay_engine import ChunksEntry, ReplayEngine, SessionScript
from replay_engine.models import ScriptEntry
from replay_engine.scenario.sidecar import validate_entry
from replay_engine.server import ReplayServer
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


@pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")
async def test_sdk_stream_rebuilds_every_deepseek_producible_call() -> None:
    scripts, names = _corpus_scripts()
    engine = ReplayEngine(scripts)
    total = producible = 0
    async with ReplayServer(engine) as server:
        client = sdk(server.url)
        for i, script in enumerate(scripts):
            for j, item in enumerate(script.entries):
                assert isinstance(item.entry, ChunksEntry)
                chunks = item.entry.chunks
                wire = await sdk_stream(client, f"s{i}")
                where = f"{names[i]} call {j}"
                assert wire_content(wire) == _expected_content(chunks), where
                total += 1
                if deepseek_producible(chunks):
                    producible += 1
                    assert rebuild(wire) == chunks, where
        await client.close()
    assert engine.consumed_problems() == []
    # 1042 servable corpus calls; the others carry what a DeepSeek stream cannot
    # (blocks with no deltas, interleaved block-ends, error finishes, replayState).
    assert total >= 1000
    print(f"deepseek-producible calls rebuilt chunk for chunk: {producible}/{total}")
    assert producible / total >= 0.85, (producible, total)


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
                assert response.status_code == 200
                body = response.json()
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
