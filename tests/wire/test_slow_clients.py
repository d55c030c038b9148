"""Slow and numerous clients: a request head or body that never completes is cut off, and
at the connection cap the connection idle the longest makes room for a newcomer, and only
when every one is busy is a request answered 503 (JSON) at once instead of piling up."""

from __future__ import annotations

import json
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


async def _busy(url: str) -> SocketStream:
    """A connection with a request in flight: its head sent, its body still to come."""
    stream = await _connect(url)
    await stream.send(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
    return stream


async def _kept_alive(url: str) -> SocketStream:
    """A keep-alive connection that had one answer and now sits idle."""
    stream = await _connect(url)
    await stream.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    got = b""
    with anyio.fail_after(10):
        while not got.endswith(b'{"status":"ok"}'):
            got += await stream.receive()
    return stream


async def test_at_the_cap_idle_connections_make_room_and_busy_ones_get_a_json_503(
        tmp_path: Path) -> None:
    async with ReplayServer(_engine(tmp_path), max_connections=4) as server:
        idle = [await _connect(server.url) for _ in range(2)] + [
            await _kept_alive(server.url) for _ in range(2)]
        newcomers = [await _kept_alive(server.url) for _ in range(2)]  # each is served
        for stream in idle[:2]:  # by closing the connection idle the longest
            assert await _read_until_closed(stream, 2) == b""
        still = idle[2]
        await still.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        with anyio.fail_after(10):
            assert b"200 OK" in await still.receive()
        for stream in idle + newcomers:
            await stream.aclose()
        busy = [await _busy(server.url) for _ in range(4)]
        try:
            async with httpx.AsyncClient() as client:
                with anyio.fail_after(10):  # the server counts the busy ones once accepted
                    while (answer := await client.get(server.url + "/healthz")).status_code \
                            != 503:
                        await anyio.sleep(0.01)
            assert answer.headers["content-type"] == "application/json"
            assert answer.json()["error"]["code"] == "TOO_MANY_CONNECTIONS"
        finally:
            for stream in busy:
                await stream.aclose()
        async with httpx.AsyncClient() as client:
            with anyio.fail_after(10):
                while (await client.get(server.url + "/healthz")).status_code != 200:
                    await anyio.sleep(0.01)


async def test_a_thousand_idle_keep_alive_connections_do_not_lock_newcomers_out(
        tmp_path: Path) -> None:
    async with ReplayServer(_engine(tmp_path)) as server:
        idle = [await _kept_alive(server.url) for _ in range(1000)]
        try:
            async with httpx.AsyncClient() as client:
                for _ in range(20):
                    answer = await client.get(server.url + "/healthz",
                                              headers={"connection": "close"})
                    assert answer.status_code == 200, answer.text
        finally:
            for stream in idle:
                await stream.aclose()


async def test_a_malformed_request_is_answered_in_json(tmp_path: Path) -> None:
    async with ReplayServer(_engine(tmp_path)) as server:
        async with await _connect(server.url) as stream:
            await stream.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n")
            answer = await _read_until_closed(stream)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"content-type: application/json" in head
    assert json.loads(body)["error"]["code"] == "MALFORMED_HTTP"


async def test_an_app_that_fails_still_answers_json(tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    async def broken(scope: object, receive: object, send: object) -> None:
        raise RuntimeError("boom")

    async with ReplayServer(_engine(tmp_path), app=broken) as server:
        async with httpx.AsyncClient() as client:
            answer = await client.get(server.url + "/healthz")
    assert answer.status_code == 500 and answer.json()["error"]["code"] == "INTERNAL"
    assert any("boom" in str(r.exc_info) for r in caplog.records)  # still logged, loudly
