"""Usage counters that are no token count (``1e999``, NaN, negative) are recorded as absent
usage, never as an invented 0, and the recording warns, naming the call."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from replay_engine.record import record_scenario
from replay_engine.scenario.loading import load_scenario
from tests.record.fakeupstream import Answer, FakeUpstream, chunk, named_sse, sse
from tests.record.recordcheck import assert_valid, no_tracebacks, post

pytestmark = pytest.mark.anyio
__all__ = ["no_tracebacks"]

TEXT = chunk({"content": "hi"})
CHAT_INF = sse([TEXT, '{"choices":[],"usage":{"prompt_tokens":1e999,"completion_tokens":2}}',
                chunk({}, "stop")])
CHAT_NAN = Answer(200, {"content-type": "application/json"}, (
    b'{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",'
    b'"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,'
    b'"completion_tokens":NaN}}'))
MESSAGES = named_sse([
    ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0,
                             "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                             "delta": {"type": "text_delta", "text": "hi"}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                       "usage": {"output_tokens": -4}}),
    ("message_stop", {"type": "message_stop"})])
RESPONSES = named_sse([
    ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                    "item": {"type": "message"}}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "output_index": 0,
                                    "delta": "hi"}),
    ("response.completed", {"type": "response.completed", "response": {
        "status": "completed", "usage": {"input_tokens": 2.5, "output_tokens": 1}}})])
GEMINI = Answer(200, {"content-type": "text/event-stream"}, (
    b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"index":0,'
    b'"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1e999}}\r\n\r\n'))

CASES = [
    ("chat-stream", "/v1/chat/completions", True, CHAT_INF, "prompt_tokens is Infinity"),
    ("chat-completion", "/v1/chat/completions", False, CHAT_NAN, "completion_tokens is NaN"),
    ("messages", "/v1/messages", True, MESSAGES, "output_tokens is -4"),
    ("responses", "/v1/responses", True, RESPONSES, "input_tokens is 2.5"),
    ("gemini", "/v1beta/models/g:streamGenerateContent", True, GEMINI,
     "promptTokenCount is Infinity"),
]


@pytest.mark.parametrize(("path", "stream", "answer", "named"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
async def test_impossible_usage_is_recorded_absent_with_a_warning(
        tmp_path: Path, no_tracebacks: Any, path: str, stream: bool, answer: Answer,
        named: str) -> None:
    target = tmp_path / "rec"
    body = {"model": "m", "stream": stream, "max_tokens": 5,
            "messages": [{"role": "user", "content": "q"}],
            "contents": [{"role": "user", "parts": [{"text": "q"}]}]}
    async with FakeUpstream([answer]) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            got = await post(rec.url + path, body)
    assert got.status == 200
    (report,) = rec.reports
    assert report.code is None and report.finish == "stop"
    (note,) = report.notes
    assert f"the upstream's usage {named}, not a token count" in note
    assert_valid(target)
    (entry,) = load_scenario(target).scripts[0].entries
    chunks = entry.to_json()["chunks"]
    assert [c["type"] for c in chunks if c["type"] in ("usage", "finish")] == ["finish"]


async def test_the_record_command_warns_naming_the_call(tmp_path: Path) -> None:
    async with FakeUpstream([CHAT_INF]) as upstream:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "replay_engine.cli", "record", str(tmp_path / "rec"),
            "--upstream", upstream.url, "--port", "0", stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        try:
            assert proc.stdout is not None
            url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
            ask = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "q"}]}
            assert (await post(url + "/v1/chat/completions", json.dumps(ask).encode())
                    ).status == 200
            proc.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert proc.returncode == 0
    assert ("dsh-replay: warning: session.jsonl call #0 (model call 1/1): the upstream's usage "
            "prompt_tokens is Infinity, not a token count; the call's usage is recorded as "
            "absent") in err.decode()
