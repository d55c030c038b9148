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

from replay_engine import ChunksEntry, ReplayEngine, ReplayError, SessionScript, load_scenario
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
    """Every loadable corpus script, keeping only chunks entries without placeholders."""
    assert CORPUS is not None
    scripts: list[SessionScript] = []
    names: list[str] = []
    for path in sorted(p for p in (CORPUS / "scenarios").iterdir() if p.is_dir()):
        try:
            scenario = load_scenario(path)
        except ReplayError:
            continue  # the corpus's one unfinished log: it has no calls to serve
        for n, script in enumerate(scenario.scripts):
            entries = [e for e in script.entries if isinstance(e.entry, ChunksEntry)
                       and "{{fromRequest:" not in json.dumps(e.entry.chunks)]
            if entries:
                scripts.append(SessionScript(script.recorded_id, script.created_at, entries,
                                             script.primary))
                names.append(f"{path.name}[{n}]")
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
    # 325 servable corpus calls; the others carry what a DeepSeek stream cannot
    # (blocks with no deltas, interleaved block-ends, error finishes, replayState).
    assert total >= 300
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
                    "usage": usage_back(body["usage"]) if "usage" in body else None,
                    "finish": body["choices"][0]["finish_reason"],
                }
                if want["finish"] is None:
                    want["finish"] = "stop"
                assert got == want, f"{names[i]} call {j}"
    assert engine.consumed_problems("plain") == []
