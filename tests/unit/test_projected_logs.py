"""Projected logs (docs/format.md#session-logs): events without ``seq``/``time``, packed rows without
``seq0``/``time0``.

Every loader must read such a log exactly like the same log with its envelopes written out: a
missing ``seq``/``seq0`` is the number of events before it (rows expanded), a missing
``time``/``time0`` is 0. A present ``seq0``/``time0`` keeps every rule, in every loader.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsh_replay_tui.headless.callview import recorded_context
from hypothesis import given
from hypothesis import strategies as st

from replay_engine import (
    LogParseError,
    derive_replay_script,
    load_log,
    load_scenario,
    parse_session_log,
)
from replay_engine.authoring.unfinished import load_primary_for_authoring
from replay_engine.scenario.derive_fast import derive_log_bytes
from replay_engine.scenario.loading import load_child_log
from tests.unit.logtools import dumps, entries_json, header, log_text
from tests.unit.test_properties import SETTINGS, fast, pack, plain, reference, sessions

CALL = (1, 1)


def chunk(body: dict[str, Any], seq: int, time: int) -> dict[str, Any]:
    return {"type": "assistant/chunk", "seq": seq, "time": time,
            "data": {"turn": CALL[0], "step": CALL[1], "chunk": body}}


def full_events() -> list[dict[str, Any]]:
    """One call with every envelope written out: 2 events, a 3-member row, 3 events, a row."""
    return [
        {"type": "user/message", "seq": 0, "time": 1000, "data": {"content": "hi"}},
        chunk({"type": "block-start", "index": 0, "blockType": "text"}, 1, 1001),
        {"type": "text-chunks", "seq0": 2, "time0": 1010,
         "data": {"turn": 1, "step": 1, "index": 0, "dt": [5, 7], "texts": ["a", "b", "c"]}},
        chunk({"type": "block-end", "index": 0, "block": {"type": "text", "text": "abc"}}, 5, 1030),
        {"type": "turn/note", "seq": 6, "time": 1031, "data": {}},
        {"type": "tool-call-chunks", "seq0": 7, "time0": 1040,
         "data": {"turn": 1, "step": 1, "index": 1, "id": "c1", "name": "ls", "dt": [2], "args": ["{", "}"]}},
        chunk({"type": "finish", "reason": {"kind": "stop"}}, 9, 1050),
    ]


EVENT_LINES = (0, 1, 3, 4, 6)
ROW_LINES = (2, 5)


def project(events: list[dict[str, Any]], drop: tuple[str, ...], lines: tuple[int, ...]) -> tuple[
        list[dict[str, Any]], list[dict[str, Any]]]:
    """The log with ``drop`` left out of ``lines``, and its twin with the format's values written in."""
    projected, twin = copy.deepcopy(events), copy.deepcopy(events)
    for i in lines:
        for key in drop:
            del projected[i][key]
            twin[i][key] = 0 if key.startswith("time") else twin[i][key]  # seq: index == seq here
    return projected, twin


CASES = {
    "event-without-seq": (("seq",), EVENT_LINES),
    "event-without-time": (("time",), EVENT_LINES),
    "event-without-both": (("seq", "time"), EVENT_LINES),
    "row-without-seq0": (("seq0",), ROW_LINES),
    "row-without-time0": (("time0",), ROW_LINES),
    "row-without-both": (("seq0", "time0"), ROW_LINES),
}


def shape(entries: list[Any]) -> list[Any]:
    return [(e.call_key, list(e.times or []), j) for e, j in zip(entries, entries_json(entries), strict=True)]


def _write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


# Every loader that derives a script, as (text, tmp dir) -> script shape.
LOADERS: dict[str, Callable[[str, Path], list[Any]]] = {
    "derive_log_bytes": lambda text, tmp: shape(derive_log_bytes(text.encode()).entries),
    "load_log": lambda text, tmp: shape(load_log(_write(tmp, "log.jsonl", text)).entries),
    "reference": lambda text, tmp: shape(derive_replay_script(parse_session_log(text))),
    "authoring": lambda text, tmp: shape(load_primary_for_authoring(_write(tmp, "a.jsonl", text)).entries),
    "child": lambda text, tmp: shape(load_child_log(_write(tmp, "session.1.jsonl", text)).entries),
    "scenario": lambda text, tmp: shape(
        load_scenario(_write(tmp, "session.jsonl", text).parent).scripts[0].entries),
}


