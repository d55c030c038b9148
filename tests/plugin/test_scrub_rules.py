"""The scrub rules and hooks on their own (``replay_engine.record.scrub``), and where a log ends
for the calls ``new_episodes`` appends to it (``replay_engine.record.episodes.log_tail``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from replay_engine.errors import ConfigError
from replay_engine.record.dialect import RequestMessage
from replay_engine.record.episodes import LogTail, log_tail
from replay_engine.record.scrub import Scrubber, TextRule
from tests.conftest import SAMPLES

EMAIL = re.compile(r"[\w.]+@[\w.]+\w")


def rules(*items: Any) -> Scrubber:
    return Scrubber.from_config({"filter_text": list(items)}, "test")


def test_the_same_value_is_the_same_token() -> None:
    scrub = rules({"pattern": EMAIL.pattern, "name": "email"})
    text = scrub.text("a@b.io, c@d.io and a@b.io")
    tokens = re.findall(r"\{\{scrubbed:email-[0-9a-f]{8}\}\}", text)
    assert len(tokens) == 3 and tokens[0] == tokens[2] != tokens[1]
    assert scrub.text("write to a@b.io") == f"write to {tokens[0]}"  # stable across texts


def test_fixed_replacements_and_earlier_tokens_are_kept() -> None:
    scrub = rules({"pattern": r"\bAlice\b", "replace": "PERSON"}, EMAIL.pattern, r"[a-z]+")
    # the last rule matches words, but never inside the token the email became
    text = scrub.text("Alice: alice@example.com")
    assert text.startswith("PERSON: {{scrubbed:text-")
    assert re.fullmatch(r"PERSON: \{\{scrubbed:text-[0-9a-f]{8}\}\}", text)
    assert scrub.text(text) == text  # scrubbing is idempotent (live requests carry tokens)


def test_chunks_are_scrubbed_across_deltas_and_leave_ids_alone() -> None:
    scrub = rules(EMAIL.pattern)
    chunks = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "mail al"},
        {"type": "text-delta", "index": 0, "text": "ice@example.com now"},
        {"type": "block-end", "index": 0, "block": {"type": "text",
                                                   "text": "mail alice@example.com now"}},
        {"type": "tool-call-delta", "index": 1, "id": "bob@x.io",
         "argumentsDelta": '{"to": "bob@x.io"}'},
    ]
    out = scrub.chunks(chunks)
    token = scrub.text("alice@example.com")
    assert [c.get("text") for c in out[1:3]] == [f"mail {token}", " now"]
    assert out[3]["block"]["text"] == f"mail {token} now"  # the same as the joined deltas
    assert out[4]["id"] == "bob@x.io" and "bob@x.io" not in out[4]["argumentsDelta"]
    assert chunks[1]["text"] == "mail al"  # the given chunks are not changed


def test_hooks_get_copies_and_apply_to_live_requests_too() -> None:
    def rename(body: dict[str, Any]) -> None:
        for message in body["messages"]:
            message["content"] = message["content"].replace("Alice", "PERSON")

    scrub = Scrubber.from_config({"before_record_request": rename}, "test")
    body = {"messages": [{"role": "user", "content": "I am Alice"}]}

    def read(value: dict[str, Any]) -> list[RequestMessage]:
        return [RequestMessage(m["role"], m["content"], None, m) for m in value["messages"]]

    assert [m.text for m in scrub.messages(read, body)] == ["I am PERSON"]
    assert body["messages"][0]["content"] == "I am Alice"
    assert scrub.live(body["messages"]) == [{"role": "user", "content": "I am PERSON"}]
    messages = {"system": "s", "messages": [{"role": "user", "content": "Alice"}]}
    assert scrub.live(messages)["messages"][0]["content"] == "PERSON"  # Messages API corpus


@pytest.mark.parametrize(("config", "message"), [
    ({"filter": []}, "test: unknown key(s) filter; it takes before_record_request"),
    ({"filter_text": ["(unclosed"]}, "test: filter_text[0]: not a regular expression"),
    ({"filter_text": [{"pattern": "x", "name": "a b"}]}, "name 'a b' must be letters"),
    ({"before_record_chunk": 3}, "test: before_record_chunk must be callable, got int"),
])
def test_bad_configurations_are_named(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Scrubber.from_config(config, "test")
    assert caught.value.code == "SCRUB" and message in caught.value.message


def test_a_failing_hook_is_a_typed_error() -> None:
    def broken(chunk: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("block")

    scrub = Scrubber([TextRule(EMAIL)], before_record_chunk=broken, source="conftest.py")
    with pytest.raises(ConfigError) as caught:
        scrub.chunks([{"type": "usage", "usage": {}}])
    assert caught.value.message == "conftest.py: before_record_chunk raised KeyError: 'block'"


def test_a_log_tail_counts_packed_rows_and_projected_events(tmp_path: Path) -> None:
    log = tmp_path / "session.jsonl"
    lines = [
        {"type": "session", "id": "x"},
        {"type": "turn/start", "seq": 0, "data": {"turn": 1}},
        {"type": "step/start", "seq": 1, "data": {"turn": 1, "step": 1}},
        {"type": "text-chunks", "seq0": 2, "time0": 0,
         "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 1], "texts": ["a", "b", "c"]}},
        {"type": "step/start", "data": {"turn": 1, "step": 2}},  # projected: no seq (5)
        {"type": "step/end", "seq": 6, "data": {"turn": 1, "step": 2}},
    ]
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    assert log_tail(log) == LogTail(next_seq=7, turn=1, step=2)


def test_a_log_tail_without_step_events_reads_the_chunks_numbers(tmp_path: Path) -> None:
    # A v0 log (sample_scenarios/basic-chat) numbers its calls only in its chunks' data: the
    # call appended after turn 1 step 2 is step 3, not a second step 1.
    log = tmp_path / "session.jsonl"
    lines = [
        {"type": "session", "id": "x"},
        {"type": "turn/start", "seq": 0, "data": {"turn": 1}},
        {"type": "user/message", "seq": 1, "data": {"message": {"role": "user"}}},
        {"type": "assistant/chunk", "seq": 2, "data": {"turn": 1, "step": 1, "chunk": {}}},
        {"type": "tool/result", "seq": 3, "data": {"toolCallId": "c"}},
        {"type": "assistant/chunk", "seq": 4, "data": {"turn": 1, "step": 2, "chunk": {}}},
        {"type": "assistant/chunk", "seq": 5, "data": {"turn": True, "step": 9, "chunk": {}}},
        {"type": "turn/end", "seq": 6, "data": {"turn": 1}},
    ]
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert log_tail(log) == LogTail(next_seq=7, turn=1, step=2)
    assert log_tail(SAMPLES / "basic-chat" / "session.jsonl").step == 2
