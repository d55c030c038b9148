"""docs/format.md#edge-cases: the decided edge cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from replay_engine import (
    DerivationError,
    LogParseError,
    derive_replay_script,
    js_string,
    load_scenario,
    parse_session_log,
)
from replay_engine.models import as_safe_integer, is_number
from replay_engine.scenario.derive import call_key
from replay_engine.scenario.derive_fast import derive_log_bytes
from tests.unit.logtools import call_events, chunk_event, finish, header, log_text, write_scenario

MAX = 2**53 - 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0), (2, 2), (-3, -3), (2.0, 2), (-0.0, 0), (MAX, MAX), (-MAX, -MAX), (float(MAX), MAX),
        (MAX + 1, None), (-MAX - 1, None), (2.5, None), (True, None), (False, None), ("1", None),
        (None, None), (float("nan"), None), (float("inf"), None), ([1], None),
    ],
)
def test_safe_integer(value: Any, expected: int | None) -> None:
    got = as_safe_integer(value)
    assert got == expected
    if expected is not None:
        assert type(got) is int


@pytest.mark.parametrize(("value", "expected"), [(1, True), (1.5, True), (True, False), (False, False),
                                                 ("1", False), (None, False)])
def test_bools_are_not_numbers(value: Any, expected: bool) -> None:
    assert is_number(value) is expected


@pytest.mark.parametrize(
    ("line", "packed_field"),
    [
        ('{"type":"text-chunks","seq0":true,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],'
         '"texts":["a"]}}', "seq0"),
        ('{"type":"text-chunks","seq0":0,"time0":false,"data":{"turn":1,"step":1,"index":0,"dt":[],'
         '"texts":["a"]}}', "time0"),
        ('{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":true,"step":1,"index":0,"dt":[],'
         '"texts":["a"]}}', "data.turn"),
    ],
)
def test_bools_rejected_in_packed_rows(line: str, packed_field: str) -> None:
    with pytest.raises(LogParseError) as caught:
        parse_session_log(log_text(header(), [line]))
    assert packed_field in caught.value.message


def test_float_integers_in_packed_rows() -> None:
    line = ('{"type":"text-chunks","seq0":2.0,"time0":-4.0,"data":{"turn":1,"step":1,"index":0,'
            '"dt":[3.0],"texts":["a","b"]}}')
    events = parse_session_log(log_text(header(), [line]))
    assert [(e["seq"], e["time"]) for e in events] == [(2, -4), (3, -1)]


@pytest.mark.parametrize(
    "line",
    ["NaN", '{"type":"x","time":NaN}', '{"type":"x","time":Infinity}', '[-Infinity]', "nan"],
)
def test_nan_and_infinity_lines_are_malformed(line: str) -> None:
    with pytest.raises(LogParseError) as caught:
        parse_session_log(log_text(header(), [line]), file="f")
    assert caught.value.message.startswith("f:2: not valid JSON")
    with pytest.raises(LogParseError):
        derive_log_bytes(log_text(header(), [line]).encode(), "f")


@pytest.mark.parametrize(
    ("turn", "step", "key"),
    [
        (1, 2, "1/2"), (1.0, 2.0, "1/2"), ("1", "2", "1/2"), (1.5, 2, "1.5/2"), (None, 1, "null/1"),
        (True, 1, "true/1"), ([1, 2], 3, "1,2/3"), ({"a": 1}, 1, "[object Object]/1"),
        (-0.0, 0, "0/0"), (10.0**20, 1, "100000000000000000000/1"),
    ],
)
def test_call_keys_compare_as_text(turn: Any, step: Any, key: str) -> None:
    assert call_key(turn, step) == key


def test_call_key_missing_turn_is_undefined() -> None:
    events = [{"type": "assistant/chunk", "data": {"step": 1, "chunk": finish()}}]
    (entry,) = derive_replay_script(events)
    assert entry.call_key == "undefined/1"


def test_js_string() -> None:
    assert [js_string(v) for v in (1, 2.0, "x", None, False, [None, 1, "a"])] == [
        "1", "2", "x", "null", "false", ",1,a"]


def test_one_call_across_key_spellings() -> None:
    events = [chunk_event(1, 1, {"type": "text-delta", "index": 0, "text": "a"}),
              chunk_event(1.0, "1", {"type": "text-delta", "index": 0, "text": "b"}),
              chunk_event("1", 1.0, finish())]
    text = log_text(header(), events)
    (entry,) = derive_log_bytes(text.encode()).entries
    assert entry.call_key == "1/1"
    assert len(entry.entry.chunks) == 3
    assert len(derive_replay_script(parse_session_log(text))) == 1


def test_different_spelling_of_a_different_key_splits() -> None:
    events = [chunk_event(1, 1, {"type": "text-delta", "index": 0, "text": "a"}),
              chunk_event(1, 1.5, finish())]
    with pytest.raises(DerivationError) as caught:
        derive_replay_script(events)
    assert caught.value.call_key == "1/1"


@pytest.mark.parametrize(
    ("children", "order"),
    [
        ([("b", 5), ("a", 5)], ["a", "b"]),
        ([("a", 7), ("b", 5)], ["b", "a"]),
        ([("Z", 1), ("a", 1), ("_", 1)], ["Z", "_", "a"]),
        ([("é", 1), ("z", 1)], ["z", "é"]),
        ([("x", 2.5), ("y", 2)], ["y", "x"]),
        ([("k", "7"), ("j", 3)], ["k", "j"]),
    ],
    ids=["tie-by-id", "by-created", "code-point", "non-ascii", "fraction", "string-created-is-0"],
)
def test_children_ordering(tmp_path: Path, children: list[tuple[str, Any]], order: list[str]) -> None:
    one = call_events(1, 1, [finish()])
    write_scenario(tmp_path, (header("parent", created=99), one),
                   children=[(header(i, created=c), one) for i, c in children])
    scripts = load_scenario(tmp_path).scripts
    assert scripts[0].recorded_id == "parent" and scripts[0].primary
    assert [s.recorded_id for s in scripts[1:]] == order
    assert not any(s.primary for s in scripts[1:])


def test_json_numbers_in_scenario_json(tmp_path: Path) -> None:
    write_scenario(tmp_path, (header("p", created=1767225600000.0, seed=2.0), call_events(1, 1, [finish()])))
    shape = load_scenario(tmp_path).to_json()
    assert shape["scripts"][0]["createdAt"] == 1767225600000
    assert type(shape["scripts"][0]["createdAt"]) is int
    assert shape["headers"]["session.jsonl"] == {"id": "p", "createdAt": 1767225600000, "seedLength": 2}
