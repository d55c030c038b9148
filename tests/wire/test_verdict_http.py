"""The verdict over HTTP and from ``serve``: refused calls, hangs in flight, paused calls, streams
a client dropped and strict mode fail it for the control API and the exit status alike; a
retry the server sees by content is marked, and fails strict unless the recording has it; a
busy port exits 4; a model call while the scenario is not loaded answers 503 naming the load
error."""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import openai
import pytest

from replay_engine import ReplayEngine, ReplayError, load_scenario
from replay_engine.engine import events as ev
from replay_engine.server import ReplayServer, serve_scenario
from tests.app.apptools import BASIC_PROMPT, BASIC_TOOL_TURN

pytestmark = pytest.mark.anyio
LIMIT = 10.0


async def test_assert_consumed_fails_after_a_refused_call(samples: Path) -> None:
    async with serve_scenario(samples / "basic-chat") as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        for messages in (BASIC_PROMPT, BASIC_TOOL_TURN, BASIC_TOOL_TURN):
            try:
                await client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
            except openai.ConflictError:
                pass
        await client.close()
        verdict = await http.post("/replay/v1/assert-consumed")
        journal = (await http.get("/replay/v1/journal")).json()["calls"]
    assert verdict.status_code == 409 and verdict.json()["ok"] is False
    assert "was refused with SCRIPT_EXHAUSTED" in verdict.json()["problems"][0]
    assert verdict.json()["firstDivergence"] is None  # the two recorded calls were faithful
    assert [c["outcome"] for c in journal] == ["finished", "finished", "refused"]


async def test_assert_consumed_fails_while_a_hang_is_in_flight(samples: Path, tmp_path: Path) -> None:
    async with serve_scenario(samples / "hang-ready-file", ready_dir=tmp_path) as server, \
            httpx.AsyncClient(base_url=server.url, timeout=LIMIT) as http:
        scripts = (await http.get("/replay/v1/scripts")).json()["scripts"]
        hang_at = [e["kind"] for e in scripts[0]["entries"]].index("hang")
        for _ in range(hang_at):
            await http.post("/v1/chat/completions", json={"messages": [], "stream": True})
        async with http.stream("POST", "/v1/chat/completions",
                               json={"messages": [], "stream": True}) as hanging:
            async for _ in hanging.aiter_bytes():
                break  # the hang's prefix arrived: the call is hanging now
            held = await http.post("/replay/v1/assert-consumed")
            cancelled = await http.post("/replay/v1/cancel", json={"all": True})
        after = await http.post("/replay/v1/assert-consumed")
    assert held.status_code == 409
    assert any("hanging until cancelled" in p for p in held.json()["problems"]), held.json()
    assert cancelled.status_code == 200
    assert after.json()["ok"] is True  # cancelling a hang is its normal end


async def test_a_model_call_while_not_loaded_is_503_naming_the_error(samples: Path) -> None:
    async with serve_scenario(samples / "basic-chat") as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        server.engine.set_not_loaded(ReplayError("session.jsonl line 3: not JSON", code="LOG_PARSE"))
        answer = await http.post("/v1/chat/completions", json={"messages": []})
    assert answer.status_code == 503
    error = answer.json()["error"]
    assert error["code"] == "SCENARIO_NOT_LOADED" and "[LOG_PARSE] session.jsonl line 3" in error["message"]


def _serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "replay_engine.cli", "serve", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize(("strict", "code"), [(False, 0), (True, 3)])
def test_serve_strict_fails_a_diverged_replay(samples: Path, strict: bool, code: int) -> None:
    proc = _serve(str(samples / "basic-chat"), "--port", "0", *(["--strict"] if strict else []))
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "other"}])
        client.chat.completions.create(model="m", messages=BASIC_TOOL_TURN)  # type: ignore[arg-type]
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, (out, err)
    assert ("left the recording (strict)" in out) is strict
    assert "user message 1: recorded 'What files are in the workspace? Then say hello.', " \
           "live 'other'" in out


def test_serve_a_faithful_replay_passes_strict(samples: Path) -> None:
    proc = _serve(str(samples / "basic-chat"), "--port", "0", "--strict")
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        for messages in (BASIC_PROMPT, BASIC_TOOL_TURN):
            client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert (proc.returncode, out.splitlines()) == (0, ["replay consumed (run default)"]), err


def test_serve_exits_4_on_a_busy_port(samples: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "replay_engine.cli", "serve",
                               str(samples / "basic-chat"), "--port", str(port)],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 4
    assert f"error [CANNOT_LISTEN]: cannot listen on 127.0.0.1:{port}" in done.stderr


def _seen(engine: ReplayEngine, kind: type[ev.EngineEvent]) -> anyio.Event:
    """An event set once the engine emits an event of ``kind``."""
    seen = anyio.Event()
    engine.subscribe(lambda event: seen.set() if isinstance(event, kind) else None, chunks=False)
    return seen


