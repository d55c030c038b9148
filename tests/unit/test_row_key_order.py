"""A v0/v1 packed row reads the same whatever the order of its keys (with ``type`` first, as
recorders write it, or last, or twice): loading, checking and the reference
``derive_replay_script(parse_session_log)`` give the same calls, chunks and times, the same
error word for word, the same warnings; a child's seed cuts it the same way."""

from __future__ import annotations

import json
from typing import Any

import pytest

from replay_engine import ReplayError, derive_replay_script, parse_session_log
from replay_engine.scenario.derive_fast import derive_log_bytes
from replay_engine.scenario.logcheck import check_log_bytes

FILE = "f.jsonl"
HEAD = b'{"type":"session","id":"s","createdAt":0,"seedLength":0}\n'


def chunk(c: dict[str, Any], time: Any = 5) -> bytes:
    event = {"type": "assistant/chunk", "seq": 0, "time": time,
             "data": {"turn": 1, "step": 1, "chunk": c}}
    return json.dumps(event).encode() + b"\n"


START = chunk({"type": "block-start", "index": 0, "blockType": "text"})
FINISH = chunk({"type": "finish", "reason": {"kind": "stop"}})


def log(row: str) -> bytes:
    return HEAD + START + row.encode() + b"\n" + FINISH


def reordered(row: str) -> str:
    """The row with its "type" key moved last (the event decoder then reads it first)."""
    value = json.loads(row)
    kind = value.pop("type")
    return json.dumps({**value, "type": kind})


def result(data: bytes) -> tuple[Any, ...]:
    """What loading, checking and the reference derive of ``data`` give (or the error)."""
    out: list[Any] = []
    for run in (
        lambda: [(e.call_key, e.entry.chunks, list(e.times or ()))
                 for e in derive_log_bytes(data, FILE).entries],
        lambda: check_log_bytes(data, FILE).calls,
        lambda: [(e.call_key, e.entry.chunks)
                 for e in derive_replay_script(parse_session_log(data, FILE), FILE)],
    ):
        try:
            out.append(("ok", run()))
        except ReplayError as exc:
            out.append((type(exc).__name__, exc.code, exc.message, exc.line))
    return tuple(out)


def warned(data: bytes) -> list[str]:
    warnings: list[str] = []
    try:
        check_log_bytes(data, FILE, warnings=warnings)
    except ReplayError:
        pass
    return warnings


ROWS = {
    "plain": '{"type":"text-chunks","seq0":1,"time0":7,"data":{"turn":1,"step":1,"index":0,'
             '"dt":[1,2],"texts":["a","b","c"]}}',
    "tool call": '{"type":"tool-call-chunks","seq0":1,"time0":7,"data":{"turn":1,"step":1,'
                 '"index":0,"id":"c1","name":"bash","dt":[0],"args":["{\\"a\\":","1}"]}}',
    "a later type wins": '{"type":"text-chunks","seq0":1,"time0":7,"data":{"turn":1,"step":1,'
                         '"index":0,"dt":[],"texts":["a"]},"type":"assistant/chunk"}',
    "another call's key": '{"type":"reasoning-chunks","seq0":1,"time0":7,"data":{"turn":2,'
                          '"step":1,"index":0,"dt":[],"texts":["a"]}}',
    "an extra key": '{"type":"text-chunks","seq0":1,"time0":7,"extra":1,"data":{"turn":1,'
                    '"step":1,"index":0,"dt":[],"texts":["a"]}}',
    "a seq that is a string": '{"type":"text-chunks","seq":"x","seq0":1,"time0":7,"data":'
                              '{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}',
    "dt too short": '{"type":"text-chunks","seq0":1,"time0":7,"data":{"turn":1,"step":1,'
                    '"index":0,"dt":[],"texts":["a","b"]}}',
    "a text that is a number": '{"type":"text-chunks","seq0":1,"time0":7,"data":{"turn":1,'
                               '"step":1,"index":0,"dt":[],"texts":[1]}}',
    "no time0": '{"type":"text-chunks","seq0":1,"data":{"turn":1,"step":1,"index":0,'
                '"dt":[3],"texts":["a","b"]}}',
}


@pytest.mark.parametrize("row", ROWS.values(), ids=list(ROWS))
def test_a_row_reads_as_the_same_row_reordered(row: str) -> None:
    first, other = log(row), log(reordered(row))
    assert first.split(b"\n")[2].startswith(b'{"type":"')
    assert result(first) == result(other)
    assert warned(first) == warned(other)


def test_the_reading_agrees_with_the_reference_on_a_plain_row() -> None:
    loaded, calls, reference = result(log(ROWS["plain"]))
    assert loaded[0] == "ok" and calls == ("ok", 1)
    assert [(key, chunks) for key, chunks, _ in loaded[1]] == reference[1]
    assert [c.get("text") for c in loaded[1][0][1]] == [None, "a", "b", "c", None]
    assert loaded[1][0][2] == [5, 7, 8, 10, 5]


def test_a_truncated_row_names_its_line_in_loading_and_checking() -> None:
    loaded, checked, _ = result(log('{"type":"text-chunks","seq0":1,"data":{"turn":1'))
    assert loaded == checked
    assert loaded[0] == "LogParseError" and loaded[3] == 3


def test_a_string_seq_is_warned_about_whichever_key_comes_first() -> None:
    row = ROWS["a seq that is a string"]
    assert warned(log(row)) == warned(log(reordered(row)))
    assert len(warned(log(row))) == 1 and "seq is a string" in warned(log(row))[0]


def seeded(data: bytes) -> list[Any]:
    """What a child log's loading and checking give (or the error), from its seedLength on."""
    outcome: list[Any] = []
    for run in (lambda: [(e.call_key, e.entry.chunks)
                         for e in derive_log_bytes(data, FILE, seed_length=True).entries],
                lambda: check_log_bytes(data, FILE, seed_length=True).calls):
        try:
            outcome.append(run())
        except ReplayError as exc:
            outcome.append((exc.code, exc.message))
    return outcome


@pytest.mark.parametrize("seed", [0, 2, 3, 4, -2])
def test_a_childs_seed_cuts_a_row_as_the_same_row_reordered(seed: int) -> None:
    head = json.dumps({"type": "session", "id": "s", "createdAt": 0, "seedLength": seed})
    rows = [ROWS["plain"], reordered(ROWS["plain"])]
    got = [seeded(head.encode() + b"\n" + START + row.encode() + b"\n" + FINISH)
           for row in rows]
    assert got[0] == got[1]
