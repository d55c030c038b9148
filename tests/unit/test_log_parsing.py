"""docs/format.md#session-logs: headers, blank lines, malformed lines and packed chunk rows."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from replay_engine import LogParseError, load_log, parse_session_header, parse_session_log
from replay_engine.scenario.derive_fast import derive_log_bytes
from tests.unit.logtools import dumps, header, log_text

# --- headers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"type":"session","id":"abc","createdAt":5,"seedLength":3}', ("abc", 5, 3)),
        ('{"type":"session","id":7,"createdAt":"5","seedLength":true}', ("", 0, 0)),
        ('{"type":"session","id":null,"createdAt":null,"seedLength":null}', ("", 0, 0)),
        ('{"type":"session"}', ("", 0, 0)),
        ('{"type":"session","createdAt":12.5,"seedLength":-2}', ("", 12.5, -2)),
        ('{"type":"session","createdAt":false}', ("", 0, 0)),
        ("[1,2]", ("", 0, 0)),
        ('"just a string"', ("", 0, 0)),
        ("42", ("", 0, 0)),
    ],
    ids=["all", "wrong-types", "nulls", "absent", "float-negative", "bool", "list", "string", "number"],
)
def test_header_defaults(line: str, expected: tuple[str, float, float]) -> None:
    head = parse_session_header(line + "\n")
    assert (head.id, head.createdAt, head.seedLength) == expected


def test_header_keeps_other_keys() -> None:
    head = parse_session_header(dumps(header("x", 1, cwd="/w", version=3, nested={"a": [1]})))
    assert head.extra == {"type": "session", "cwd": "/w", "version": 3, "nested": {"a": [1]}}
    assert head.to_json() == {"id": "x", "createdAt": 1, "seedLength": 0}


@pytest.mark.parametrize("text", ["", "\n\n", "  \n\t\n", "\u00a0\n\ufeff\n"],
                         ids=["empty", "newlines", "spaces", "nbsp-bom"])
def test_empty_log_has_default_header(text: str, tmp_path: Path) -> None:
    head = parse_session_header(text)
    assert (head.id, head.createdAt, head.seedLength, head.extra) == ("", 0, 0, {})
    assert parse_session_log(text) == []
    path = tmp_path / "session.jsonl"
    path.write_text(text, encoding="utf-8")
    loaded = load_log(path)
    assert (loaded.header.id, loaded.entries, loaded.event_count) == ("", [], 0)


def test_header_after_blank_lines_and_bom() -> None:
    text = "\n\ufeff\n\u00a0 \u3000\n\ufeff" + dumps(header("late", 9)) + "\n"
    assert parse_session_header(text).id == "late"


def test_null_header_is_error() -> None:
    with pytest.raises(LogParseError) as caught:
        parse_session_header("\nnull\n", file="log.jsonl")
    assert caught.value.message.startswith("log.jsonl:2: the header line is null")
    assert (caught.value.file, caught.value.line) == ("log.jsonl", 2)
    with pytest.raises(LogParseError):
        parse_session_log("null\n")


# --- blank lines and malformed lines -------------------------------------------------------

EVENT = {"type": "note", "seq": 1, "time": 2, "data": {"x": 1}}


@pytest.mark.parametrize(
    "blank",
    ["", " ", "\t", "\r", "\u00a0", "\ufeff", "\u00a0\ufeff \t", "\u2028", "\u3000", "\u202f"],
    ids=["empty", "space", "tab", "cr", "nbsp", "bom", "mixed", "line-sep", "ideographic", "nnbsp"],
)
def test_blank_lines_ignored_everywhere(blank: str) -> None:
    text = f"{blank}\n{dumps(header())}\n{blank}\n{dumps(EVENT)}\n{blank}\n{blank}"
    assert parse_session_log(text) == [EVENT]
    assert derive_log_bytes(text.encode()).event_count == 1


def test_crlf_lines() -> None:
    text = f"{dumps(header('w'))}\r\n{dumps(EVENT)}\r\n\r\n"
    assert parse_session_log(text) == [EVENT]
    assert parse_session_header(text).id == "w"


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ('{"type":"x",', "not valid JSON"),
        ("{'type':'x'}", "not valid JSON"),
        ("NaN", "not valid JSON"),
        ('{"time":Infinity}', "not valid JSON"),
        ('{"time":-Infinity}', "not valid JSON"),
        ('{"a":1} {"b":2}', "not valid JSON"),
        ("undefined", "not valid JSON"),
    ],
    ids=["truncated", "single-quotes", "nan", "infinity", "neg-infinity", "two-values", "undefined"],
)
def test_malformed_line_names_file_and_line(bad: str, fragment: str, tmp_path: Path) -> None:
    text = log_text(header(), [EVENT, "", bad, EVENT])
    with pytest.raises(LogParseError) as caught:
        parse_session_log(text, file="s.jsonl")
    message = caught.value.message
    assert message.startswith("s.jsonl:4: ")
    assert fragment in message
    assert "fix or remove this line" in message
    assert caught.value.line == 4
    assert caught.value.code == "LOG_PARSE"
    path = tmp_path / "session.jsonl"
    path.write_text(text)
    with pytest.raises(LogParseError) as fast:
        load_log(path)
    assert fast.value.message.startswith(f"{path}:4: ")


def test_malformed_header_line() -> None:
    with pytest.raises(LogParseError) as caught:
        parse_session_header('{"type":"session",\n', file="h.jsonl")
    assert caught.value.message.startswith("h.jsonl:1: not valid JSON")


def test_invalid_utf8_line(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(dumps(header()).encode() + b"\n\xff\xfe{}\n")
    with pytest.raises(LogParseError) as caught:
        load_log(path)
    assert f"{path}:2" in caught.value.message
    assert "UTF-8" in caught.value.message


def test_null_event_line_is_error(tmp_path: Path) -> None:
    text = log_text(header(), [EVENT, "null"])
    with pytest.raises(LogParseError) as caught:
        parse_session_log(text, file="n.jsonl")
    assert caught.value.message.startswith("n.jsonl:3: the event is null")
    path = tmp_path / "s.jsonl"
    path.write_text(text)
    with pytest.raises(LogParseError) as fast:
        load_log(path)
    assert fast.value.line == 3


@pytest.mark.parametrize("value", ["5", '"text"', "[1,2]", "true", "false", "[]", "{}"])
def test_non_object_event_lines_are_kept_and_ignored(value: str, tmp_path: Path) -> None:
    text = log_text(header(), [value, EVENT])
    events = parse_session_log(text)
    assert len(events) == 2
    assert events[1] == EVENT
    path = tmp_path / "s.jsonl"
    path.write_text(text)
    loaded = load_log(path)
    assert loaded.entries == []
    assert loaded.event_count == 2


def test_unknown_events_and_extra_keys_are_kept() -> None:
    event = {"type": "tool/result", "seq": 4, "time": 9, "data": {"callId": "c"}, "extra": [1]}
    assert parse_session_log(log_text(header(), [event])) == [event]


# --- packed rows ---------------------------------------------------------------------------

TEXT_ROW: dict[str, Any] = {
    "type": "text-chunks", "seq0": 7, "time0": 1000,
    "data": {"turn": 2, "step": 3, "index": 1, "dt": [5, -3], "texts": ["a", "", "c"]},
}
TOOL_ROW: dict[str, Any] = {
    "type": "tool-call-chunks", "seq0": 0, "time0": -5,
    "data": {"turn": 1, "step": 1, "index": 0, "id": "t1", "name": "grep", "dt": [2],
             "args": ["{\"q\":", "1}"]},
}


def _member(seq: int, time: int, turn: Any, step: Any, chunk: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant/chunk", "seq": seq, "time": time,
            "data": {"turn": turn, "step": step, "chunk": chunk}}


def test_text_row_expands_exactly() -> None:
    events = parse_session_log(log_text(header(), [TEXT_ROW]))
    assert events == [
        _member(7, 1000, 2, 3, {"type": "text-delta", "index": 1, "text": "a"}),
        _member(8, 1005, 2, 3, {"type": "text-delta", "index": 1, "text": ""}),
        _member(9, 1002, 2, 3, {"type": "text-delta", "index": 1, "text": "c"}),
    ]
    assert [list(e["data"]["chunk"]) for e in events] == [["type", "index", "text"]] * 3


def test_reasoning_row_expands_exactly() -> None:
    row = copy.deepcopy(TEXT_ROW)
    row["type"] = "reasoning-chunks"
    row["data"]["dt"] = [1, 1]
    events = parse_session_log(log_text(header(), [row]))
    assert [e["data"]["chunk"]["type"] for e in events] == ["reasoning-delta"] * 3
    assert [e["time"] for e in events] == [1000, 1001, 1002]


def test_tool_row_with_name_expands_exactly() -> None:
    events = parse_session_log(log_text(header(), [TOOL_ROW]))
    assert events == [
        _member(0, -5, 1, 1, {"type": "tool-call-delta", "index": 0, "id": "t1", "name": "grep",
                              "argumentsDelta": "{\"q\":"}),
        _member(1, -3, 1, 1, {"type": "tool-call-delta", "index": 0, "id": "t1", "name": "grep",
                              "argumentsDelta": "1}"}),
    ]
    assert list(events[0]["data"]["chunk"]) == ["type", "index", "id", "name", "argumentsDelta"]


def test_tool_row_without_name_has_no_name_key() -> None:
    row = copy.deepcopy(TOOL_ROW)
    del row["data"]["name"]
    events = parse_session_log(log_text(header(), [row]))
    assert all("name" not in e["data"]["chunk"] for e in events)
    assert list(events[0]["data"]["chunk"]) == ["type", "index", "id", "argumentsDelta"]


def test_row_with_float_integers_and_single_member() -> None:
    row = {"type": "text-chunks", "seq0": 3.0, "time0": 10.0,
           "data": {"turn": "1", "step": 1.5, "index": 0, "dt": [], "texts": ["only"]}}
    with pytest.raises(LogParseError):  # turn must be a number
        parse_session_log(log_text(header(), [row]))
    row["data"]["turn"] = 1
    (event,) = parse_session_log(log_text(header(), [row]))
    assert event == _member(3, 10, 1, 1.5, {"type": "text-delta", "index": 0, "text": "only"})
    assert type(event["seq"]) is int and type(event["time"]) is int


def _mutated(base: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    row = copy.deepcopy(base)
    target = row
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return row


_DELETE = object()
BIG = 2**53

BAD_ROWS: list[tuple[str, dict[str, Any], tuple[str, ...], Any, str]] = [
    ("extra-envelope-key", TEXT_ROW, ("seq",), 1, "envelope keys must be type, seq0?, time0?, data"),
    ("null-seq0", TEXT_ROW, ("seq0",), None, "seq0 must be a non-negative integer (got None)"),
    ("missing-data", TEXT_ROW, ("data",), _DELETE, "envelope keys"),
    ("negative-seq0", TEXT_ROW, ("seq0",), -1, "seq0 must be a non-negative integer"),
    ("fraction-seq0", TEXT_ROW, ("seq0",), 1.5, "seq0 must be a non-negative integer"),
    ("bool-seq0", TEXT_ROW, ("seq0",), True, "seq0 must be a non-negative integer"),
    ("string-seq0", TEXT_ROW, ("seq0",), "1", "seq0 must be a non-negative integer"),
    ("unsafe-seq0", TEXT_ROW, ("seq0",), BIG, "seq0 must be a non-negative integer"),
    ("null-time0", TEXT_ROW, ("time0",), None, "time0 must be an integer"),
    ("fraction-time0", TEXT_ROW, ("time0",), 0.5, "time0 must be an integer"),
    ("data-list", TEXT_ROW, ("data",), [], "data must be an object"),
    ("data-extra-key", TEXT_ROW, ("data", "id"), "x", "data keys must be turn, step, index, dt, texts"),
    ("data-missing-dt", TEXT_ROW, ("data", "dt"), _DELETE, "data keys must be"),
    ("text-row-args", TEXT_ROW, ("data", "args"), ["a"], "data keys must be"),
    ("turn-string", TEXT_ROW, ("data", "turn"), "2", "data.turn must be a number"),
    ("step-null", TEXT_ROW, ("data", "step"), None, "data.step must be a number"),
    ("index-bool", TEXT_ROW, ("data", "index"), False, "data.index must be a number"),
    ("texts-empty", TEXT_ROW, ("data", "texts"), [], "data.texts must be a non-empty list of strings"),
    ("texts-number", TEXT_ROW, ("data", "texts"), ["a", 1, "c"], "data.texts must be a non-empty list"),
    ("texts-string", TEXT_ROW, ("data", "texts"), "abc", "data.texts must be a non-empty list"),
    ("dt-short", TEXT_ROW, ("data", "dt"), [1], "data.dt must be a list of 2 integer(s)"),
    ("dt-long", TEXT_ROW, ("data", "dt"), [1, 2, 3], "data.dt must be a list of 2 integer(s)"),
    ("dt-not-list", TEXT_ROW, ("data", "dt"), 5, "data.dt must be a list of 2 integer(s)"),
    ("dt-fraction", TEXT_ROW, ("data", "dt"), [1, 0.5], "data.dt holds 0.5, not an integer"),
    ("dt-bool", TEXT_ROW, ("data", "dt"), [True, 1], "data.dt holds True, not an integer"),
    ("dt-null", TEXT_ROW, ("data", "dt"), [None, 1], "data.dt holds None, not an integer"),
    ("tool-missing-id", TOOL_ROW, ("data", "id"), _DELETE, "data keys must be turn, step, index, id"),
    ("tool-texts", TOOL_ROW, ("data", "texts"), ["x"], "data keys must be turn, step, index, id"),
    ("tool-id-number", TOOL_ROW, ("data", "id"), 5, "data.id must be a string"),
    ("tool-name-null", TOOL_ROW, ("data", "name"), None, "data.name must be a string when present"),
    ("tool-args-empty", TOOL_ROW, ("data", "args"), [], "data.args must be a non-empty list of strings"),
    ("tool-args-null", TOOL_ROW, ("data", "args"), [None, "x"], "data.args must be a non-empty list"),
]


@pytest.mark.parametrize(
    ("base", "path", "value", "fragment"),
    [row[1:] for row in BAD_ROWS],
    ids=[row[0] for row in BAD_ROWS],
)
def test_malformed_packed_row_is_error(base: dict[str, Any], path: tuple[str, ...], value: Any,
                                       fragment: str, tmp_path: Path) -> None:
    row = _mutated(base, path, value)
    text = log_text(header(), [EVENT, row])
    with pytest.raises(LogParseError) as caught:
        parse_session_log(text, file="p.jsonl")
    message = caught.value.message
    assert message.startswith("p.jsonl:3: malformed packed chunk row: ")
    assert fragment in message
    assert caught.value.line == 3
    file = tmp_path / "session.jsonl"
    file.write_text(text)
    with pytest.raises(LogParseError) as fast:
        load_log(file)
    assert fast.value.message == message.replace("p.jsonl", str(file))


def test_packed_row_feeds_derivation(tmp_path: Path) -> None:
    start = _member(0, 0, 2, 3, {"type": "block-start", "index": 1, "blockType": "text"})
    end = _member(10, 2000, 2, 3, {"type": "finish", "reason": {"kind": "stop"}})
    file = tmp_path / "s.jsonl"
    file.write_text(log_text(header(), [start, TEXT_ROW, end]))
    (entry,) = load_log(file).entries
    assert [c["type"] for c in entry.entry.chunks] == ["block-start"] + ["text-delta"] * 3 + ["finish"]
    assert entry.call_key == "2/3"
    assert list(entry.times or []) == [0, 1000, 1005, 1002, 2000]
    assert entry.lines == (2, 4)


def test_missing_log_file(tmp_path: Path) -> None:
    with pytest.raises(LogParseError) as caught:
        load_log(tmp_path / "absent.jsonl")
    assert caught.value.message.startswith(f"{tmp_path / 'absent.jsonl'}: cannot read the session log")
