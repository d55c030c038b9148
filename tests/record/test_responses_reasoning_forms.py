"""The recorder reads a Responses reasoning item in both forms the wire can carry it: the
``summary_text`` summary OpenAI's reasoning models stream (``reasoning_summary_*`` events) and
the ``reasoning_text`` content of open-weight models; both record the same reasoning block, and
what the replay serves in either form records back to the call it served."""

from __future__ import annotations

import json
from typing import Any

import pytest

from replay_engine.record.dialect import SseEvent, SseParser, rebuild_events
from replay_engine.record.responses import OPENAI_RESPONSES
from replay_engine.wire.dialect import RESPONSES_REASONING, ResponsesReasoning
from replay_engine.wire.responses import ResponseAssembler, ResponsesStreamEncoder
from tests.compat.recorded import SIGNED


def _event(data: dict[str, Any]) -> SseEvent:
    return SseEvent(str(data["type"]), json.dumps(data))


ITEM = {"id": "rs_1", "type": "reasoning"}
USAGE = {"input_tokens": 9, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 0},
         "output_tokens_details": {"reasoning_tokens": 3}, "total_tokens": 13}
SUMMARY = [  # what an OpenAI reasoning model streams (summary_index 0, one part)
    {"type": "response.output_item.added", "output_index": 0, "item": {**ITEM, "summary": []}},
    {"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0,
     "summary_index": 0, "part": {"type": "summary_text", "text": ""}},
    {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0,
     "summary_index": 0, "delta": "Check "},
    {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0,
     "summary_index": 0, "delta": "the file."},
    {"type": "response.reasoning_summary_text.done", "item_id": "rs_1", "output_index": 0,
     "summary_index": 0, "text": "Check the file."},
    {"type": "response.reasoning_summary_part.done", "item_id": "rs_1", "output_index": 0,
     "summary_index": 0, "part": {"type": "summary_text", "text": "Check the file."}},
    {"type": "response.output_item.done", "output_index": 0,
     "item": {**ITEM, "summary": [{"type": "summary_text", "text": "Check the file."}]}},
    {"type": "response.completed", "response": {"status": "completed", "usage": USAGE}},
]
CONTENT = [  # the same reasoning as reasoning_text content
    {"type": "response.output_item.added", "output_index": 0,
     "item": {**ITEM, "summary": [], "content": []}},
    {"type": "response.reasoning_text.delta", "item_id": "rs_1", "output_index": 0,
     "content_index": 0, "delta": "Check "},
    {"type": "response.reasoning_text.delta", "item_id": "rs_1", "output_index": 0,
     "content_index": 0, "delta": "the file."},
    {"type": "response.reasoning_text.done", "item_id": "rs_1", "output_index": 0,
     "content_index": 0, "text": "Check the file."},
    {"type": "response.output_item.done", "output_index": 0, "item": {
        **ITEM, "summary": [], "content": [{"type": "reasoning_text", "text": "Check the file."}]}},
    {"type": "response.completed", "response": {"status": "completed", "usage": USAGE}},
]
RECORDED = [
    {"type": "block-start", "index": 0, "blockType": "reasoning"},
    {"type": "reasoning-delta", "index": 0, "text": "Check "},
    {"type": "reasoning-delta", "index": 0, "text": "the file."},
    {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "Check the file."}},
    {"type": "usage", "usage": {"inputTokens": 9, "outputTokens": 4, "cacheReadTokens": 0,
                                "reasoningTokens": 3}},
    {"type": "finish", "reason": {"kind": "stop"}},
]


@pytest.mark.parametrize("events", [SUMMARY, CONTENT], ids=["summary", "content"])
def test_both_streamed_forms_record_the_same_reasoning_block(events: list[dict[str, Any]]) -> None:
    got = rebuild_events(OPENAI_RESPONSES.rebuilder(), map(_event, events))
    assert got == RECORDED


@pytest.mark.parametrize("item", [
    {**ITEM, "summary": [{"type": "summary_text", "text": "Check the file."}]},
    {**ITEM, "summary": [], "content": [{"type": "reasoning_text", "text": "Check the file."}]},
], ids=["summary", "content"])
def test_both_non_streamed_forms_record_the_reasoning(item: dict[str, Any]) -> None:
    chunks = OPENAI_RESPONSES.completion_chunks({"object": "response", "status": "completed",
                                                 "output": [item], "usage": USAGE})
    assert chunks[0] == {"type": "block-start", "index": 0, "blockType": "reasoning"}
    assert chunks[2] == RECORDED[3]


@pytest.mark.parametrize("form", RESPONSES_REASONING)
def test_what_the_replay_serves_in_either_form_records_back(form: ResponsesReasoning) -> None:
    chunks = SIGNED["chunks"]
    encoder = ResponsesStreamEncoder("m", chunks, reasoning=form)
    raw = encoder.opening() + b"".join(encoder.encode(c) or b"" for c in chunks) + encoder.close()
    parser, rebuilder = SseParser(), OPENAI_RESPONSES.rebuilder()
    got: list[dict[str, Any]] = []
    for event in parser.feed(raw):
        got += rebuilder.feed(event)
    got += rebuilder.end()
    assembler = ResponseAssembler("m", reasoning=form)
    for chunk in chunks:
        assembler.add(chunk)
    whole = OPENAI_RESPONSES.completion_chunks(assembler.result())
    for recorded in (got, whole):
        reasoning = [c for c in recorded if c["type"] == "block-end"][0]["block"]
        assert reasoning == {"type": "reasoning", "text": "Think twice."}
