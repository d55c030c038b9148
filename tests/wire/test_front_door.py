"""Who may talk to the server: foreign Host and Origin values, cross-site simple POSTs, run and
session ids that would forge log lines, and --host / --port values that cannot be listened on."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from replay_engine.server import serve_scenario
from tests.wire.wire_helpers import text_entry, write_scenario

pytestmark = pytest.mark.anyio


def _scenario(tmp_path: Path) -> Path:
    return write_scenario(tmp_path / "sc", [text_entry("one two")])


async def test_a_foreign_host_cannot_read_the_recorded_sessions(tmp_path: Path) -> None:
    async with serve_scenario(_scenario(tmp_path)) as server, httpx.AsyncClient() as client:
        scripts = server.url + "/replay/v1/scripts"
        rebound = await client.get(scripts, headers={"Host": "attacker.example:8765"})
        assert rebound.status_code == 403
        assert rebound.json()["error"]["code"] == "HOST_NOT_ALLOWED"
        assert "one two" not in rebound.text
        for host in ("localhost:1", "127.0.0.1", f"127.0.0.1:{server.port}", "[::1]:8765"):
            ok = await client.get(scripts, headers={"Host": host})
            assert ok.status_code == 200, host


async def test_allow_host_admits_a_named_host(tmp_path: Path) -> None:
    from replay_engine import ReplayEngine, load_scenario
    from replay_engine.server import ReplayServer

    engine = ReplayEngine(load_scenario(_scenario(tmp_path)).scripts)
    async with ReplayServer(engine, allow_hosts=["box.lan"]) as server, \
            httpx.AsyncClient() as client:
        url = server.url + "/replay/v1/state"
        assert (await client.get(url, headers={"Host": "box.lan:80"})).status_code == 200
        assert (await client.get(url, headers={"Origin": "http://box.lan"})).status_code == 200
        assert (await client.get(url, headers={"Host": "other.lan"})).status_code == 403


@pytest.mark.parametrize("path,body", [
    ("/replay/v1/reset", b""),
    ("/replay/v1/mode", b'{"mode":"chunk"}'),
    ("/v1/chat/completions", b'{"model":"m","messages":[{"role":"user","content":"x"}]}'),
])
async def test_cross_site_posts_change_nothing(tmp_path: Path, path: str, body: bytes) -> None:
    async with serve_scenario(_scenario(tmp_path)) as server, httpx.AsyncClient() as client:
        engine = server.engine
        # What a page on another site can send without a preflight: text/plain, its Origin.
        foreign = await client.post(server.url + path, content=body, headers={
            "Origin": "https://evil.example", "Content-Type": "text/plain"})
        assert foreign.status_code == 403
        assert foreign.json()["error"]["code"] == "ORIGIN_NOT_ALLOWED"
        null_origin = await client.post(server.url + path, content=body,
                                        headers={"Origin": "null"})
        assert null_origin.status_code == 403
        # No Origin (a sandboxed client hiding it) but still a simple content type: refused.
        plain = await client.post(server.url + path, content=body,
                                  headers={"Content-Type": "text/plain;charset=UTF-8"})
        assert plain.status_code == 415
        assert plain.json()["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE"
        form = await client.post(server.url + path, content=body, headers={
            "Content-Type": "application/x-www-form-urlencoded"})
        assert form.status_code == 415
        assert engine.mode == "run"
        assert engine.journal() == []
        local = await client.post(server.url + path, content=body, headers={
            "Content-Type": "application/json", "Origin": f"http://127.0.0.1:{server.port}"})
        assert local.status_code == 200


@pytest.mark.parametrize("run", ["a%0Ab", "x%00y", "has%20space", "r" * 129, "tab%09"])
async def test_run_ids_with_control_characters_are_refused(tmp_path: Path, run: str) -> None:
    async with serve_scenario(_scenario(tmp_path)) as server, httpx.AsyncClient() as client:
        for path in (f"/runs/{run}/replay/v1/state", f"/runs/{run}/v1/chat/completions",
                     f"/sessions/{run}/v1/chat/completions"):
            method = "GET" if path.endswith("state") else "POST"
            answer = await client.request(method, server.url + path, json={
                "model": "m", "messages": [{"role": "user", "content": "hi"}]})
            assert answer.status_code == 400, path
            assert answer.json()["error"]["code"] == "INVALID_ID"
            assert "\n" not in answer.json()["error"]["message"]
        assert server.engine.runs() == []


def test_a_forged_session_id_cannot_forge_verdict_or_log_lines(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "replay_engine.cli", "serve",
                             str(_scenario(tmp_path)), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        forged = "s\nreplay consumed (run default)\n"
        answers = [httpx.post(url + path, json={"sessionId": forged, "messages": []})
                   for path in ("/replay/v1/stream", "/replay/v1/cancel")]
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    # the body field keeps the id rule of paths and X-Session-Id: refused before binding
    assert [a.status_code for a in answers] == [400, 400]
    assert all("sessionId body field" in a.text and "INVALID_ID" in a.text for a in answers)
    assert all(not line.startswith("replay consumed") for line in err.splitlines())
    assert out.splitlines()[0] == "replay NOT consumed (run default):"
    assert all(not line.startswith("replay consumed") for line in out.splitlines())


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("command", [
    ["-m", "replay_engine.cli", "serve", "SC"],
    ["-m", "replay_engine.cli", "record", "SC", "--upstream", "http://127.0.0.1:9"],
    ["-m", "dsh_replay_tui"],
])
@pytest.mark.parametrize("flag,value,says", [
    ("--port", "99999", "outside 0..65535"),
    ("--port", "-1", "outside 0..65535"),
    ("--host", "192.0.2.1", "not an address of this machine"),
])
def test_port_and_host_that_cannot_be_listened_on_are_usage_errors(
        tmp_path: Path, command: list[str], flag: str, value: str, says: str) -> None:
    args = [a.replace("SC", str(tmp_path / "sc")) for a in command]
    if command == ["-m", "dsh_replay_tui"]:
        args.append(str(tmp_path / "sc"))
    done = _cli(*args, flag, value)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and f"argument {flag}" in done.stderr
    assert "Traceback" not in done.stderr


async def test_the_recorder_refuses_foreign_hosts_and_origins(tmp_path: Path) -> None:
    from replay_engine.record import record_scenario

    async with serve_scenario(_scenario(tmp_path)) as upstream, \
            record_scenario(tmp_path / "rec", upstream.url) as recording, \
            httpx.AsyncClient() as client:
        chat = recording.url + "/v1/chat/completions"
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        rebound = await client.post(chat, json=body, headers={"Host": "attacker.example"})
        assert rebound.status_code == 403
        foreign = await client.post(chat, content=json.dumps(body), headers={
            "Origin": "https://evil.example", "Content-Type": "text/plain"})
        assert foreign.status_code == 403
        assert upstream.engine.journal() == []  # nothing reached the provider
        assert (await client.get(recording.url + "/healthz")).status_code == 200


LONG = 60_000


@contextlib.asynccontextmanager
async def _front_door(kind: str, tmp_path: Path) -> AsyncIterator[str]:
    """The base URL of a replay server, or of a recorder in front of one."""
    from replay_engine.record import record_scenario

    async with serve_scenario(_scenario(tmp_path)) as server:
        if kind == "replay":
            yield server.url
            return
        async with record_scenario(tmp_path / "rec", server.url) as recording:
            yield recording.url


@pytest.mark.parametrize("kind", ["replay", "recorder"])
@pytest.mark.parametrize(("method", "path", "headers", "status", "code"), [
    ("GET", "/healthz", {"Host": "h" * LONG}, 403, "HOST_NOT_ALLOWED"),
    ("GET", "/healthz", {"Origin": "http://" + "o" * LONG}, 403, "ORIGIN_NOT_ALLOWED"),
    ("POST", "/v1/chat/completions", {"Content-Type": "text/" + "p" * LONG}, 415,
     "UNSUPPORTED_MEDIA_TYPE"),
    ("GET", "/nowhere/" + "n" * LONG, {}, 404, "NOT_FOUND"),
    ("DELETE", "/v1/models/" + "m" * LONG, {}, 405, "METHOD_NOT_ALLOWED"),
], ids=["host", "origin", "content-type", "not-found", "method"])
async def test_a_refusal_quotes_a_huge_value_capped(
        tmp_path: Path, kind: str, method: str, path: str, headers: dict[str, str], status: int,
        code: str) -> None:
    async with _front_door(kind, tmp_path) as url, httpx.AsyncClient() as client:
        answer = await client.request(method, url + path, headers=headers, content=b"{}")
    assert answer.status_code == status, answer.text[:300]
    error = answer.json()["error"]
    assert error["code"] == code
    assert len(answer.content) < 2_000 and "characters)" in error["message"]


async def test_the_recorders_404_names_every_model_route(tmp_path: Path) -> None:
    async with _front_door("recorder", tmp_path) as url, httpx.AsyncClient() as client:
        answer = await client.get(url + "/v2/else")
    message = answer.json()["error"]["message"]
    assert answer.status_code == 404 and "'/v2/else'" in message
    for route in ("/v1/chat/completions", "/v1/messages", "/v1/responses",
                  "/v1beta/models/{model}:generateContent",
                  "/v1beta/models/{model}:streamGenerateContent"):
        assert route in message