@pytest.mark.parametrize("case", CASES)
def test_parse_session_log_fills_missing_envelopes(case: str) -> None:
    drop, lines = CASES[case]
    projected, twin = project(full_events(), drop, lines)
    events = parse_session_log(log_text(header(), projected))
    assert events == parse_session_log(log_text(header(), twin))
    assert [e["seq"] for e in events] == list(range(10))  # rows expanded: 0..9 either way
    times = [e["time"] for e in events]
    if "time" in drop:
        assert [times[i] for i in (0, 1, 5, 6, 9)] == [0] * 5
        assert times[2:5] == [1010, 1015, 1022]
    if "time0" in drop:
        assert times[2:5] == [0, 5, 12] and times[7:9] == [0, 2]


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("case", CASES)
def test_every_loader_reads_a_projected_log_like_its_written_out_twin(case: str, loader: str,
                                                                     tmp_path: Path) -> None:
    drop, lines = CASES[case]
    projected, twin = project(full_events(), drop, lines)
    got = LOADERS[loader](log_text(header(), projected), tmp_path)
    want = LOADERS[loader](log_text(header(), twin), tmp_path)
    assert got == want
    ((key, times, entry),) = got
    assert key == "1/1" and len(entry["chunks"]) == 8
    if "time0" in drop:
        assert times[1:4] == [0, 5, 12]


def test_projected_row_seq0_counts_the_events_before_it_not_the_last_seq() -> None:
    """A missing seq0 is the event count, even after a row whose written seq0 was different."""
    events = full_events()
    events[2]["seq0"] = 40  # present: kept as given
    del events[5]["seq0"]
    seqs = [e["seq"] for e in parse_session_log(log_text(header(), events))]
    assert seqs[2:5] == [40, 41, 42]
    assert seqs[7:9] == [7, 8]


BAD = {
    "seq0-null": ("seq0", None, "seq0 must be a non-negative integer (got None)"),
    "seq0-string": ("seq0", "x", "seq0 must be a non-negative integer (got 'x')"),
    "time0-null": ("time0", None, "time0 must be an integer (got None)"),
    "time0-string": ("time0", "0", "time0 must be an integer (got '0')"),
}


@pytest.mark.parametrize("loader", [*LOADERS, "parse_session_log"])
@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("other", ["other-written", "other-left-out"])
def test_a_present_row_envelope_value_keeps_every_rule(bad: str, other: str, loader: str,
                                                       tmp_path: Path) -> None:
    key, value, fragment = BAD[bad]
    events = full_events()
    events[2][key] = value
    if other == "other-left-out":
        del events[2]["time0" if key == "seq0" else "seq0"]
    text = log_text(header(), events)
    with pytest.raises(LogParseError) as caught:
        if loader == "parse_session_log":
            parse_session_log(text, "f.jsonl")
        else:
            LOADERS[loader](text, tmp_path)
    assert caught.value.line == 4
    assert ":4: malformed packed chunk row: " + fragment in caught.value.message


@pytest.mark.parametrize("value", [None, "7", 1.5])
@pytest.mark.parametrize("key", ["seq", "time"])
def test_a_present_event_envelope_value_is_kept_as_given(key: str, value: Any, tmp_path: Path) -> None:
    """docs/format.md#session-logs gives an event's seq and time no rule: a present odd value is kept, never
    replaced by the projected default; derivation records a time it cannot use as 0
    (docs/format.md#edge-cases)."""
    events = full_events()
    events[1][key] = value
    text = log_text(header(), events)
    assert parse_session_log(text)[1][key] == value
    results = {name: load(text, tmp_path) for name, load in LOADERS.items()}
    first = results.pop("derive_log_bytes")
    assert all(r == first for r in results.values())
    ((_, times, _),) = first
    assert times[0] == (int(value) if key == "time" and isinstance(value, float) else
                        0 if key == "time" else 1001)


