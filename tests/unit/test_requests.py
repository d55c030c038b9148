"""Each dialect's request reading: every tool-result form its wire accepts is a tool result
with its call id, user text is user text, the model's own turns end what is new; the
recorder's reading of a body is the engine's reading of its corpus."""

from __future__ import annotations

from typing import Any

import pytest

from replay_engine.context import ContextItem
from replay_engine.record.dialects import DIALECTS
from replay_engine.requests import READERS, conversation, live_new_messages
from replay_engine.wire.anthropic import MessagesDialect
from replay_engine.wire.gemini import GeminiDialect
from replay_engine.wire.openai_chat import ChatDialect
from replay_engine.wire.responses import ResponsesDialect

RESULTS = [ContextItem("tool", "a", "c1"), ContextItem("tool", "b", "c2"),
           ContextItem("user", "and then?")]
"""What every body below adds after the model's turn."""

BODIES: dict[str, dict[str, Any]] = {
    "openai": {"messages": [
        {"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "c1", "content": "a"},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "b"}]},
        {"role": "user", "content": "and then?"}]},
    "anthropic": {"system": "be brief", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "x",
                                           "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "a"},
            {"type": "tool_result", "tool_use_id": "c2", "content": [{"type": "text",
                                                                      "text": "b"}]},
            {"type": "text", "text": "and then?"}]}]},
    "responses": {"instructions": "be brief", "input": [
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "summary": []},
        {"type": "custom_tool_call", "call_id": "c2", "name": "y", "input": "z"},
        {"type": "function_call_output", "call_id": "c1", "output": "a"},
        {"type": "custom_tool_call_output", "call_id": "c2",
         "output": [{"type": "input_text", "text": "b"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text",
                                                           "text": "and then?"}]}]},
    "gemini": {"systemInstruction": {"parts": [{"text": "be brief"}]}, "contents": [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "x", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "x",
                                                         "response": {"output": "a"}}}]},
        {"role": "function", "parts": [{"functionResponse": {"id": "c2", "name": "y",
                                                             "response": {"result": "b"}}}]},
        {"parts": [{"text": "and then?"}]}]},
}
SERVERS = {"openai": ChatDialect(), "anthropic": MessagesDialect(),
           "responses": ResponsesDialect(), "gemini": GeminiDialect()}


@pytest.mark.parametrize("dialect", list(BODIES))
def test_every_tool_result_form_is_read_with_its_call_id(dialect: str) -> None:
    corpus = SERVERS[dialect].corpus(BODIES[dialect])
    assert live_new_messages(corpus, dialect) == RESULTS
    assert live_new_messages(corpus) == RESULTS  # a caller naming no wire: by its shape


@pytest.mark.parametrize("recorder", DIALECTS, ids=lambda d: d.name)
def test_the_recorder_reads_a_body_as_the_engine_reads_its_corpus(recorder: Any) -> None:
    body = BODIES[recorder.name]
    recorded = [(m.role, m.text, m.call_id) for m in recorder.messages(body)]
    served = conversation(SERVERS[recorder.name].corpus(body), recorder.name)
    assert recorded == [(m.role, m.text, m.call_id) for m in served]
    assert [m for m in recorded if m[0] in ("user", "tool")][-3:] == [
        (i.role, i.text, i.call_id) for i in RESULTS]


def test_the_model_turn_ends_what_is_new_on_every_wire() -> None:
    for dialect, body in BODIES.items():
        corpus = READERS[dialect].corpus(body)
        roles = [m.role for m in conversation(corpus, dialect)]
        assert roles[0] == "system" and "assistant" in roles, dialect
        assert ContextItem("user", "hi") not in live_new_messages(corpus, dialect), dialect


def test_a_gemini_result_without_an_id_names_none() -> None:
    corpus = {"contents": [{"role": "function", "parts": [
        {"functionResponse": {"name": "ls", "response": {"files": ["a"]}}}]}]}
    assert live_new_messages(corpus, "gemini") == [ContextItem("tool", '{"files": ["a"]}')]


def test_what_no_dialect_reads_adds_nothing() -> None:
    assert live_new_messages({"prompt": "x"}) == []
    assert live_new_messages(None) == []
    assert live_new_messages({"input": 3}, "responses") == []
    assert live_new_messages("text", "unknown-wire") == []
