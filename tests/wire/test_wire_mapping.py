"""The chunk -> chat-completion mapping of docs/format.md#wire-openai-chat, table by table (no server
needed)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from replay_engine.errors import ScriptedFailure
from replay_engine.statuscodes import code_for_status
from replay_engine.wire.openai_chat import (
    DONE_EVENT,
    ChatStreamEncoder,
    CompletionAssembler,
    status_for_code,
    usage_to_wire,
)


def _events(chunks: list[dict[str, Any]]) -> list[Any]:
    encoder = ChatStreamEncoder("m", "chatcmpl-1", 7)
    raw = b"".join(e for e in map(encoder.encode, chunks) if e) + encoder.close()
    assert raw.endswith(DONE_EVENT)
    out = []
    for event in raw.removesuffix(DONE_EVENT).split(b"\n\n"):
        if event:
            assert event.startswith(b"data: ")
            out.append(json.loads(event[6:]))
    return out


def _deltas(chunks: list[dict[str, Any]]) -> list[Any]:
    return [e["choices"][0]["delta"] if e["choices"] else {"usage": e["usage"]}
            for e in _events(chunks)]


@pytest.mark.parametrize(("code", "status"), [
    ("AUTH", 401), ("RATE_LIMIT", 429), ("QUOTA_EXCEEDED", 429), ("INVALID_REQUEST", 400),
    ("CONTEXT_WINDOW_EXCEEDED", 400), ("SERVER", 500), ("HTTP_503", 503), ("HTTP_418", 418),
    ("HTTP_200", 500), ("HTTP_x", 500), ("PROVIDER", 500), ("SCRIPT_EXHAUSTED", 409),
    ("UNRECORDED_SESSION", 409), ("HTTP_\u00b2", 500), ("HTTP_", 500), ("HTTP_600", 500),
])
def test_status_for_code(code: str, status: int) -> None:
    assert status_for_code(code) == status


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 429, 500, 502, 503, 529])
def test_a_recorded_status_is_served_with_the_same_status(status: int) -> None:
    """The recorder's status -> code and the wire's code -> status are one table."""
    assert status_for_code(code_for_status(status)) == status


def test_every_event_is_a_chat_completion_chunk_echoing_the_model() -> None:
    events = _events([{"type": "text-delta", "index": 0, "text": "hé \"x\"\n"},
                      {"type": "finish", "reason": {"kind": "stop"}}])
    assert events == [
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7, "model": "m",
         "choices": [{"index": 0, "delta": {"content": "hé \"x\"\n"}, "finish_reason": None}]},
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7, "model": "m",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]


def test_blocks_recorded_only_as_block_end_go_out_whole_at_their_position() -> None:
    tool = {"type": "tool-call", "id": "c1", "name": "ls", "arguments": "{}"}
    deltas = _deltas([
        {"type": "block-start", "index": 0, "blockType": "reasoning"},
        {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "think"}},
        {"type": "block-start", "index": 1, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 1, "id": "c0", "name": "cat", "argumentsDelta": "{"},
        {"type": "tool-call-delta", "index": 1, "id": "c0", "argumentsDelta": "}"},
        {"type": "block-end", "index": 1, "block": {**tool, "id": "c0", "name": "cat"}},
        {"type": "block-start", "index": 2, "blockType": "tool-call"},
        {"type": "block-end", "index": 2, "block": tool},
        {"type": "block-start", "index": 3, "blockType": "text"},
        {"type": "block-end", "index": 3, "block": {"type": "text", "text": ""}},
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ])
    assert deltas == [
        {"reasoning_content": "think"},
        {"tool_calls": [{"index": 0, "id": "c0", "type": "function",
                         "function": {"name": "cat", "arguments": "{"}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]},
        {"tool_calls": [{"index": 1, "id": "c1", "type": "function",
                         "function": {"name": "ls", "arguments": "{}"}}]},
        {},  # an empty text block adds nothing; then the finish
    ]


def test_usage_rides_on_the_finish_chunk_or_alone_when_out_of_place() -> None:
    usage = {"inputTokens": 10, "outputTokens": 4, "cacheReadTokens": 6, "reasoningTokens": 2}
    on_finish = _events([{"type": "usage", "usage": usage},
                         {"type": "finish", "reason": {"kind": "max-tokens"}}])
    assert on_finish[-1]["choices"][0]["finish_reason"] == "length"
    assert on_finish[-1]["usage"] == {
        "prompt_tokens": 16, "completion_tokens": 4, "total_tokens": 20,
        "prompt_cache_miss_tokens": 10, "prompt_cache_hit_tokens": 6,
        "prompt_tokens_details": {"cached_tokens": 6},
        "completion_tokens_details": {"reasoning_tokens": 2}}
    after = _events([{"type": "finish", "reason": {"kind": "stop"}},
                     {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}}])
    assert after[1]["choices"] == [] and after[1]["usage"]["total_tokens"] == 3
    no_finish = _events([{"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}}])
    assert no_finish == [{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7,
                          "model": "m", "choices": [],
                          "usage": usage_to_wire({"inputTokens": 1, "outputTokens": 2})}]
    # Counters the recording lacks stay off the wire.
    assert set(usage_to_wire({"inputTokens": 1, "outputTokens": 2})) == {
        "prompt_tokens", "completion_tokens", "total_tokens", "prompt_cache_miss_tokens"}


ERROR_FINISH = [{"type": "text-delta", "index": 0, "text": "par"},
                {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}},
                {"type": "finish", "reason": {"kind": "error", "failure": {
                    "code": "CONTEXT_WINDOW_EXCEEDED", "message": "too long"}}}]


def test_an_error_finish_ends_the_stream_like_a_throw_after_its_prefix() -> None:
    encoder = ChatStreamEncoder("m", "chatcmpl-1", 7)
    raw = b"".join(e for e in map(encoder.encode, ERROR_FINISH) if e) + encoder.close()
    events = [json.loads(e[6:]) for e in raw.split(b"\n\n") if e]
    assert DONE_EVENT not in raw
    assert events[0]["choices"][0]["delta"] == {"content": "par"}
    assert events[1:] == [{"error": {"message": "too long", "code": "CONTEXT_WINDOW_EXCEEDED"}}]
    assert encoder.encode({"type": "usage", "usage": {"inputTokens": 1}}) is None
    assembler = CompletionAssembler()
    for chunk in ERROR_FINISH:
        assembler.add(chunk)
    with pytest.raises(ScriptedFailure) as failed:
        assembler.result("m")
    assert (failed.value.code, failed.value.message) == ("CONTEXT_WINDOW_EXCEEDED", "too long")


def test_the_reason_form_maps_an_error_finish_to_its_code_in_lower_case() -> None:
    reason = {"kind": "error", "failure": {"code": "CONTEXT_WINDOW_EXCEEDED", "message": "x"}}
    encoder = ChatStreamEncoder("m", "chatcmpl-1", 7, error_finish="reason")
    event = encoder.encode({"type": "finish", "reason": reason})
    assert event is not None and encoder.close() == DONE_EVENT
    assert json.loads(event[6:])["choices"][0]["finish_reason"] == "context_window_exceeded"
    assembler = CompletionAssembler(error_finish="reason")
    for chunk in ERROR_FINISH:
        assembler.add(chunk)
    done = assembler.result("m")
    assert done["choices"][0]["finish_reason"] == "context_window_exceeded"
    assert done["choices"][0]["message"]["content"] == "par"


def test_non_stream_assembly() -> None:
    assembler = CompletionAssembler()
    for chunk in [
        {"type": "reasoning-delta", "index": 0, "text": "a"},
        {"type": "reasoning-delta", "index": 0, "text": "b"},
        {"type": "text-delta", "index": 1, "text": "hi"},
        {"type": "tool-call-delta", "index": 2, "id": "t", "name": "f", "argumentsDelta": "{"},
        {"type": "tool-call-delta", "index": 2, "id": "t", "argumentsDelta": "}"},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ]:
        assembler.add(chunk)
    body = assembler.result("m", "chatcmpl-2", 9)
    assert body["choices"] == [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "hi", "reasoning_content": "ab",
        "tool_calls": [{"id": "t", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }}]
    assert body["object"] == "chat.completion" and body["usage"]["total_tokens"] == 2


def test_the_opening_role_chunk_is_first_and_never_repeated() -> None:
    encoder = ChatStreamEncoder("m", "chatcmpl-1", 7)
    opening = json.loads(encoder.opening().removeprefix(b"data: "))
    assert opening == {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7,
                       "model": "m", "choices": [{"index": 0, "delta": {
                           "role": "assistant", "content": ""}, "finish_reason": None}]}
    later = _deltas([{"type": "text-delta", "index": 0, "text": "a"},
                     {"type": "finish", "reason": {"kind": "stop"}}])
    assert all("role" not in d for d in later)


def test_tool_ids_and_names_go_out_once_per_block_and_again_only_when_they_change() -> None:
    deltas = _deltas([
        {"type": "tool-call-delta", "index": 0, "id": "a", "name": "ls", "argumentsDelta": "{"},
        {"type": "tool-call-delta", "index": 0, "id": "a", "name": "ls", "argumentsDelta": "}"},
        {"type": "tool-call-delta", "index": 1, "id": "b", "argumentsDelta": ""},
        {"type": "tool-call-delta", "index": 1, "id": "b", "name": "cat", "argumentsDelta": "{}"},
        {"type": "tool-call-delta", "index": 1, "id": "b2", "name": "cat", "argumentsDelta": ""},
    ])
    assert [d["tool_calls"][0] for d in deltas] == [
        {"index": 0, "id": "a", "type": "function", "function": {"name": "ls", "arguments": "{"}},
        {"index": 0, "function": {"arguments": "}"}},
        {"index": 1, "id": "b", "type": "function", "function": {"arguments": ""}},
        {"index": 1, "function": {"name": "cat", "arguments": "{}"}},
        {"index": 1, "id": "b2", "type": "function", "function": {"arguments": ""}},
    ]


def test_include_usage_sends_usage_alone_after_the_finish_and_null_before() -> None:
    usage = {"inputTokens": 2, "outputTokens": 3}
    encoder = ChatStreamEncoder("m", "chatcmpl-1", 7, include_usage=True)
    chunks = [{"type": "text-delta", "index": 0, "text": "hi"}, {"type": "usage", "usage": usage},
              {"type": "finish", "reason": {"kind": "stop"}}]
    raw = encoder.opening() + b"".join(e for e in map(encoder.encode, chunks) if e) + encoder.close()
    events = [json.loads(e[6:]) for e in raw.removesuffix(DONE_EVENT).split(b"\n\n") if e]
    assert [e["usage"] for e in events[:-1]] == [None, None, None]
    assert events[2]["choices"][0]["finish_reason"] == "stop"
    assert events[-1] == {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7,
                          "model": "m", "choices": [], "usage": usage_to_wire(usage)}
    # Without include_usage the usage rides on the finish chunk and nothing says null.
    plain = _events(chunks)
    assert "usage" not in plain[0] and plain[-1]["usage"] == usage_to_wire(usage)


def test_non_stream_usage_is_there_even_when_the_recording_has_none() -> None:
    assembler = CompletionAssembler()
    assembler.add({"type": "text-delta", "index": 0, "text": "hi"})
    assert assembler.result("m")["usage"] == {"prompt_tokens": 0, "completion_tokens": 0,
                                              "total_tokens": 0, "prompt_cache_miss_tokens": 0}
