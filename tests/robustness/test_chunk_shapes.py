"""Recorded chunks no dialect can serve do not load (validate says so, with the line); odd
chunks that do load are served on every route without a 500."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from replay_engine.server import serve_scenario

from .conftest import assert_typed_failure, cli
from .test_surrogates import ROUTES


def _log(scenario: Path, calls: list[list[Any]]) -> list[int]:
    """Replace the primary log with these calls; the line of each call's first chunk."""
    lines = [json.dumps({"type": "session", "id": "s", "createdAt": 1})]
    firsts = []
    for step, chunks in enumerate(calls, 1):
        firsts.append(len(lines) + 1)
        lines += [json.dumps({"type": "assistant/chunk", "seq": len(lines), "time": 1,
                              "data": {"turn": 1, "step": step, "chunk": c}}) for c in chunks]
    (scenario / "session.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return firsts


FINISH = {"type": "finish", "reason": {"kind": "stop"}}
UNSERVABLE = {
    "string": ("hello", "the chunk is a string, not an object"),
    "list": ([1, 2], "the chunk is a list, not an object"),
    "number": (7, "the chunk is the number 7, not an object"),
    "text": ({"type": "text-delta", "index": 0, "text": 7},
             "the text-delta chunk's text is the number 7, not a string"),
    "reasoning": ({"type": "reasoning-delta", "index": 0, "text": ["a"]},
                  "the reasoning-delta chunk's text is a list, not a string"),
    "arguments": ({"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": {}},
                  "the tool-call-delta chunk's argumentsDelta is an object, not a string"),
}


@pytest.mark.parametrize("case", sorted(UNSERVABLE))
def test_unservable_recorded_chunk_does_not_load(scenario: Path, case: str) -> None:
    chunk, problem = UNSERVABLE[case]
    first = _log(scenario, [[FINISH], [chunk, FINISH]])[1]
    result = cli("validate", str(scenario))
    assert_typed_failure(result)
    assert f"session.jsonl:{first}: assistant/chunk event of call 1/2: {problem}" in result.stdout
    for command in (["inspect"], ["inspect", "--json"]):
        result = cli(*command, str(scenario))
        assert_typed_failure(result, "DERIVATION")
        assert problem in result.stdout + result.stderr


def test_unservable_text_in_sidecar_does_not_load(scenario: Path) -> None:
    (scenario / "replay.override.json").write_text(json.dumps(
        {"patches": [{"at": 0, "entry": {"kind": "chunks", "chunks": [
            {"type": "text-delta", "index": 0, "text": 7}, FINISH]}}]}))
    result = cli("validate", str(scenario))
    assert_typed_failure(result)
    assert "patch 0.entry.chunks[0]: text is the number 7, not a string" in result.stdout


@pytest.mark.anyio
async def test_odd_chunks_that_load_serve_on_every_route(scenario: Path) -> None:
    odd = [{"type": "block-start", "index": 0, "blockType": "text"},
           {"type": "text-delta", "index": 0, "text": "kept"},
           {"type": "block-end", "index": 0, "block": 5},
           {"type": "block-end", "index": 1, "block": None},
           {"type": "usage", "usage": 5},
           {"type": "mystery", "index": [1]},
           {"type": ["finish"]},
           {"type": "tool-call-delta", "index": 2, "id": 9, "name": [], "argumentsDelta": "{}"},
           {"type": "finish", "reason": 5}]
    _log(scenario, [odd] * len(ROUTES))
    result = cli("validate", str(scenario))
    assert result.returncode == 0, result.stdout
    async with serve_scenario(scenario) as server, httpx.AsyncClient(base_url=server.url) as http:
        assert (await http.get("/replay/v1/scripts")).status_code == 200
        for path, stream in ROUTES:
            body: dict[str, Any] = {"model": "m", "max_tokens": 10,
                                    "messages": [{"role": "user", "content": "hi"}]}
            if path == "/v1/responses":
                body = {"model": "m", "input": "hi"}
            if stream is not None:
                body["stream"] = stream
            r = await http.post(path, json=body)
            assert r.status_code == 200, (path, stream, r.text)
            assert "kept" in r.text
