"""The binding cases of the generations corpus (``calls/``): live calls served in order, each
given its recorded entry with ``{{session:N}}`` tokens made live ids, the announcement rule
(``started subagent ID``) and the binding errors (docs/format.md#binding), through the engine and over
HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from replay_engine import ReplayEngine, ReplayError, entry_to_json, load_scenario
from replay_engine.server import serve_scenario
from tests.conftest import conformance_gen_dir

pytestmark = pytest.mark.anyio
CORPUS = conformance_gen_dir()


def _cases() -> list[str]:
    if CORPUS is None:
        return []
    return sorted(p.stem for p in (CORPUS / "calls").glob("*.json"))


def _case(name: str) -> tuple[Path, list[dict[str, Any]], list[dict[str, Any]]]:
    assert CORPUS is not None
    spec = json.loads((CORPUS / "calls" / f"{name}.json").read_text(encoding="utf-8"))
    return CORPUS / "scenarios" / name, spec["calls"], spec["served"]


def _same_error(got: str, want: str) -> bool:
    """Our message says what the reference's does (it may add where: session, call, run)."""
    return want.removeprefix("llm-replay: ") in got


def test_the_corpus_has_binding_cases() -> None:
    if CORPUS is None:
        pytest.skip("generations corpus absent")
    assert len(_cases()) == 7


@pytest.mark.conformance
@pytest.mark.parametrize("name", _cases())
async def test_calls_are_served_through_the_engine(name: str) -> None:
    directory, calls, served = _case(name)
    engine = ReplayEngine(load_scenario(directory).scripts)
    for call, want in zip(calls, served, strict=False):
        key = call.get("sessionId")
        try:
            handle = engine.open_call(key, call["messages"])
        except ReplayError as exc:
            assert "error" in want, f"{name}: refused {exc.code} where {want} was served"
            assert (exc.code, _same_error(exc.message, want["error"])) == (want["code"], True)
            continue
        assert "entry" in want, f"{name}: served where {want} was refused"
        got = {"key": key, "script": handle.script_index, "call": handle.call_index,
               "entry": entry_to_json(handle.entry)}
        assert got == want
        async for _ in handle.chunks():
            pass
    verdict = served[len(calls)]
    problems = engine.consumed_problems()
    assert {"consumed": not problems, "problems": problems} == verdict


@pytest.mark.conformance
@pytest.mark.parametrize("name", _cases())
async def test_calls_are_served_over_http(name: str) -> None:
    directory, calls, served = _case(name)
    async with serve_scenario(directory) as server, httpx.AsyncClient(base_url=server.url) as http:
        for call, want in zip(calls, served, strict=False):
            body: dict[str, Any] = {"messages": call["messages"]}
            if "sessionId" in call:
                body["sessionId"] = call["sessionId"]
            answer = await http.post("/replay/v1/stream", json=body)
            if "error" in want:
                assert answer.status_code >= 400, answer.text
                error = answer.json()["error"]
                assert (error["code"], _same_error(error["message"], want["error"])) == \
                       (want["code"], True)
                continue
            assert answer.status_code == 200, answer.text
            lines = [json.loads(line) for line in answer.text.splitlines() if line]
            entry = want["entry"]
            assert lines == entry["chunks"] + ([{"type": "error", "message": entry["message"],
                                                 "code": entry["code"]}]
                                               if entry["kind"] == "throw" else [])
        verdict = served[len(calls)]
        problems = server.engine.consumed_problems()
        assert {"consumed": not problems, "problems": problems} == verdict