def test_untimed_counts_what_left_its_time_out(tmp_path: Path) -> None:
    written = log_text(header(), full_events())
    assert derive_log_bytes(written.encode()).untimed == 0
    projected, _ = project(full_events(), ("time",), EVENT_LINES)
    assert derive_log_bytes(log_text(header(), projected).encode()).untimed == 3  # chunk events
    projected, _ = project(full_events(), ("time0",), ROW_LINES)
    text = log_text(header(), projected)
    assert derive_log_bytes(text.encode()).untimed == 2
    root = tmp_path / "s"
    root.mkdir()
    _write(root, "session.jsonl", text)
    _write(root, "session.1.jsonl", written)
    primary, child = load_scenario(root).scripts
    assert (primary.untimed, child.untimed) == (2, 0)


def test_slow_lines_count_untimed_rows_too() -> None:
    """A row the fast path hands to the generic rules (a float turn) still counts."""
    events, _ = project(full_events(), ("time0",), ROW_LINES)
    events[2]["data"]["turn"] = 1.0
    assert derive_log_bytes(log_text(header(), events).encode()).untimed == 2


def test_recorded_context_reads_a_projected_log(tmp_path: Path) -> None:
    projected, _ = project(full_events(), ("seq", "time"), EVENT_LINES)
    _write(tmp_path, "session.jsonl", log_text(header(), projected))
    script = load_scenario(tmp_path).scripts[0]
    assert script.entries[0].lines == (3, 8)
    (item,) = recorded_context(script, 0) or []
    assert (item.role, item.text) == ("user", "hi")


def strip_envelopes(events: list[Any], choices: st.DataObject) -> tuple[list[Any], list[Any]]:
    """Leave out a random choice of envelope keys; also return the twin with the format's values written."""
    projected: list[Any] = []
    twin: list[Any] = []
    index = 0
    for event in events:
        if not isinstance(event, dict):
            projected.append(event)
            twin.append(event)
            index += 1
            continue
        row = event.get("type") in ("text-chunks", "reasoning-chunks", "tool-call-chunks")
        a, b = ("seq0", "time0") if row else ("seq", "time")
        p, t = dict(event), dict(event)
        for key in (a, b):
            if choices.draw(st.booleans()):
                p.pop(key, None)
                t[key] = index if key == a else 0
        projected.append(p)
        twin.append(t)
        index += len(event["data"]["texts" if "texts" in event["data"] else "args"]) if row else 1
    return projected, twin


@SETTINGS
@given(sessions(), st.data(), st.booleans())
def test_projected_logs_derive_the_same_on_both_paths(session: tuple[dict[str, Any], list[Any]],
                                                      choices: st.DataObject, seeded: bool) -> None:
    head, events = session
    projected, twin = strip_envelopes(pack(events, choices), choices)
    text, twin_text = plain(head, projected), plain(head, twin)
    expected = fast(twin_text, seeded)
    assert fast(text, seeded) == expected
    assert reference(text, seeded) == expected
    assert reference(twin_text, seeded) == expected
    assert parse_session_log(text) == parse_session_log(twin_text)


def test_projected_line_is_still_one_json_value() -> None:
    """Leaving envelopes out changes no other rule: a malformed line still names its line."""
    text = log_text(header(), [dumps({"type": "x"}), '{"type": "assistant/chunk", "data": '])
    with pytest.raises(LogParseError) as caught:
        derive_log_bytes(text.encode(), "f.jsonl")
    assert caught.value.line == 3


@pytest.mark.anyio
async def test_a_projected_scenario_serves_like_its_twin_at_recorded_pace(tmp_path: Path) -> None:
    from replay_engine import Pace, ReplayEngine

    projected, twin = project(full_events(), ("seq", "time"), EVENT_LINES)
    served = []
    for name, events in (("projected", projected), ("twin", twin)):
        root = tmp_path / name
        root.mkdir()
        _write(root, "session.jsonl", log_text(header(), events))
        engine = ReplayEngine(load_scenario(root).scripts, pace=Pace("recorded", 0, 1000.0))
        handle = engine.open_call("s")
        served.append([chunk async for chunk in handle.chunks()])
        engine.assert_consumed()
    assert served[0] == served[1] and len(served[0]) == 8
