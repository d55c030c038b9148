"""The recorded context of a call and its one-line diff against a live request."""

from __future__ import annotations

from replay_engine import (
    ContextItem,
    context_range,
    diff_context,
    diff_line,
    live_new_messages,
    load_scenario,
    recorded_context,
)
from tests.conftest import SAMPLES


def test_each_call_and_the_slot_after_the_last_have_their_recorded_messages() -> None:
    script = load_scenario(SAMPLES / "basic-chat").scripts[0]
    assert recorded_context(script, 0) == [
        ContextItem("user", "What files are in the workspace? Then say hello.")]
    assert recorded_context(script, 1) == [ContextItem("tool", "README.md\nsrc\n", "call_ls_1")]
    first, last = context_range(script, 2) or (0, 0)
    assert first == 21 and last > 21  # after the last call's events: only turn/end remains
    assert recorded_context(script, 2) == []


def test_sidecar_entries_have_no_recorded_context() -> None:
    scripts = load_scenario(SAMPLES / "hang-ready-file").scripts
    assert recorded_context(scripts[0], 0) is None


def test_the_diff_line_names_the_first_difference() -> None:
    recorded = [ContextItem("tool", "README.md\nsrc\n")]
    same = live_new_messages([{"role": "assistant", "content": "x"},
                              {"role": "tool", "content": "README.md src"}])
    assert diff_line(diff_context(same, recorded)) is None  # whitespace does not count
    changed = [ContextItem("tool", "README.md\nsetup.py")]
    assert diff_line(diff_context(changed, recorded)) == \
        'live tool "README.md setup.py" ≠ recorded tool "README.md src"'
    extra = [*same, ContextItem("user", "And now?")]
    assert diff_line(diff_context(extra, recorded)) == \
        'live user "And now?", which the recording does not have here'
    assert diff_line(diff_context([], recorded)) == \
        'recorded tool "README.md src", missing from the live request'
    long = [ContextItem("user", "word " * 40)]
    line = diff_line(diff_context(long, []), width=20)
    assert line == 'live user "word word word word…", which the recording does not have here'


def test_a_messages_request_maps_onto_user_and_tool_messages() -> None:
    corpus = {"system": "You are terse.", "messages": [
        {"role": "user", "content": "What files are in the workspace? Then say hello."},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "README.md\nsrc\n"},
            {"type": "tool_result", "tool_use_id": "t2",
             "content": [{"type": "text", "text": "two"}]},
            {"type": "text", "text": "and then?"}]},
    ]}
    assert live_new_messages(corpus) == [ContextItem("tool", "README.md\nsrc\n", "t1"),
                                         ContextItem("tool", "two", "t2"),
                                         ContextItem("user", "and then?")]
    # The first call: everything after the (absent) last assistant turn; system is not a message.
    first = {"system": "s", "messages": corpus["messages"][:1]}
    assert live_new_messages(first) == [
        ContextItem("user", "What files are in the workspace? Then say hello.")]
    # Compared with the recording like a chat request is.
    script = load_scenario(SAMPLES / "basic-chat").scripts[0]
    recorded = recorded_context(script, 1) or []
    one_result = [*corpus["messages"][:2], {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "README.md\nsrc\n"}]}]
    rows = diff_context(live_new_messages({"system": None, "messages": one_result}), recorded)
    assert [mark for mark, _, _ in rows] == ["="]
    rows = diff_context(live_new_messages(corpus), recorded)
    assert [mark for mark, _, _ in rows] == ["=", "+", "+"]


def test_a_responses_request_maps_onto_user_and_tool_messages() -> None:
    corpus = {"instructions": "Be terse.", "input": [
        {"type": "message", "role": "developer", "content": "rules"},
        {"role": "user", "content": [{"type": "input_text", "text": "list files"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "README.md\nsrc\n"},
        {"type": "message", "role": "user", "content": "thanks"},
    ]}
    assert live_new_messages(corpus) == [ContextItem("tool", "README.md\nsrc\n", "c1"),
                                         ContextItem("user", "thanks")]
    first = {"instructions": None, "input": corpus["input"][:2]}
    assert live_new_messages(first) == [ContextItem("user", "list files")]
    # A bare string input is one user message; an assistant message ends the model's turn too.
    assert live_new_messages({"instructions": None, "input": "hi"}) == [ContextItem("user", "hi")]
    after_text = {"instructions": None, "input": [
        {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"}]}
    assert live_new_messages(after_text) == [ContextItem("user", "c")]


def test_a_gemini_request_maps_onto_user_and_tool_messages() -> None:
    corpus = {"systemInstruction": {"parts": [{"text": "Be terse."}]}, "contents": [
        {"role": "user", "parts": [{"text": "What files are in the workspace?"}]},
        {"role": "model", "parts": [{"text": "Looking.", "thought": True},
                                    {"functionCall": {"id": "t1", "name": "bash", "args": {}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"id": "t1", "name": "bash",
                                  "response": {"output": "README.md\nsrc\n"}}},
            {"functionResponse": {"id": "t2", "name": "cat", "response": {"a": 1, "b": "x"}}},
            {"text": "and then?"}]},
    ]}
    assert live_new_messages(corpus) == [
        ContextItem("tool", "README.md\nsrc\n", "t1"), ContextItem("tool", '{"a": 1, "b": "x"}', "t2"),
        ContextItem("user", "and then?")]
    first = {"systemInstruction": None, "contents": corpus["contents"][:1]}
    assert live_new_messages(first) == [ContextItem("user", "What files are in the workspace?")]
    # Compared with the recording like a chat request is.
    script = load_scenario(SAMPLES / "basic-chat").scripts[0]
    recorded = recorded_context(script, 1) or []
    one_result = [*corpus["contents"][:2], {"role": "user", "parts": corpus["contents"][2]["parts"][:1]}]
    rows = diff_context(live_new_messages({"systemInstruction": None, "contents": one_result}),
                        recorded)
    assert [mark for mark, _, _ in rows] == ["="]


def test_unknown_request_shapes_map_to_nothing() -> None:
    assert live_new_messages({"prompt": "x"}) == []
    assert live_new_messages({"messages": "not a list"}) == []
    assert live_new_messages({"input": 3}) == []
    assert live_new_messages(None) == []
