"""The ``X-Session-Id`` header is held to the rule path ids keep (``guard.id_problem``): printable
ASCII, no space, at most ``MAX_ID`` characters; the replay server and the recorder answer 400
``INVALID_ID`` in the dialect's error shape, and no call is bound, journaled or forwarded."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import openai
import pytest

from replay_engine import ReplayEngine, load_scenario
from replay_engine.record import record_scenario
from replay_engine.server import ReplayServer
from replay_engine.server.guard import MAX_ID
from tests.wire.wire_helpers import text_entry, write_scenario

pytestmark = pytest.mark.anyio
CHAT = "/v1/chat/completions"


def _engine(tmp_path: Path) -> ReplayEngine:
    return ReplayEngine(load_scenario(write_scenario(tmp_path / "sc", [text_entry("hi")])).scripts)


@pytest.mark.parametrize("session", ["has space", "s" * (MAX_ID + 1), "tab\there"])
async def test_a_header_id_outside_the_rule_is_refused(tmp_path: Path, session: str) -> None:
    engine = _engine(tmp_path)
    async with ReplayServer(engine) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0,
                                    default_headers={"X-Session-Id": session})
        with pytest.raises(openai.BadRequestError) as refused:
            await client.chat.completions.create(model="m", messages=[])
        await client.close()
    assert refused.value.code == "INVALID_ID"
    assert "X-Session-Id header" in refused.value.message
    assert engine.journal() == [] and engine.runs() == []


async def _raw_post(url: str, header: bytes) -> bytes:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    body = b'{"messages":[]}'
    async with await anyio.connect_tcp(host, int(port)) as stream:
        await stream.send(b"POST " + CHAT.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Connection: close\r\nContent-Type: application/json\r\n"
                          b"X-Session-Id: " + header + b"\r\nContent-Length: "
                          + str(len(body)).encode() + b"\r\n\r\n" + body)
        got = b""
        with anyio.fail_after(10):
            while True:
                try:
                    got += await stream.receive()
                except anyio.EndOfStream:
                    return got


@pytest.mark.parametrize("header", ["abc\u202edef".encode(), "caf\u00e9".encode("latin-1")])
async def test_non_ascii_and_bidi_header_ids_are_refused(tmp_path: Path, header: bytes) -> None:
    engine = _engine(tmp_path)
    async with ReplayServer(engine) as server:
        answer = await _raw_post(server.url, header)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    message = json.loads(body)["error"]
    assert message["code"] == "INVALID_ID" and "\u202e" not in message["message"]
    assert engine.journal() == []


async def test_a_good_header_id_binds_as_before(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    async with ReplayServer(engine) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0,
                                    default_headers={"X-Session-Id": "agent-1:child.2"})
        await client.chat.completions.create(model="m", messages=[])
        await client.close()
    assert [r.session for r in engine.journal()] == ["agent-1:child.2"]


async def test_the_recorder_refuses_it_before_forwarding(tmp_path: Path) -> None:
    async with record_scenario(tmp_path / "rec", "http://127.0.0.1:9") as rec:
        client = openai.AsyncOpenAI(base_url=rec.url + "/v1", api_key="k", max_retries=0,
                                    default_headers={"X-Session-Id": "two words"})
        with pytest.raises(openai.BadRequestError) as refused:
            await client.chat.completions.create(model="m", messages=[])
        await client.close()
        assert rec.reports == []
    assert refused.value.code == "INVALID_ID"