async def test_a_client_dropping_a_paced_stream_fails_the_verdict(samples: Path) -> None:
    async with serve_scenario(samples / "basic-chat", pace_ms=40) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        cancelled = _seen(server.engine, ev.CallCancelled)
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        stream = await client.chat.completions.create(
            model="m", messages=BASIC_PROMPT, stream=True)  # type: ignore[arg-type]
        async for chunk in stream:
            delta = chunk.choices[0].delta if chunk.choices else None
            if delta is not None and (delta.content or delta.tool_calls
                                      or getattr(delta, "reasoning_content", None)):
                break  # the agent gives up after the first recorded delta
        await stream.close()
        await client.close()
        with anyio.fail_after(LIMIT):
            await cancelled.wait()
        verdict = await http.post("/replay/v1/assert-consumed")
        (call,) = (await http.get("/replay/v1/journal")).json()["calls"]
    assert verdict.status_code == 409 and verdict.json()["ok"] is False
    (cut,) = [p for p in verdict.json()["problems"] if "ended after" in p]
    found = re.fullmatch(r"the anonymous session: call #0 of script 0 \(turn/step 1/1\) ended "
                         r"after (\d+) of its 10 chunk\(s\): the client went away.*", cut)
    assert found is not None, cut
    assert 1 <= int(found.group(1)) < 10
    assert call["outcome"] == "cancelled" and call["unfinished"].startswith("the client went away")


async def test_a_paused_call_is_not_consumed_until_released(samples: Path) -> None:
    async with serve_scenario(samples / "basic-chat") as server, \
            httpx.AsyncClient(base_url=server.url, timeout=LIMIT) as http:
        paused = _seen(server.engine, ev.CallPaused)
        assert (await http.post("/replay/v1/mode", json={"mode": "call"})).status_code == 200
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        async with anyio.create_task_group() as group:
            answers: list[str | None] = []

            async def ask(messages: Any) -> None:
                done = await client.chat.completions.create(model="m", messages=messages)
                answers.append(done.choices[0].message.content)

            group.start_soon(ask, BASIC_PROMPT)
            with anyio.fail_after(LIMIT):
                await paused.wait()
            held = await http.post("/replay/v1/assert-consumed")
            released = await http.post("/replay/v1/step", json={"how": "continue"})
        await ask(BASIC_TOOL_TURN)
        await client.close()
        after = await http.post("/replay/v1/assert-consumed")
    assert held.status_code == 409
    assert ("the anonymous session: call #0 of script 0 (turn/step 1/1) is paused before "
            "chunk 0 (still in flight)") in held.json()["problems"]
    assert released.status_code == 200
    assert answers[-1] == "The workspace has README.md and src. Hello!"
    assert (after.status_code, after.json()["ok"]) == (200, True)


THROW_FIRST = {"patches": [{"at": 0, "entry": {
    "kind": "throw", "chunks": [], "message": "slow down", "code": "RATE_LIMIT"}}]}
"""Turns a scenario's first call into a scripted 429."""


def _throw_first(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    (target / "replay.override.json").write_text(json.dumps(THROW_FIRST), encoding="utf-8")
    return target


async def _retry_once(url: str, messages: Any) -> None:
    """The agent's own retry after a 429 (no SDK retry: no ``x-stainless-retry-count`` > 0)."""
    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.RateLimitError):
        await client.chat.completions.create(model="m", messages=messages)
    await client.chat.completions.create(model="m", messages=messages)
    await client.close()


@pytest.mark.parametrize("strict", [False, True])
async def test_a_retry_the_recording_lacks_is_marked_and_fails_strict(
        samples: Path, tmp_path: Path, strict: bool) -> None:
    scenario = load_scenario(_throw_first(samples / "basic-chat", tmp_path / "sc"))
    engine = ReplayEngine(scenario.scripts, strict=strict)
    async with ReplayServer(engine, scenario=scenario) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        await _retry_once(server.url, BASIC_PROMPT)
        journal = (await http.get("/replay/v1/journal")).json()["calls"]
        verdict = await http.post("/replay/v1/assert-consumed")
    assert [(c["outcome"], c["retry"]) for c in journal] == [("failed", False), ("finished", True)]
    retry_problem = ("the anonymous session: call #1 of script 0 (turn/step 1/2) is a retry of "
                     "the failed call before it, and the recording has no such retry (strict): "
                     "the retry took the next recorded call")
    if strict:
        assert verdict.status_code == 409 and retry_problem in verdict.json()["problems"]
    else:
        assert (verdict.status_code, verdict.json()["ok"]) == (200, True)
        assert verdict.json()["firstDivergence"] is not None  # reported, not failed


async def test_a_faithful_replay_of_a_recorded_retry_passes_strict(
        samples: Path, tmp_path: Path) -> None:
    scenario = load_scenario(_throw_first(samples / "retry", tmp_path / "sc"))
    engine = ReplayEngine(scenario.scripts, strict=True)
    async with ReplayServer(engine, scenario=scenario) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        recorded = [(await http.get(f"/replay/v1/context/0/{n}")).json()["context"]
                    for n in (0, 1)]
        assert recorded[0] == recorded[1] and recorded[0]  # the recording retried the call
        messages = [{"role": item["role"], "content": item["text"]} for item in recorded[0]]
        await _retry_once(server.url, messages)
        journal = (await http.get("/replay/v1/journal")).json()["calls"]
        verdict = await http.post("/replay/v1/assert-consumed")
    assert [(c["retry"], c["divergence"]) for c in journal] == [(False, None), (True, None)]
    assert (verdict.status_code, verdict.json()) == (
        200, {"ok": True, "firstDivergence": None, "strict": True})
