"""Whatever the upstream answers, the client gets exactly its bytes and the log gets the call
or the failure it was; lone surrogates anywhere are written as escapes; request bodies the
replay server would refuse are refused the same way before anything is forwarded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from replay_engine.record import record_scenario
from replay_engine.scenario.loading import load_scenario
from tests.record.fakeupstream import (
    Answer,
    FakeUpstream,
    chunk,
    deep,
    json_body,
    named_sse,
    sse,
    text_answer,
)
from tests.record.rawupstream import Behaviour, RawUpstream, sse_answer, text_events
from tests.record.recordcheck import assert_valid, logged_calls, no_tracebacks, post

pytestmark = pytest.mark.anyio
__all__ = ["no_tracebacks"]

CHAT = "/v1/chat/completions"
ASK = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}]}
TOOL = {"name": "f", "arguments": "{}"}
COMPLETION = {"object": "chat.completion", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}]}
STOP = chunk({}, "stop")
GEMINI = "/v1beta/models/g:streamGenerateContent?alt=sse"
GEMINI_JSON = "/v1beta/models/g:generateContent"


def gemini_sse(responses: list[Any]) -> Answer:
    """A Gemini event stream (``alt=sse``): one ``data:`` line per response, no event names."""
    body = b"".join(b"data: " + json.dumps(r).encode() + b"\r\n\r\n" for r in responses)
    return Answer(200, {"content-type": "text/event-stream"}, body)


CASES: list[tuple[str, str, Answer, str | None]] = [
    ("choices-5", CHAT, sse([{"choices": 5}, chunk({"content": "ok"}), STOP]),
     "INVALID_RESPONSE"),
    ("tool-calls-5", CHAT, sse([chunk({"tool_calls": 5}), STOP]), "INVALID_RESPONSE"),
    ("function-string", CHAT, sse([chunk({"tool_calls": [
        {"index": 0, "id": "t", "function": "x"}]}), STOP]), "INVALID_RESPONSE"),
    ("index-list", CHAT, sse([chunk({"tool_calls": [
        {"index": [1], "id": "t", "function": TOOL}]}), STOP]), None),
    ("delta-list", CHAT, sse([{"choices": [{"delta": [1], "finish_reason": [2]}]}, STOP]),
     "INVALID_RESPONSE"),
    ("usage-nan", CHAT, sse(['{"choices":[],"usage":{"prompt_tokens":NaN,'
                             '"completion_tokens":1e999}}', STOP]), None),
    ("content-5", CHAT, sse([chunk({"content": 5}), STOP]), "INVALID_RESPONSE"),
    ("chunk-list", CHAT, sse([[chunk({"content": "a"})], STOP]), "INVALID_RESPONSE"),
    ("chunk-null", CHAT, sse(["null", STOP]), "INVALID_RESPONSE"),
    ("completion-content-5", CHAT, json_body({"choices": [{"message": {"content": 5}}]}),
     "INVALID_RESPONSE"),
    ("completion-choices-string", CHAT, json_body({"choices": "x"}), "INVALID_RESPONSE"),
    ("completion-list", CHAT, json_body([COMPLETION]), "INVALID_RESPONSE"),
    ("completion-null", CHAT, json_body(None), "INVALID_RESPONSE"),
    ("deep-event", CHAT, sse([deep(5000)]), "INVALID_RESPONSE"),
    ("not-json-event", CHAT, sse(["{not json"]), "INVALID_RESPONSE"),
    ("binary-event", CHAT, Answer(200, {"content-type": "text/event-stream"},
                                  b"data: \xff\xfe\x00\n\n"), "INVALID_RESPONSE"),
    ("bad-gzip-stream", CHAT, Answer(200, {"content-type": "text/event-stream",
                                           "content-encoding": "gzip"}, b"not gzip"),
     "INVALID_RESPONSE"),
    ("brotli-stream", CHAT, Answer(200, {"content-type": "text/event-stream",
                                         "content-encoding": "br"}, b"\x0b\x02"),
     "INVALID_RESPONSE"),
    ("completion-choices-5", CHAT, json_body({"choices": 5}), "INVALID_RESPONSE"),
    ("completion-choice-5", CHAT, json_body({"choices": [5]}), "INVALID_RESPONSE"),
    ("completion-function-x", CHAT, json_body({"choices": [{"message": {
        "tool_calls": [{"id": "t", "function": "x"}, 7]}}]}), "INVALID_RESPONSE"),
    ("completion-deep", CHAT, json_body(None, raw=deep(5000).encode()), "INVALID_RESPONSE"),
    ("completion-gzip", CHAT, json_body(COMPLETION, gzipped=True), None),
    ("completion-bad-gzip", CHAT, Answer(200, {"content-type": "application/json",
                                               "content-encoding": "gzip"}, b"zzz"),
     "INVALID_RESPONSE"),
    ("completion-empty", CHAT, Answer(200, {}, b""), "INVALID_RESPONSE"),
    ("error-deep", CHAT, json_body(None, 500, raw=deep(5000).encode()), "SERVER"),
    ("error-bad-gzip", CHAT, Answer(503, {"content-encoding": "gzip"}, b"zzz"), "HTTP_503"),
    ("error-list", CHAT, json_body([1, 2], 429), "RATE_LIMIT"),
    ("error-message-5", CHAT, json_body({"error": {"message": 5}}, 400), "INVALID_REQUEST"),
    ("anthropic-index-list", "/v1/messages", named_sse([
        ("message_start", {"type": "message_start", "message": {"usage": [1]}}),
        ("content_block_start", {"type": "content_block_start", "index": [0],
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": [0],
                                 "delta": {"type": "text_delta", "text": "a"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": {"a": 1}}),
        ("message_delta", {"type": "message_delta", "delta": {}, "usage": "x"}),
        ("message_stop", {"type": "message_stop"})]), None),
    ("anthropic-text-5", "/v1/messages", named_sse([
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": 5}}),
        ("message_stop", {"type": "message_stop"})]), "INVALID_RESPONSE"),
    ("anthropic-delta-5", "/v1/messages", named_sse([
        ("message_delta", {"type": "message_delta", "delta": 5}),
        ("message_stop", {"type": "message_stop"})]), "INVALID_RESPONSE"),
    ("anthropic-tool-name-5", "/v1/messages", named_sse([
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "t", "name": 5, "input": {}}}),
        ("message_stop", {"type": "message_stop"})]), "INVALID_RESPONSE"),
    ("anthropic-event-list", "/v1/messages", named_sse([
        ("message_start", [1]), ("message_stop", {"type": "message_stop"})]),
     "INVALID_RESPONSE"),
    ("anthropic-type-list", "/v1/messages", named_sse([
        ("x", {"type": ["error"]}), ("message_stop", {"type": "message_stop"})]), None),
    ("anthropic-error-5", "/v1/messages", named_sse([("error", {"type": "error", "error": 5})]),
     "SERVER"),
    ("anthropic-message-5", "/v1/messages", json_body({"type": "message", "content": 5}),
     "INVALID_RESPONSE"),
    ("anthropic-message-text-5", "/v1/messages", json_body(
        {"type": "message", "content": [{"type": "text", "text": 5}]}), "INVALID_RESPONSE"),
    ("responses-index-dict", "/v1/responses", named_sse([
        ("a", {"type": "response.output_item.added", "output_index": {"k": [1]},
               "item": {"type": "message"}}),
        ("b", {"type": "response.output_text.delta", "output_index": {"k": [1]}, "delta": "a"}),
        ("c", {"type": "response.output_item.done", "output_index": {"k": [1]}, "item": {}}),
        ("d", {"type": "response.completed", "response": {"usage": 5}})]), None),
    ("responses-delta-5", "/v1/responses", named_sse([
        ("a", {"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message"}}),
        ("b", {"type": "response.output_text.delta", "output_index": 0, "delta": 5}),
        ("d", {"type": "response.completed", "response": {}})]), "INVALID_RESPONSE"),
    ("responses-item-5", "/v1/responses", named_sse([
        ("a", {"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message"}}),
        ("c", {"type": "response.output_item.done", "output_index": 0, "item": 5}),
        ("d", {"type": "response.completed", "response": {}})]), "INVALID_RESPONSE"),
    ("responses-arguments-5", "/v1/responses", named_sse([
        ("a", {"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "function_call", "call_id": "c", "name": "f"}}),
        ("c", {"type": "response.output_item.done", "output_index": 0,
               "item": {"type": "function_call", "arguments": 5}}),
        ("d", {"type": "response.completed", "response": {}})]), "INVALID_RESPONSE"),
    ("responses-type-list", "/v1/responses", named_sse([
        ("a", {"type": [1]}), ("d", {"type": "response.failed", "response": {"error": 5}})]),
     None),
    ("responses-output-5", "/v1/responses", json_body({"object": "response", "output": 5,
                                                       "status": [1]}), "INVALID_RESPONSE"),
    ("responses-part-text-5", "/v1/responses", json_body({"object": "response", "output": [
        {"type": "message", "content": [{"type": "output_text", "text": 5}]}]}),
     "INVALID_RESPONSE"),
    ("gemini-index-junk", GEMINI, gemini_sse([{"candidates": [{"content": {"parts": [
        {"text": "a"}]}, "finishReason": "STOP"}], "usageMetadata": 5}]), None),
    ("gemini-text-5", GEMINI, gemini_sse([{"candidates": [{"content": {"parts": [
        {"text": 5}]}, "finishReason": "STOP"}]}]), "INVALID_RESPONSE"),
    ("gemini-parts-5", GEMINI, gemini_sse([{"candidates": [{"content": {"parts": 5},
                                                            "finishReason": "STOP"}]}]),
     "INVALID_RESPONSE"),
    ("gemini-call-5", GEMINI, gemini_sse([{"candidates": [{"content": {"parts": [
        {"functionCall": 5}]}, "finishReason": "STOP"}]}]), "INVALID_RESPONSE"),
    ("gemini-event-null", GEMINI, gemini_sse([None]), "INVALID_RESPONSE"),
    ("gemini-completion-text-5", GEMINI_JSON, json_body({"candidates": [
        {"content": {"parts": [{"text": 5}]}, "finishReason": "STOP"}]}), "INVALID_RESPONSE"),
]


@pytest.mark.parametrize(("path", "answer", "code"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
async def test_a_malformed_answer_reaches_the_client_whole_and_the_log_gets_the_call(
        tmp_path: Path, no_tracebacks: Any, path: str, answer: Answer, code: str | None) -> None:
    body = {**ASK, "stream": "event-stream" in answer.headers.get("content-type", ""),
            "contents": [{"role": "user", "parts": [{"text": "go"}]}]}
    async with FakeUpstream([answer]) as upstream:
        async with record_scenario(tmp_path / "rec", upstream.url) as rec:
            got = await post(rec.url + path, body)
    assert (got.status, got.body, got.whole) == (answer.status, answer.sent_body, True)
    (report,) = rec.reports
    assert report.code == code, report
    (call,) = logged_calls(tmp_path / "rec")
    assert call.code == code
    assert_valid(tmp_path / "rec")
    if code is not None:
        decided = json.loads((tmp_path / "rec" / "replay.override.json").read_text())
        assert [e["kind"] for e in decided] == ["throw"] and decided[0]["code"] == code


async def test_lone_surrogates_in_text_requests_and_errors_lose_no_call(
        tmp_path: Path, no_tracebacks: Any) -> None:
    lone = '"half \\ud83d of a pair"'
    answers = [sse(['{"choices":[{"delta":{"content":' + lone + '}}]}', STOP]),
               text_answer("plain"),
               json_body(None, 429, raw=b'{"error":{"message":' + lone.encode() + b'}}'),
               *(text_answer(f"after {n}") for n in range(4))]
    target = tmp_path / "rec"
    async with FakeUpstream(answers) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            statuses = []
            for n in range(7):
                content = lone if n == 1 else f'"call {n}"'
                request = ('{"model":"m","stream":true,"messages":[{"role":"user","content":'
                           + content + '}]}').encode()
                statuses.append((await post(rec.url + CHAT, request)).status)
    assert statuses == [200, 200, 429, 200, 200, 200, 200]
    assert [r.code for r in rec.reports] == [None, None, "RATE_LIMIT", None, None, None, None]
    assert len(logged_calls(target)) == 7
    assert_valid(target)
    text = (target / "session.jsonl").read_text(encoding="utf-8")
    assert text.count("\\ud83d") == 5  # the delta, its block-end and message, request, error
    (script,) = load_scenario(target).scripts
    entries = [item.to_json() for item in script.entries]
    assert len(entries) == 7
    assert entries[0]["chunks"][1]["text"] == "half \ud83d of a pair"
    assert entries[2] == {"kind": "throw", "chunks": [], "message": "half \ud83d of a pair",
                          "code": "RATE_LIMIT"}


@pytest.mark.parametrize("body", [deep(5000).encode(), b'{"messages":[],"t":1e999}',
                                  b'{"messages":[],"t":NaN}', b'{"messages":[],}', b"[1]"],
                         ids=["deep", "overflow", "nan", "bad-json", "not-an-object"])
async def test_a_request_the_replay_server_would_refuse_is_refused_before_forwarding(
        tmp_path: Path, no_tracebacks: Any, body: bytes) -> None:
    async with FakeUpstream([text_answer("ok")]) as upstream:
        async with record_scenario(tmp_path / "rec", upstream.url) as rec:
            got = await post(rec.url + CHAT, body)
            assert got.status == 400, got.body
            error = got.json()["error"]
            assert error["code"] in ("INVALID_JSON", "INVALID_REQUEST")
            assert upstream.requests == [] and rec.reports == []
            assert (await post(rec.url + CHAT, ASK)).status == 200
    assert [r.index for r in rec.reports] == [0]
    assert_valid(tmp_path / "rec")


UNRELAYABLE: list[tuple[str, bytes]] = [
    ("status-600", b"HTTP/1.1 600 Beyond\r\ncontent-type: application/json\r\n"
                   b"content-length: 2\r\nconnection: close\r\n\r\n{}"),
    ("status-999", b"HTTP/1.1 999 X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"),
]


@pytest.mark.parametrize("raw", [c[1] for c in UNRELAYABLE], ids=[c[0] for c in UNRELAYABLE])
async def test_an_answer_head_the_server_cannot_relay_is_a_json_502_and_a_logged_failure(
        tmp_path: Path, no_tracebacks: Any, raw: bytes) -> None:
    target = tmp_path / "rec"
    async with RawUpstream([Behaviour(raw), Behaviour(sse_answer(text_events("next")))]) as up:
        async with record_scenario(target, up.url) as rec:
            got = await post(rec.url + CHAT, ASK)
            after = await post(rec.url + CHAT, ASK)  # the recorder goes on
    assert (got.status, got.whole) == (502, True), got
    error = got.json()["error"]
    assert error["code"] == "INVALID_RESPONSE" and "cannot be relayed" in error["message"]
    assert after.status == 200 and b"next" in after.body
    assert [r.code for r in rec.reports] == ["INVALID_RESPONSE", None]
    assert [c.code for c in logged_calls(target)] == ["INVALID_RESPONSE", None]
    assert_valid(target)
    decided = json.loads((target / "replay.override.json").read_text())
    assert [e["kind"] for e in decided] == ["throw", "chunks"]


async def test_the_model_list_with_an_unrelayable_status_is_a_json_502(
        tmp_path: Path, no_tracebacks: Any) -> None:
    async with RawUpstream([Behaviour(UNRELAYABLE[0][1])]) as up:
        async with record_scenario(tmp_path / "rec", up.url) as rec:
            async with httpx.AsyncClient() as http:
                got = await http.get(rec.url + "/v1/models")
    assert got.status_code == 502 and got.json()["error"]["code"] == "INVALID_RESPONSE"
    assert "status 600" in got.json()["error"]["message"]


async def test_header_bytes_outside_ascii_are_relayed_as_they_came(
        tmp_path: Path, no_tracebacks: Any) -> None:
    raw = sse_answer(text_events("ok")).replace(b"\r\n\r\n", b"\r\nx-note: 5 \xe2\x82\xac\r\n\r\n", 1)
    async with RawUpstream([Behaviour(raw)]) as up:
        async with record_scenario(tmp_path / "rec", up.url) as rec:
            async with httpx.AsyncClient() as http:
                got = await http.post(rec.url + CHAT, json=ASK)
    assert got.status_code == 200 and got.headers.raw.count((b"x-note", b"5 \xe2\x82\xac")) == 1
    assert [r.code for r in rec.reports] == [None]


async def test_the_model_list_is_relayed_as_the_upstream_gave_it(
        tmp_path: Path, no_tracebacks: Any) -> None:
    gzipped = json_body({"object": "list", "data": [{"id": "m", "object": "model"}]},
                        gzipped=True)
    async with FakeUpstream([gzipped, json_body({"error": {"message": "no"}}, 404)]) as up:
        async with record_scenario(tmp_path / "rec", up.url) as rec:
            async with httpx.AsyncClient() as http:
                listed = await http.get(rec.url + "/v1/models")
                missing = await http.get(rec.url + "/v1/models/other")
    assert listed.status_code == 200 and listed.json()["data"] == [{"id": "m", "object": "model"}]
    assert "content-encoding" not in listed.headers  # relayed decoded, with its own length
    assert listed.headers["content-length"] == str(len(listed.content))
    assert missing.status_code == 404 and missing.json() == {"error": {"message": "no"}}
    assert rec.reports == []  # the catalog is not a model call
