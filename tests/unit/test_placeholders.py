"""docs/format.md#edge-cases and #serving-entries: {{fromRequest:PATTERN}} placeholders."""

from __future__ import annotations

from typing import Any

import pytest

from replay_engine import (
    ChunksEntry,
    HangEntry,
    PlaceholderError,
    ReplayEngine,
    ThrowEntry,
    load_scenario,
    resolve_scripted_entry,
)
from replay_engine import events as ev
from replay_engine.engine.placeholders import searched_text, split_placeholder
from tests.conftest import SAMPLES
from tests.unit.enginetools import Recorder, collect, scripts

pytestmark = pytest.mark.anyio


def text(value: str) -> ChunksEntry:
    return ChunksEntry(kind="chunks", chunks=[{"type": "text-delta", "index": 0, "text": value}])


def resolved(value: str, messages: Any) -> str:
    entry = resolve_scripted_entry(text(value), messages)
    assert isinstance(entry, ChunksEntry)
    return str(entry.chunks[0]["text"])


MSGS = [
    {"role": "system", "content": "id abcd and id 1234"},
    {"role": "user", "content": [{"type": "text", "text": "ticket T-1 then T-22"}, {"n": 5}]},
    {"role": "user", "content": "branch fix/beef, later fix/c0de"},
]


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{fromRequest:T-[0-9]+}}", "T-22"),
        ("#{{fromRequest:T-([0-9]+)}}!", "#22!"),
        ("{{fromRequest:fix/([0-9a-f]{4})}}", "c0de"),
        ("{{fromRequest:[0-9a-f]{4}}}", "c0de"),
        ("{{fromRequest:id ([a-z]+)|id ([0-9]+)}}", "id 1234"),
        ("{{fromRequest:(x)?T-1}}", "T-1"),
        ("{{fromRequest:T-(?P<n>1)}}", "1"),
        ("a {{fromRequest:T-[0-9]}} b {{fromRequest:fix/(\\w+),}}", "a T-2 b beef"),
    ],
    ids=["whole-last", "first-group", "brace-quantifier", "brace-run", "unmatched-first-group",
         "optional-group-unmatched", "named-group", "two-in-one-string"],
)
def test_resolution(template: str, expected: str) -> None:
    assert resolved(template, MSGS) == expected


def test_corpus_is_string_leaves_depth_first_joined_by_newline() -> None:
    assert searched_text(MSGS) == "\n".join([
        "system", "id abcd and id 1234", "user", "text", "ticket T-1 then T-22", "user",
        "branch fix/beef, later fix/c0de"])
    assert resolved("{{fromRequest:system\\nid (\\w+)}}", MSGS) == "abcd"
    assert searched_text(None) == ""
    assert searched_text({"a": ["x", {"b": "y"}], "c": "z"}) == "x\ny\nz"


@pytest.mark.parametrize(
    ("template", "pattern", "rest"),
    [
        ("{{fromRequest:[0-9a-f]{4}}}", "[0-9a-f]{4}", ""),
        ("{{fromRequest:a}b}}", "a}b", ""),
        ("{{fromRequest:x}}}}tail", "x}}", "tail"),
        ("{{fromRequest:x}} and }}", "x", " and }}"),
        ("{{fromRequest:}}", "", ""),
    ],
)
def test_placeholder_end(template: str, pattern: str, rest: str) -> None:
    got, end = split_placeholder(template, 0)
    assert (got, template[end:]) == (pattern, rest)


def test_first_brace_close_rule_with_literal_brace() -> None:
    corpus = [{"content": "a}b and a}b"}]
    assert resolved("<{{fromRequest:a}b}}>", corpus) == "<a}b>"


