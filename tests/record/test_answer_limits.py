"""The recorder's limits on what the upstream sends: compressed bombs are inflated no further
than the answer, event and error-body caps; an endless stream ends at the stream caps; the
model list is read with a cap, a deadline and only while its client waits."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from replay_engine.record import forward, passthrough, record_scenario
from replay_engine.record.decoding import MAX_ANSWER_BYTES, MIB, Decoder
from tests.record.fakeupstream import Answer, FakeUpstream, chunk, text_answer
from tests.record.recordcheck import assert_valid, logged_calls, no_tracebacks, post

pytestmark = pytest.mark.anyio
__all__ = ["no_tracebacks"]

CHAT = "/v1/chat/completions"


def ask(stream: bool, session: str | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    return ({"model": "m", "stream": stream, "messages": [{"role": "user", "content": "go"}]},
            {"x-session-id": session} if session else {})


def gzip_zeros(size: int) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join(z.compress(b"\0" * MIB) for _ in range(size // MIB)) + z.flush()


BOMB = gzip_zeros(4 * MAX_ANSWER_BYTES)  # 256 MiB inflated, about 256 KiB sent


def gzipped(status: int, content_type: str, body: bytes) -> Answer:
    return Answer(status, {"content-type": content_type, "content-encoding": "gzip"}, body)


def test_the_decoder_inflates_a_bounded_step_at_a_time() -> None:
    decoder = Decoder("gzip")
    pieces = decoder.pieces(BOMB)
    first = next(pieces)
    assert 0 < len(first) <= 64 * 1024  # the rest is not inflated unless asked for
    assert sum(len(p) for p in pieces) + len(first) == 4 * MAX_ANSWER_BYTES


async def test_a_gzip_answer_bomb_is_relayed_whole_and_recorded_invalid(
        tmp_path: Path, no_tracebacks: Any) -> None:
    bomb = gzipped(200, "application/json", BOMB)
    target = tmp_path / "rec"
    async with FakeUpstream([bomb, text_answer("fine")]) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            got = await post(rec.url + CHAT, *ask(False))
            other = await post(rec.url + CHAT, *ask(True, "other"))
    assert (got.status, got.body == BOMB, got.whole) == (200, True, True)
    assert b"fine" in other.body
    assert [(r.code, r.message) for r in rec.reports] == [
        ("INVALID_RESPONSE", "the upstream's answer is larger than 64 MiB"), (None, None)]
    assert_valid(target)


async def test_a_gzip_error_body_bomb_is_read_no_further_than_its_message(
        tmp_path: Path, no_tracebacks: Any) -> None:
    message = json.dumps({"error": {"message": "overloaded"}}).encode()
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = z.compress(message + b" " * (512 * MIB)) + z.flush()  # JSON, then endless spaces
    target = tmp_path / "rec"
    async with FakeUpstream([gzipped(500, "application/json", body)]) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            got = await post(rec.url + CHAT, *ask(False))
    assert (got.status, got.body == body) == (500, True)
    (report,) = rec.reports
    assert report.code == "SERVER" and report.message == "overloaded"
    assert_valid(target)


async def test_a_gzip_event_stream_bomb_ends_the_relay_and_is_recorded_invalid(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_tracebacks: Any) -> None:
    monkeypatch.setattr(forward, "MAX_STREAM_CHUNKS", 3000)
    event = b"data: " + json.dumps(chunk({"content": "same "})).encode() + b"\n\n"
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = z.compress(event * 200_000) + z.flush()  # about 30 MiB of deltas, no end marker
    target = tmp_path / "rec"
    async with FakeUpstream([gzipped(200, "text/event-stream", body)]) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            got = await post(rec.url + CHAT, *ask(True))
    assert not got.whole and len(got.body) < len(body)  # the relay ended at the limit
    (report,) = rec.reports
    assert (report.code, report.message) == (
        "INVALID_RESPONSE", "the upstream's answer streamed more than 3000 chunks")
    assert [(c.code, c.chunks) for c in logged_calls(target)] == [("INVALID_RESPONSE", 0)]
    assert_valid(target)


def endless(piece: bytes) -> Iterator[bytes]:
    while True:
        yield piece


async def test_an_endless_event_stream_ends_at_the_answer_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_tracebacks: Any) -> None:
    monkeypatch.setattr(forward, "MAX_ANSWER_BYTES", 4 * MIB)
    event = b"data: " + json.dumps(chunk({"content": "more "})).encode() + b"\n\n"
    comments = b": keep-alive padding " + b"x" * 4000 + b"\n"  # bytes without chunks
    answers = [Answer(200, {"content-type": "text/event-stream"},
                      source=lambda: endless(event * 50)),
               Answer(200, {"content-type": "text/event-stream"},
                      source=lambda: endless(comments))]
    target = tmp_path / "rec"
    async with FakeUpstream(answers) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            got = [await post(rec.url + CHAT, *ask(True, s)) for s in (None, "s2")]
            assert upstream.closed_by_client == 0
    assert [g.whole for g in got] == [False, False]  # the relay ended at the limit
    assert all(0 < len(g.body) <= 4 * MIB for g in got)
    assert [r.code for r in rec.reports] == ["INVALID_RESPONSE", "INVALID_RESPONSE"]
    assert {r.message for r in rec.reports} == {"the upstream's answer is larger than 4 MiB"}
    assert_valid(target)  # the child's failed call has no chunks: its script has no such call


async def test_the_model_list_has_a_cap_a_deadline_and_ends_with_its_client(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_tracebacks: Any) -> None:
    monkeypatch.setattr(passthrough, "PASSTHROUGH_TIMEOUT_S", 0.5)
    endless_list = Answer(200, {"content-type": "application/json"},
                          source=lambda: endless(b'{"id":"m","object":"model"},' * 1000))
    silent = Answer(200, {"content-type": "application/json"}, b"[", silent=True)
    bomb = gzipped(200, "application/json", BOMB)
    async with FakeUpstream([endless_list, silent, bomb, Answer(silent=True)]) as upstream:
        async with record_scenario(tmp_path / "rec", upstream.url) as rec:
            async with httpx.AsyncClient(timeout=30) as http:
                big = await http.get(rec.url + "/v1/models")
                slow = await http.get(rec.url + "/v1/models")
                inflated = await http.get(rec.url + "/v1/models")
            left = await get_and_leave(rec.url + "/v1/models")
            await upstream.wait(lambda: upstream.closed_by_client == 2)
            assert left is None
    assert (big.status_code, big.json()["error"]["code"]) == (502, "INVALID_RESPONSE")
    assert "larger than 16 MiB" in big.json()["error"]["message"]
    assert (slow.status_code, slow.json()["error"]["code"]) == (502, "UPSTREAM_TIMEOUT")
    assert (inflated.status_code, inflated.json()["error"]["code"]) == (502, "INVALID_RESPONSE")
    assert rec.reports == []


async def get_and_leave(url: str) -> int | None:
    """A GET its client gives up on after a moment (the upstream never answers)."""
    async with httpx.AsyncClient(timeout=0.3) as http:
        try:
            return (await http.get(url)).status_code
        except httpx.TimeoutException:
            return None
