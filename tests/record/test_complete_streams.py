"""A streamed call is complete once its dialect's end marker reached the client: real SDKs
that leave as soon as they read it (before the upstream's end of body, a few ms later) leave
recorded calls, not throws."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import anyio.to_thread
import openai
import pytest
from google import genai
from google.genai import types

from replay_engine.record import record_scenario
from tests.record.fakeupstream import Answer, FakeUpstream, named_sse, paced, text_answer
from tests.record.recordcheck import assert_valid, logged_calls, no_tracebacks, until

pytestmark = pytest.mark.anyio
__all__ = ["no_tracebacks"]

CALLS = 5
KEY = "sk-test-0123456789abcdef"


def anthropic_answer(text: str) -> Answer:
    return named_sse([
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 0}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 2}}),
        ("message_stop", {"type": "message_stop"})])


def gemini_answer(text: str) -> Answer:
    def event(data: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(data).encode() + b"\r\n\r\n"

    parts = [{"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                              "index": 0}]},
             {"candidates": [{"content": {"role": "model", "parts": [{"text": "."}]},
                              "index": 0, "finishReason": "STOP"}],
              "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 2}}]
    return Answer(200, {"content-type": "text/event-stream"}, b"",
                  [event(p) for p in parts], pace=0.003)


def assert_all_recorded(target: Path, reports: list[Any]) -> None:
    assert [r.code for r in reports] == [None] * CALLS, [r.message for r in reports]
    assert [c.code for c in logged_calls(target)] == [None] * CALLS
    assert not (target / "replay.override.json").exists()  # no throw decided
    assert_valid(target)


def _sync_openai_calls(base_url: str) -> None:
    """The sync client: it closes the connection as soon as it reads ``[DONE]``."""
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        for n in range(CALLS):
            stream = client.chat.completions.create(
                model="m", stream=True, messages=[{"role": "user", "content": f"q{n}"}])
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            assert text == f"answer {n} more"


async def test_openai_sdk_leaving_at_done_leaves_whole_calls(
        tmp_path: Path, no_tracebacks: Any) -> None:
    target = tmp_path / "rec"
    answers = [paced(text_answer(f"answer {n}", " more")) for n in range(CALLS)]
    async with FakeUpstream(answers) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            await anyio.to_thread.run_sync(_sync_openai_calls, rec.base_url)
    assert_all_recorded(target, rec.reports)


async def test_async_openai_sdk_draining_briefly_after_done_leaves_whole_calls(
        tmp_path: Path, no_tracebacks: Any) -> None:
    """The async client drains the body for a moment after ``[DONE]``: an end of body that
    comes later than that (a slow proxy) finds it gone."""
    target = tmp_path / "rec"
    answers = [paced(text_answer(f"answer {n}", " more"), tail=0.4) for n in range(CALLS)]
    async with FakeUpstream(answers) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            client = openai.AsyncOpenAI(base_url=rec.base_url, api_key=KEY, max_retries=0)
            for n in range(CALLS):
                stream = await client.chat.completions.create(
                    model="m", stream=True, messages=[{"role": "user", "content": f"q{n}"}])
                text = "".join([c.choices[0].delta.content or "" async for c in stream
                                if c.choices])
                assert text == f"answer {n} more"
            await client.close()
    assert_all_recorded(target, rec.reports)


async def test_anthropic_sdk_leaving_at_message_stop_leaves_whole_calls(
        tmp_path: Path, no_tracebacks: Any) -> None:
    target = tmp_path / "rec"
    answers = [paced(anthropic_answer(f"answer {n}")) for n in range(CALLS)]
    async with FakeUpstream(answers) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            async with anthropic.AsyncAnthropic(base_url=rec.url, api_key=KEY,
                                                max_retries=0) as client:
                for n in range(CALLS):
                    async with client.messages.stream(
                            model="claude", max_tokens=10,
                            messages=[{"role": "user", "content": f"q{n}"}]) as stream:
                        assert await stream.get_final_text() == f"answer {n}"
    assert_all_recorded(target, rec.reports)


async def test_google_genai_leaving_at_the_finish_reason_leaves_whole_calls(
        tmp_path: Path, no_tracebacks: Any) -> None:
    target = tmp_path / "rec"
    answers = [gemini_answer(f"answer {n}") for n in range(CALLS)]
    async with FakeUpstream(answers) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            client = genai.Client(api_key="gemini-key-0123456789",
                                  http_options=types.HttpOptions(base_url=rec.url))
            for n in range(CALLS):
                stream = await client.aio.models.generate_content_stream(
                    model="gemini-2.0-flash", contents=f"q{n}")
                text = "".join([r.text or "" async for r in stream])
                assert text == f"answer {n}."
    assert_all_recorded(target, rec.reports)


async def test_a_client_leaving_before_the_end_marker_still_aborts_the_call(
        tmp_path: Path, no_tracebacks: Any) -> None:
    target = tmp_path / "rec"
    async with FakeUpstream([paced(text_answer("one", "two", "three"), 0.05)]) as upstream:
        async with record_scenario(target, upstream.url) as rec:
            client = openai.AsyncOpenAI(base_url=rec.base_url, api_key=KEY, max_retries=0)
            stream = await client.chat.completions.create(
                model="m", stream=True, messages=[{"role": "user", "content": "q"}])
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content == "one":
                    break  # leaves mid-answer
            await stream.close()
            await until(lambda: bool(rec.reports))
            await client.close()
    assert [r.code for r in rec.reports] == ["ABORTED"]
    assert [c.code for c in logged_calls(target)] == ["ABORTED"]
    assert_valid(target)
