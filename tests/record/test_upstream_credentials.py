"""Credentials in ``--upstream`` (a password in its user info, a ``?key=`` query) are used but
never written to the scenario, answered to the client or printed, even when the upstream
cannot be reached and its URL is what the failure names."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from replay_engine.errors import ConfigError
from replay_engine.record import check_upstream, record_scenario
from tests.record.fakeupstream import FakeUpstream, text_answer
from tests.record.recordcheck import assert_valid, no_tracebacks, post
from tests.record.recordtools import every_byte

pytestmark = pytest.mark.anyio
__all__ = ["no_tracebacks"]

PASSWORD = "hunter2-upstream-pw"
QUERY_KEY = "AIzaUpstreamQuery0123456789"
ASK = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def with_credentials(origin: str) -> str:
    return origin.replace("http://", f"http://alice:{PASSWORD}@") + f"/v1?key={QUERY_KEY}"


def assert_no_secret(data: bytes | str) -> None:
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    assert PASSWORD not in text and QUERY_KEY not in text


async def test_an_unreachable_upstream_is_named_without_its_credentials(
        tmp_path: Path, no_tracebacks: Any) -> None:
    target = tmp_path / "rec"
    async with record_scenario(target, with_credentials(f"http://127.0.0.1:{closed_port()}")
                               ) as rec:
        got = await post(rec.url + "/v1/chat/completions", ASK)
        models = await post(rec.url + "/v1/models", b"")  # POST: refused before any upstream
    assert got.status == 502 and "127.0.0.1" in got.json()["error"]["message"]
    assert "***@127.0.0.1" in got.json()["error"]["message"]
    assert_no_secret(got.body)
    assert_no_secret(models.body)
    (report,) = rec.reports
    assert report.code == "HTTP_502"
    assert_no_secret(report.message or "")
    assert (target / "replay.override.json").exists()
    assert_no_secret(every_byte(target))
    assert_valid(target)


async def test_a_query_key_of_the_upstream_goes_upstream_with_the_request_path(
        tmp_path: Path, no_tracebacks: Any) -> None:
    async with FakeUpstream([text_answer("fine")]) as upstream:
        async with record_scenario(tmp_path / "rec", with_credentials(upstream.url)) as rec:
            got = await post(rec.url + "/v1/chat/completions?extra=1", ASK)
    assert got.status == 200
    request_line = upstream.requests[0][0].split("\r\n")[0]
    assert request_line == f"POST /v1/chat/completions?key={QUERY_KEY}&extra=1 HTTP/1.1"
    assert "authorization: basic " in upstream.requests[0][0].lower()  # from the user info
    assert [r.code for r in rec.reports] == [None]


def test_a_refused_upstream_url_is_named_without_its_credentials() -> None:
    with pytest.raises(ConfigError) as caught:
        check_upstream(f"ftp://alice:{PASSWORD}@example.com/?key={QUERY_KEY}")
    assert "ftp://***@example.com/?***" in caught.value.message
    assert_no_secret(caught.value.message)


async def test_the_record_command_prints_no_upstream_credentials(tmp_path: Path) -> None:
    upstream = with_credentials(f"http://127.0.0.1:{closed_port()}")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "replay_engine.cli", "record", str(tmp_path / "rec"),
        "--upstream", upstream, "--port", "0", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
        got = await post(url + "/v1/chat/completions", ASK)
        assert got.status == 502
        proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert b"failed upstream HTTP_502" in err
    assert_no_secret(out + err)
    assert_no_secret(every_byte(tmp_path / "rec"))
