"""Slow and numerous clients: a request head or body that never completes is cut off, and
connections beyond the cap are answered 503 at once instead of piling up."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest
from anyio.abc import SocketStream

from replay_engine import ReplayEngine, load_scenario
from replay_engine.server import ReplayServer, request_body
from tests.wire.wire_helpers import text_entry, write_scenario

pytestmark = pytest.mark.anyio


def _engine(tmp_path: Path) -> ReplayEngine:
    return ReplayEngine(load_scenario(write_scenario(tmp_path / "sc", [text_entry("hi")])).scripts)


async def _connect(url: str) -> SocketStream:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return await anyio.connect_tcp(host, int(port))


async def _read_until_closed(stream: SocketStream, seconds: float = 10) -> bytes:
    """Everything the server sends until it closes the connection (fails after ``seconds``)."""
    got = b""
    with anyio.fail_after(seconds):
        while True:
            try:
                got += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                return got


async def test_a_request_head_that_never_ends_is_cut_off(tmp_path: Path) -> None:
    async with ReplayServer(_engine(tmp_path), header_timeout=0.5) as server:
        async with await _connect(server.url) as silent, await _connect(server.url) as dribble:
            await dribble.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: 1\r\n")
            assert await _read_until_closed(silent) == b""
            assert await _read_until_closed(dribble) == b""
        async with httpx.AsyncClient() as client:  # the server still serves
            assert (await client.get(server.url + "/healthz")).status_code == 200


async def test_a_kept_alive_connection_gets_the_same_deadline_for_its_next_head(
        tmp_path: Path) -> None:
    async with ReplayServer(_engine(tmp_path), header_timeout=0.5) as server:
        async with await _connect(server.url) as stream:
            await stream.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            with anyio.fail_after(10):
                assert b"200 OK" in await stream.receive()
            await stream.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # unfinished
            assert await _read_until_closed(stream) == b""


async def test_a_request_body_that_never_ends_answers_408(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(request_body, "BODY_TIMEOUT_S", 0.5)
    async with ReplayServer(_engine(tmp_path)) as server:
        for path in ("/v1/chat/completions", "/replay/v1/mode"):
            async with await _connect(server.url) as stream:
                await stream.send(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close"
                                  "\r\nContent-Type: application/json\r\nContent-Length: 100"
                                  "\r\n\r\n{".encode())
                answer = await _read_until_closed(stream)
            assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
            assert b"BODY_TIMEOUT" in answer
        assert server.engine.journal() == []
        assert server.engine.mode == "run"


async def test_connections_beyond_the_cap_are_answered_503(tmp_path: Path) -> None:
    async with ReplayServer(_engine(tmp_path), max_connections=4) as server:
        idle = [await _connect(server.url) for _ in range(4)]
        try:
            async with httpx.AsyncClient() as client:
                with anyio.fail_after(10):  # the server counts the idle ones once accepted
                    while (await client.get(server.url + "/healthz")).status_code != 503:
                        await anyio.sleep(0.01)
        finally:
            for stream in idle:
                await stream.aclose()
        async with httpx.AsyncClient() as client:
            with anyio.fail_after(10):
                while (await client.get(server.url + "/healthz")).status_code != 200:
                    await anyio.sleep(0.01)
