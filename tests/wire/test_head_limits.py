"""Request heads over the front door's limit (``MAX_HEAD_BYTES``) are answered 431 in JSON,
with either HTTP parser uvicorn runs, by the replay server and the recorder alike, and the
server's memory stays flat however much a client keeps sending."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from anyio.abc import SocketStream

from replay_engine import ReplayEngine, load_scenario
from replay_engine.record import record_scenario
from replay_engine.server import ReplayServer
from replay_engine.server.frontdoor import HEAD_TOO_LARGE, MAX_HEAD_BYTES, HttpParser
from tests.wire.wire_helpers import text_entry, write_scenario

pytestmark = pytest.mark.anyio

PARSERS: list[HttpParser] = ["h11", "httptools"]
HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"


def _engine(tmp_path: Path) -> ReplayEngine:
    return ReplayEngine(load_scenario(write_scenario(tmp_path / "sc", [text_entry("hi")])).scripts)


def _many_lines(size: int) -> bytes:
    line = b"X-Pad: " + b"a" * 57 + b"\r\n"  # 66 bytes a line
    return HEAD + line * (size // len(line)) + b"\r\n"


def _one_line(size: int) -> bytes:
    return HEAD + b"X-Big: " + b"b" * size + b"\r\n\r\n"


def _long_target(size: int) -> bytes:
    return b"GET /healthz?q=" + b"c" * size + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


async def _connect(url: str) -> SocketStream:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return await anyio.connect_tcp(host, int(port))


async def _send_and_read(url: str, payload: bytes) -> bytes:
    """Send ``payload`` (ignoring a server that stops reading) and read until closed."""
    got = b""
    async with await _connect(url) as stream:
        with anyio.fail_after(20):
            try:
                await stream.send(payload)
            except (anyio.BrokenResourceError, ConnectionResetError, BrokenPipeError):
                pass
            while True:
                try:
                    got += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                    return got


def _assert_431(answer: bytes) -> None:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431"), answer[:300]
    assert b"content-type: application/json" in head.lower()
    error = json.loads(body)["error"]
    assert error["code"] == HEAD_TOO_LARGE
    assert f"{MAX_HEAD_BYTES // 1024} KiB" in error["message"]


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("shape", [_many_lines, _one_line, _long_target])
async def test_an_oversized_head_is_answered_431_in_json(
        tmp_path: Path, parser: HttpParser, shape: object) -> None:
    assert callable(shape)
    async with ReplayServer(_engine(tmp_path), http=parser) as server:
        _assert_431(await _send_and_read(server.url, shape(1024 * 1024)))
        fits = _many_lines(MAX_HEAD_BYTES - 1024).replace(b"\r\n\r\n",
                                                          b"\r\nConnection: close\r\n\r\n")
        assert (await _send_and_read(server.url, fits)).startswith(b"HTTP/1.1 200")
        async with httpx.AsyncClient() as client:  # the server still serves
            assert (await client.get(server.url + "/healthz")).status_code == 200


@pytest.mark.parametrize("parser", PARSERS)
async def test_the_next_head_on_a_kept_alive_connection_is_capped_too(
        tmp_path: Path, parser: HttpParser) -> None:
    async with ReplayServer(_engine(tmp_path), http=parser) as server:
        answer = await _send_and_read(server.url, HEAD + b"\r\n" + _many_lines(1024 * 1024))
    first, _, rest = answer.partition(b'{"status":"ok"}')
    assert first.startswith(b"HTTP/1.1 200")
    _assert_431(rest)


@pytest.mark.parametrize("parser", PARSERS)
async def test_a_post_with_a_body_larger_than_the_head_cap_is_still_served(
        tmp_path: Path, parser: HttpParser) -> None:
    body = json.dumps({"mode": "run", "pad": "x" * (4 * MAX_HEAD_BYTES)}).encode()
    request = (b"POST /replay/v1/mode HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
               b"Content-Type: application/json\r\nContent-Length: "
               + str(len(body)).encode() + b"\r\n\r\n" + body)
    async with ReplayServer(_engine(tmp_path), http=parser) as server:
        assert (await _send_and_read(server.url, request)).startswith(b"HTTP/1.1 200")


async def test_the_recorder_answers_an_oversized_head_431(tmp_path: Path) -> None:
    async with record_scenario(tmp_path / "rec", "http://127.0.0.1:9") as rec:
        _assert_431(await _send_and_read(rec.url, _one_line(1024 * 1024)))
        assert rec.reports == []


_SERVE = """
import asyncio, sys
from replay_engine import ReplayEngine, load_scenario
from replay_engine.server import ReplayServer

async def main():
    engine = ReplayEngine(load_scenario(sys.argv[1]).scripts)
    async with ReplayServer(engine, http=sys.argv[2]) as server:
        print(server.url, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


def rss_kib(pid: int) -> int:
    """The resident set size of process ``pid`` in KiB (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


@pytest.fixture
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[int, str]]:
    """A replay server in a child process: (pid, url); ``serve`` is ``dsh-replay serve``."""
    scenario = write_scenario(tmp_path / "sc", [text_entry("hi")])
    argv = ([sys.executable, "-m", "replay_engine.cli", "serve", str(scenario), "--port", "0"]
            if request.param == "serve" else
            [sys.executable, "-c", _SERVE, str(scenario), request.param])
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as child:
        try:
            assert child.stdout is not None
            yield child.pid, child.stdout.readline().strip()
        finally:
            child.kill()
            child.wait(10)


def flood(url: str, total: int) -> bytes:
    """Send a request head of ``total`` bytes of header lines; return what the server said."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    line = b"X-Flood: " + b"f" * 1013 + b"\r\n"  # 1 KiB a line
    block = line * 256
    got = b""
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(HEAD)
        sent = 0
        deadline = time.monotonic() + 60
        try:
            while sent < total and time.monotonic() < deadline:
                sock.sendall(block)
                sent += len(block)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            while chunk := sock.recv(65536):
                got += chunk
        except ConnectionResetError:
            pass
    return got


@pytest.mark.parametrize("served", [*PARSERS, "serve"], indirect=True)
def test_a_head_flood_leaves_the_server_memory_flat(served: tuple[int, str]) -> None:
    pid, url = served
    assert httpx.get(url + "/healthz").status_code == 200
    before = rss_kib(pid)
    answer = flood(url, 64 * 1024 * 1024)
    after = rss_kib(pid)
    _assert_431(answer)
    assert after - before < 16 * 1024, (before, after)  # it kept none of the 64 MiB
    assert httpx.get(url + "/healthz").status_code == 200


async def test_the_debuggers_server_answers_an_oversized_head_431() -> None:
    from tests.app.apptools import make_app
    from tests.conftest import SAMPLES

    app = make_app(SAMPLES / "basic-chat")
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        _assert_431(await _send_and_read(app.url, _many_lines(1024 * 1024)))
        async with httpx.AsyncClient() as client:
            assert (await client.get(app.url + "/healthz")).status_code == 200
        await pilot.press("q")