@pytest.mark.parametrize(
    ("template", "fragment"),
    [
        ("{{fromRequest:nothing-like-this}}", "no match for {{fromRequest:nothing-like-this}}"),
        ("{{fromRequest:([unclosed}}", "invalid pattern in {{fromRequest:([unclosed}}"),
        ("{{fromRequest:T-[0-9]+", "unterminated placeholder"),
        ("ok {{fromRequest:x} only one brace", "unterminated placeholder"),
    ],
    ids=["no-match", "invalid-pattern", "unterminated", "single-brace"],
)
def test_errors(template: str, fragment: str) -> None:
    with pytest.raises(PlaceholderError) as caught:
        resolved(template, MSGS)
    assert fragment in caught.value.message
    assert caught.value.code == "PLACEHOLDER"


def test_entry_without_placeholders_is_the_same_object() -> None:
    entries: list[Any] = [
        text("plain"),
        text("almost {{fromRequest but no colon"),
        ThrowEntry(kind="throw", chunks=[], message="m", code="C"),
        HangEntry(kind="hang"),
        HangEntry(kind="hang", readyFile="r"),
        ChunksEntry(kind="chunks", chunks=[{"type": "usage", "usage": {"n": 1}}]),
    ]
    for entry in entries:
        assert resolve_scripted_entry(entry, MSGS) is entry


def test_every_string_of_an_entry_is_resolved_and_original_kept() -> None:
    chunk = {"type": "tool-call-delta", "index": 0, "id": "{{fromRequest:fix/(\\w+),}}",
             "nested": {"list": ["{{fromRequest:T-[0-9]}}", 3]}, "n": 1}
    entry = ThrowEntry(kind="throw", chunks=[chunk], message="failed on {{fromRequest:T-[0-9]+}}",
                       code="E_{{fromRequest:id ([0-9]+)}}")
    out = resolve_scripted_entry(entry, MSGS)
    assert isinstance(out, ThrowEntry)
    assert out.chunks == [{"type": "tool-call-delta", "index": 0, "id": "beef",
                           "nested": {"list": ["T-2", 3]}, "n": 1}]
    assert (out.message, out.code) == ("failed on T-22", "E_1234")
    assert entry.chunks[0]["id"] == "{{fromRequest:fix/(\\w+),}}"
    hang = HangEntry(kind="hang", readyFile="r-{{fromRequest:T-([0-9]+)}}")
    assert resolve_scripted_entry(hang, MSGS) is hang  # a path the request must not choose


async def test_sample_placeholders_resolve_when_served() -> None:
    scenario = load_scenario(SAMPLES / "from-request")
    raw = scenario.to_json()["scripts"][0]["entries"][0]["chunks"][2]["text"]
    assert raw == "{{fromRequest:TICKET-([0-9]+)}}"  # loaded scripts keep them literal
    engine = ReplayEngine(scenario.scripts)
    messages = [{"role": "user", "content": "Open ticket TICKET-4821 and check out branch fix/ab12."}]
    first = await collect(engine, "s", messages)
    said = "".join(c.get("text", "") for c in first if c["type"] == "text-delta")
    assert said == "Looking at ticket 4821 now."
    second = await collect(engine, "s", messages)
    args = "".join(c["argumentsDelta"] for c in second if c["type"] == "tool-call-delta")
    assert args == '{"command":"git checkout fix/ab12"}'


async def test_placeholder_error_fails_the_call_at_bind_time() -> None:
    engine = ReplayEngine(scripts([text("{{fromRequest:absent}}"), text("next")]))
    rec = Recorder(engine)
    with pytest.raises(PlaceholderError) as caught:
        engine.open_call("k", [{"content": "hello"}])
    assert caught.value.message.endswith("[session k, script 0, call 0, run default]")
    assert "no match for {{fromRequest:absent}}" in caught.value.message
    assert rec.kinds() == ["SessionBound", "CallStarted", "CallFailed"]
    failed = rec.events[-1]
    assert isinstance(failed, ev.CallFailed) and failed.code == "PLACEHOLDER"
    assert engine.journal()[0].outcome == "failed"
    assert (await collect(engine, "k"))[0]["text"] == "next"
