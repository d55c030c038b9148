"""The verdict over HTTP and from ``serve``: refused calls, hangs in flight and strict mode fail
it for the control API and the exit status alike; a busy port exits 4; a model call while the
scenario is not loaded answers 503 naming the load error."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import openai
import pytest

from replay_engine import ReplayError
from replay_engine.server import serve_scenario
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
