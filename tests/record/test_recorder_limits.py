"""The recorder as a server and a writer: calls of one session logged in request order, one
recorder per directory, secrets redacted from what is written, a silent upstream let go of
when the client leaves, the front door's limits, and writes that fail stopping it loudly."""

from __future__ import annotations

import asyncio
import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from replay_engine.errors import InputError
from replay_engine.record import primary_sidecar, record_scenario, writer
from replay_engine.server import request_body, serve_scenario
from tests.record.fakeupstream import Answer, FakeUpstream, chunk, json_body, sse, text_answer
from tests.record.recordcheck import assert_valid, logged_calls, no_tracebacks, post
from tests.record.recordtools import every_byte

pytestmark = pytest.mark.anyio
__all__ = ["no_tracebacks"]

CHAT = "/v1/chat/completions"
KEY = "sk-live-5f3a9c2e7b1d4f60a8e9"


def ask(text: str, session: str | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    headers = {"authorization": f"Bearer {KEY}"}
    if session is not None:
        headers["x-session-id"] = session
    return {"model": "m", "stream": True, "messages": [{"role": "user", "content": text}]}, headers


async def test_concurrent_calls_of_one_session_are_logged_in_request_order(
        tmp_path: Path, no_tracebacks: Any) -> None:
    release_first = asyncio.Event()
    first = text_answer("first answer")
    first.gate = release_first
    target = tmp_path / "rec"
    async with FakeUpstream([first, text_answer("second answer")]) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            slow = asyncio.create_task(post(rec.url + CHAT, *ask("one")))
            await upstream.wait(lambda: len(upstream.requests) == 1)
            fast = await post(rec.url + CHAT, *ask("one"))  # the same session, while 1 streams
            assert fast.status == 200 and b"second answer" in fast.body
            assert rec.reports == []  # ended, but its slot comes after the first call's
            release_first.set()
            assert b"first answer" in (await slow).body
    assert [r.index for r in rec.reports] == [0, 1]
    assert [c.key for c in logged_calls(target)] == ["1/1", "1/2"]
    async with serve_scenario(target) as replay:  # each request gets its own answer back
        again = [await post(replay.url + CHAT, *ask("one")) for _ in range(2)]
    assert b"first answer" in again[0].body and b"second answer" in again[1].body


async def test_a_call_still_streaming_at_stop_keeps_its_slot_for_the_calls_after_it(
        tmp_path: Path) -> None:
    never = Answer(silent=True)
    target = tmp_path / "rec"
    async with FakeUpstream([never, text_answer("later")]) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            stuck = asyncio.create_task(post(rec.url + CHAT, *ask("one")))
            await upstream.wait(lambda: len(upstream.requests) == 1)
            assert (await post(rec.url + CHAT, *ask("one"))).status == 200
        stuck.cancel()
    assert [(c.key, c.code) for c in logged_calls(target)] == [("1/1", "ABORTED"), ("1/2", None)]
    assert_valid(target)
    decided = json.loads((target / "replay.override.json").read_text())
    assert [e["kind"] for e in decided] == ["throw", "chunks"]


async def test_one_directory_one_recorder(tmp_path: Path) -> None:
    target = tmp_path / "rec"
    async with FakeUpstream([text_answer("a")]) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            with pytest.raises(InputError) as caught:
                async with record_scenario(target, upstream.url, force=True):
                    pass
            assert caught.value.code == "RECORDING_LOCKED"
            assert f"pid {os.getpid()}" in caught.value.message
            assert (await post(rec.url + CHAT, *ask("x"))).status == 200  # the first goes on
        assert not (target / ".dsh-replay-record.lock").exists()
        async with record_scenario(target, upstream.url, force=True):  # free again
            pass
    assert [p.name for p in target.glob("*.bak.*")] == ["session.jsonl.bak.1"]


async def test_secrets_split_across_deltas_in_queries_and_cut_error_bodies_are_redacted(
        tmp_path: Path, no_tracebacks: Any) -> None:
    query_key = "AIzaQuery0123456789abcdef"
    goog_key = "AIzaHeader0123456789abcdef"
    half = len(KEY) // 2
    answers = [
        sse([chunk({"content": f"your key is {KEY[:half]}"}), chunk({"content": KEY[half:]}),
             chunk({"tool_calls": [{"index": 0, "id": "t", "function": {
                 "name": "f", "arguments": f'{{"k":"{goog_key[:5]}'}}]}),
             chunk({"tool_calls": [{"index": 0, "function": {"arguments": f'{goog_key[5:]}"}}'}}]}),
             chunk({}, "stop")]),
        json_body({"error": {"message": f"bad key ?key={query_key} for {goog_key}"}}, 400),
        Answer(500, {"content-type": "text/plain"}, b"x" * (500 - 10) + KEY.encode() + b" tail"),
    ]
    target = tmp_path / "rec"
    async with FakeUpstream(answers) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            headers = {"authorization": f"Bearer {KEY}", "x-goog-api-key": goog_key}
            for n in range(3):
                got = await post(f"{rec.url}{CHAT}?key={query_key}", ask(f"c{n}")[0], headers)
                assert got.status in (200, 400, 500)
    assert KEY in upstream.requests[0][0]  # the client's own headers went upstream
    assert f"key={query_key}" in upstream.requests[0][0]
    written = every_byte(target)
    for secret in (KEY, query_key, goog_key):
        assert secret.encode() not in written
        assert secret[:6].encode() not in written and secret[-6:].encode() not in written
        assert all(secret not in (r.message or "") for r in rec.reports)
    assert_valid(target)
    log = (target / "session.jsonl").read_text()
    assert "your key is [redacted]" in log and '{\\"k\\":\\"[redacted]\\"}' in log
    assert [r.code for r in rec.reports] == [None, "INVALID_REQUEST", "SERVER"]
    assert rec.reports[1].message == "bad key ?key=[redacted] for [redacted]"
    assert rec.reports[2].message == "x" * 490 + "[redacted]"  # redacted before the cut


async def test_a_client_leaving_a_silent_upstream_closes_the_upstream_socket(
        tmp_path: Path, no_tracebacks: Any) -> None:
    head_then_silence = sse([chunk({"content": "par"})], done=False)
    head_then_silence.silent = True
    answers = [Answer(silent=True), head_then_silence]
    target = tmp_path / "rec"
    async with FakeUpstream(answers) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            for n in (1, 2):
                client = asyncio.create_task(post(rec.url + CHAT, *ask(f"c{n}")))
                await upstream.wait(lambda n=n: len(upstream.requests) == n)
                client.cancel()  # the client gives up
                await upstream.wait(lambda n=n: upstream.closed_by_client == n)
    assert [(c.code, c.chunks) for c in logged_calls(target)] == [("ABORTED", 0), ("ABORTED", 2)]
    assert [r.code for r in rec.reports] == ["ABORTED", "ABORTED"]
    assert_valid(target)


async def test_the_recorder_keeps_the_front_door_limits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(request_body, "MAX_BODY_BYTES", 1000)
    monkeypatch.setattr(request_body, "BODY_TIMEOUT_S", 0.3)
    async with FakeUpstream([]) as upstream:
        async with record_scenario(tmp_path / "rec", upstream.url) as rec:
            big = await post(rec.url + CHAT, b'{"messages":[],"pad":"' + b"x" * 2000 + b'"}')
            assert big.status == 413 and big.json()["error"]["code"] == "BODY_TOO_LARGE"
            host, port = rec.url.removeprefix("http://").split(":")
            reader, writer_ = await asyncio.open_connection(host, int(port))
            writer_.write(f"POST {CHAT} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: "
                          "application/json\r\nContent-Length: 100\r\n\r\n{".encode())
            slow = await asyncio.wait_for(reader.read(), 10)
            writer_.close()
            assert slow.startswith(b"HTTP/1.1 408") and b"BODY_TIMEOUT" in slow
            reader, writer_ = await asyncio.open_connection(host, int(port))
            writer_.write(b"POST / HTTP/1.1\r\nBad Header\r\n\r\n")
            bad = await asyncio.wait_for(reader.read(), 10)
            writer_.close()
            assert bad.startswith(b"HTTP/1.1 400") and b'"MALFORMED_HTTP"' in bad
    assert upstream.requests == [] and rec.reports == []


def _failing_write(monkeypatch: pytest.MonkeyPatch, after: int, error: int) -> list[int]:
    """Make the log writes after the first ``after`` ones fail with ``error``, the first
    failing one after writing half its bytes (a torn line)."""
    real = os.write
    state = {"writes": 0, "torn": False}
    fds: list[int] = []
    real_init = writer.SessionLog.__init__

    def init(self: writer.SessionLog, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        assert self._fd is not None
        fds.append(self._fd)

    def write(fd: int, data: Any) -> int:
        if fd not in fds:
            return real(fd, data)
        state["writes"] += 1
        if state["writes"] <= after:
            return real(fd, data)
        if not state["torn"]:
            state["torn"] = True
            return real(fd, bytes(data)[:len(data) // 2])
        raise OSError(error, os.strerror(error))

    monkeypatch.setattr(writer.SessionLog, "__init__", init)
    monkeypatch.setattr(writer.os, "write", write)
    return fds


async def test_a_write_that_fails_stops_the_recording_loudly_and_keeps_whole_calls(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_tracebacks: Any) -> None:
    _failing_write(monkeypatch, after=3, error=errno.ENOSPC)  # 3 calls, then a torn one
    target = tmp_path / "rec"
    failures: list[Exception] = []
    async with FakeUpstream([text_answer(f"answer {n}") for n in range(5)]) as upstream:
        with pytest.raises(InputError) as caught:
            async with record_scenario(target, upstream.url, on_failure=failures.append) as rec:
                got = [await post(rec.url + CHAT, *ask(f"call {n}")) for n in range(6)]
    assert caught.value.code == "RECORD_WRITE" and failures == [caught.value]
    assert "No space left on device" in caught.value.message and "session.jsonl" in \
        caught.value.message
    assert [g.status for g in got] == [200, 200, 200, 200, 503, 503]
    assert got[4].json()["error"]["code"] == "RECORD_WRITE"
    assert len(upstream.requests) == 4  # the recording stopped: nothing more was forwarded
    assert (target / "session.jsonl").read_bytes().endswith(b"\n")  # the torn line cut back
    assert [c.key for c in logged_calls(target)] == ["1/1", "2/1", "3/1"]
    assert_valid(target)


@pytest.mark.parametrize(("answers", "kept", "links"), [
    (["ok", 429, "ok"], ["chunks", "throw"], True),  # the sidecar put back as it was
    (["ok", 429, "ok"], ["chunks", "throw"], False),  # rendered again where links fail
    (["ok", 429], None, True),  # the first failure's log write fails: no sidecar at all
    ([429, "ok", 500, "ok"], ["throw", "chunks", "throw"], True),
], ids=["rewritten", "rewritten-without-links", "first-failure", "later-failure"])
async def test_a_log_write_that_fails_leaves_the_sidecar_holding_the_logged_calls(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_tracebacks: Any,
        answers: list[str | int], kept: list[str] | None, links: bool) -> None:
    _failing_write(monkeypatch, after=len(answers) - 1, error=errno.ENOSPC)  # the last call's
    if not links:
        def no_link(*args: object) -> None:
            raise OSError(errno.EPERM, "links not supported")

        monkeypatch.setattr(primary_sidecar.os, "link", no_link)
    target = tmp_path / "rec"
    upstream_answers = [text_answer(a) if isinstance(a, str) else
                        json_body({"error": {"message": "busy"}}, a) for a in answers]
    async with FakeUpstream(upstream_answers) as upstream:
        with pytest.raises(InputError):
            async with record_scenario(target, upstream.url) as rec:
                for n in range(len(answers)):
                    await post(rec.url + CHAT, *ask(f"call {n}"))
    logged = logged_calls(target)
    assert len(logged) == len(answers) - 1
    sidecar = target / "replay.override.json"
    if kept is None:
        assert not sidecar.exists()
    else:
        decided = json.loads(sidecar.read_text())
        assert [e["kind"] for e in decided] == kept
        assert [e["kind"] == "throw" for e in decided] == [c.code is not None for c in logged]
    assert [p.name for p in target.iterdir() if p.name.endswith(".tmp")] == []
    assert_valid(target)
