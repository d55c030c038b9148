"""docs/format.md#deriving-scripts (and #edge-cases): grouping chunks into calls, retries, compaction,
seedLength."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from replay_engine import (
    DerivationError,
    derive_replay_script,
    load_log,
    load_scenario,
    parse_session_log,
)
from replay_engine.scenario.derive_fast import derive_log_bytes
from tests.unit.logtools import (
    call_events,
    chunk_event,
    entries_json,
    finish,
    header,
    log_text,
    text_chunks,
    write_scenario,
)

START = {"type": "block-start", "index": 0, "blockType": "text"}


def delta(text: str) -> dict[str, Any]:
    return {"type": "text-delta", "index": 0, "text": text}


def both(events: list[Any], seed: Any = None) -> list[dict[str, Any]]:
    """Derive through the dict API and the fast loader; they must agree."""
    text = log_text(header(seed=seed), events)
    slow = derive_replay_script(parse_session_log(text))
    fast = derive_log_bytes(text.encode())
    assert entries_json(slow) == entries_json(fast.entries)
    assert [e.call_key for e in slow] == [e.call_key for e in fast.entries]
    return entries_json(fast.entries)


def chunks_of(*calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"kind": "chunks", "chunks": c} for c in calls]


CASES: list[tuple[str, list[Any], list[list[dict[str, Any]]]]] = [
    ("one-call", call_events(1, 1, [START, delta("a"), finish()]), [[START, delta("a"), finish()]]),
    ("two-steps", call_events(1, 1, [delta("a"), finish()]) + call_events(1, 2, [delta("b"), finish()]),
     [[delta("a"), finish()], [delta("b"), finish()]]),
    ("retry-same-key", call_events(1, 1, [delta("a"), finish("error", code="SERVER")])
     + call_events(1, 1, [delta("b"), finish()]),
     [[delta("a"), finish("error", code="SERVER")], [delta("b"), finish()]]),
    ("three-attempts", call_events(2, 1, [finish("error")]) * 2 + call_events(2, 1, [finish()]),
     [[finish("error")], [finish("error")], [finish()]]),
    ("interleaved-events-ignored",
     [chunk_event(1, 1, delta("a")), {"type": "tool/result", "data": {}},
      {"type": "turn/end", "data": {"turn": 1}}, chunk_event(1, 1, finish())],
     [[delta("a"), finish()]]),
    ("only-finish", [chunk_event(3, 4, finish("max-tokens"))], [[finish("max-tokens")]]),
    ("finish-with-extra-fields", [chunk_event(1, 1, {"type": "finish", "reason": {"kind": "stop"},
                                                     "replayState": {"k": [1, {"z": None}]}})],
     [[{"type": "finish", "reason": {"kind": "stop"}, "replayState": {"k": [1, {"z": None}]}}]]),
    ("unknown-chunk-type-kept", [chunk_event(1, 1, {"type": "weird", "x": 1}), chunk_event(1, 1, finish())],
     [[{"type": "weird", "x": 1}, finish()]]),
    ("no-events", [], []),
    ("no-chunks", [{"type": "user/message", "data": {}}], []),
]


@pytest.mark.parametrize(("events", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_grouping(events: list[Any], expected: list[list[dict[str, Any]]]) -> None:
    assert both(events) == chunks_of(*expected)


def test_call_keys_and_lines() -> None:
    events = call_events(1, 1, [delta("a"), finish()]) + [{"type": "x"}] + call_events(1, 2, [finish()])
    text = log_text(header(), events)
    entries = derive_log_bytes(text.encode(), "f.jsonl").entries
    assert [(e.call_key, e.lines, e.origin) for e in entries] == [
        ("1/1", (2, 3), "derived"), ("1/2", (5, 5), "derived")]
    assert list(entries[0].times or []) == [0, 10]


@pytest.mark.parametrize(
    ("events", "key", "call_no"),
    [
        (call_events(1, 2, [START, delta("x")]), "1/2", 0),
        (call_events(1, 1, [finish()]) + call_events(1, 2, [delta("x")]) + call_events(1, 3, [finish()]),
         "1/2", 1),
        (call_events(1, 1, [delta("x")]) + [{"type": "compaction/summary", "data": {}}], "1/1", 0),
        (call_events(4, 1, [finish(), delta("again")]), "4/1", 1),
    ],
    ids=["at-end", "key-change", "before-compaction", "retry-without-finish"],
)
def test_unfinished_call_is_error(events: list[Any], key: str, call_no: int, tmp_path: Path) -> None:
    text = log_text(header(), events)
    with pytest.raises(DerivationError) as slow:
        derive_replay_script(parse_session_log(text), file="s.jsonl")
    path = tmp_path / "session.jsonl"
    path.write_text(text)
    with pytest.raises(DerivationError) as fast:
        load_log(path)
    for caught in (slow.value, fast.value):
        assert caught.call_key == key
        assert caught.code == "UNFINISHED_CALL"
        assert f"model call {key} (call #{call_no} of the script)" in caught.message
        assert "ended without a finish chunk" in caught.message
        assert "replay.override.json" in caught.message
        assert "bare list" in caught.message
    assert fast.value.message.startswith(f"{path}:")


def test_unfinished_call_in_child_says_sidecars_do_not_apply(tmp_path: Path) -> None:
    write_scenario(
        tmp_path,
        (header("p"), call_events(1, 1, text_chunks("ok"))),
        children=[(header("c"), call_events(1, 1, [START, delta("cut")]))],
    )
    with pytest.raises(DerivationError) as caught:
        load_scenario(tmp_path)
    assert caught.value.call_key == "1/1"
    assert str(tmp_path / "session.1.jsonl") in caught.value.message
    assert "applies only to the primary session" in caught.value.message


@pytest.mark.parametrize(
    "event",
    [
        {"type": "assistant/chunk", "data": {"turn": 1, "step": 1}},
        {"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": None}},
        {"type": "assistant/chunk"},
        {"type": "assistant/chunk", "data": None},
        {"type": "assistant/chunk", "data": [1]},
    ],
    ids=["no-chunk", "null-chunk", "no-data", "null-data", "list-data"],
)
def test_chunk_event_without_chunk_is_error(event: dict[str, Any], tmp_path: Path) -> None:
    text = log_text(header(), [{"type": "x"}, event])
    with pytest.raises(DerivationError) as slow:
        derive_replay_script(parse_session_log(text))
    path = tmp_path / "s.jsonl"
    path.write_text(text)
    with pytest.raises(DerivationError) as fast:
        load_log(path)
    assert "has no data.chunk" in slow.value.message
    assert fast.value.message.startswith(f"{path}:3: ")


# --- compaction ---------------------------------------------------------------------------

BLOCK = {"type": "text", "text": "summary"}
USAGE = {"inputTokens": 5, "outputTokens": 2}


def compaction(**data: Any) -> dict[str, Any]:
    return {"type": "compaction/summary", "seq": 0, "time": 77, "data": data}


def test_compaction_call_with_usage() -> None:
    other = {"type": "image", "url": "u"}
    got = both([compaction(llmStreamCall=True, rawOutput=[BLOCK, other], usage=USAGE)])
    assert got == chunks_of([
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "block-end", "index": 0, "block": BLOCK},
        {"type": "block-start", "index": 1, "blockType": "image"},
        {"type": "block-end", "index": 1, "block": other},
        {"type": "usage", "usage": USAGE},
        {"type": "finish", "reason": {"kind": "stop"}},
    ])


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"llmStreamCall": True, "rawOutput": []}, [[finish()]]),
        ({"llmStreamCall": True, "rawOutput": [], "usage": None},
         [[{"type": "usage", "usage": None}, finish()]]),
        ({"llmStreamCall": True, "rawOutput": [{"text": "no type"}]},
         [[{"type": "block-start", "index": 0},
           {"type": "block-end", "index": 0, "block": {"text": "no type"}}, finish()]]),
        ({"llmStreamCall": False, "rawOutput": [BLOCK]}, []),
        ({"llmStreamCall": "true", "rawOutput": [BLOCK]}, []),
        ({"llmStreamCall": 1}, []),
        ({}, []),
    ],
    ids=["no-usage", "usage-null", "block-without-type", "not-a-call", "string-true", "one", "empty"],
)
def test_compaction_variants(data: dict[str, Any], expected: list[list[dict[str, Any]]]) -> None:
    assert both([compaction(**data)]) == chunks_of(*expected)


def test_compaction_closes_open_group_and_keeps_order() -> None:
    events = (call_events(1, 1, [finish()])
              + [compaction(llmStreamCall=True, rawOutput=[BLOCK])]
              + call_events(1, 1, [finish("length")]))
    text = log_text(header(), events)
    entries = derive_log_bytes(text.encode()).entries
    assert [e.call_key for e in entries] == ["1/1", "compaction", "1/1"]
    assert list(entries[1].times or []) == [77, 77, 77]


@pytest.mark.parametrize(
    ("event", "fragment"),
    [
        ({"type": "compaction/summary"}, "has no data object"),
        ({"type": "compaction/summary", "data": None}, "has no data object"),
        (compaction(llmStreamCall=True), "needs data.rawOutput"),
        (compaction(llmStreamCall=True, rawOutput=None), "needs data.rawOutput"),
        (compaction(llmStreamCall=True, rawOutput={"a": 1}), "needs data.rawOutput"),
        (compaction(llmStreamCall=True, rawOutput=[BLOCK, None]), "rawOutput[1] is null"),
    ],
    ids=["no-data", "null-data", "no-raw", "null-raw", "object-raw", "null-block"],
)
def test_compaction_errors(event: dict[str, Any], fragment: str, tmp_path: Path) -> None:
    text = log_text(header(), [event])
    with pytest.raises(DerivationError) as slow:
        derive_replay_script(parse_session_log(text))
    assert fragment in slow.value.message
    path = tmp_path / "s.jsonl"
    path.write_text(text)
    with pytest.raises(DerivationError) as fast:
        load_log(path)
    assert fast.value.message.startswith(f"{path}:2: ")
    assert fragment in fast.value.message


# --- seedLength ---------------------------------------------------------------------------

SEEDED = (call_events(1, 1, [delta("parent-a"), finish()])           # events 0-1
          + [{"type": "user/message", "data": {}}]                  # event 2
          + call_events(1, 2, [delta("parent-b"), finish()])         # events 3-4
          + call_events(2, 1, [delta("child"), finish()]))           # events 5-6


@pytest.mark.parametrize(
    ("seed", "texts"),
    [
        (0, ["parent-a", "parent-b", "child"]),
        (2, ["parent-b", "child"]),
        (3, ["parent-b", "child"]),
        (5, ["child"]),
        (7, []),
        (100, []),
        (-2, ["child"]),
        (-7, ["parent-a", "parent-b", "child"]),
        (-100, ["parent-a", "parent-b", "child"]),
        (5.9, ["child"]),
        (-2.7, ["child"]),
        (2.0, ["parent-b", "child"]),
        ("5", ["parent-a", "parent-b", "child"]),
        (True, ["parent-a", "parent-b", "child"]),
    ],
)
def test_seed_length_slices_like_a_list(seed: Any, texts: list[str], tmp_path: Path) -> None:
    write_scenario(tmp_path, (header("p"), call_events(9, 9, [finish()])),
                   children=[(header("c", seed=seed), SEEDED)])
    child = load_scenario(tmp_path).scripts[1]
    got = [c["text"] for e in child.entries for c in e.entry.chunks if c["type"] == "text-delta"]
    assert got == texts
    # The reference: slice the expanded event list, then derive.
    events = parse_session_log(log_text(header(seed=seed), SEEDED))
    start = int(seed) if isinstance(seed, int | float) and not isinstance(seed, bool) else 0
    assert entries_json(derive_replay_script(events[start:])) == entries_json(child.entries)


def test_seed_skips_unfinished_parent_call_and_counts_packed_members(tmp_path: Path) -> None:
    row = {"type": "text-chunks", "seq0": 0, "time0": 0,
           "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 1], "texts": ["x", "y", "z"]}}
    events = [row, {"type": "note"}] + call_events(2, 1, [finish()])
    write_scenario(tmp_path, (header("p"), call_events(9, 9, [finish()])),
                   children=[(header("c", seed=4), events)])
    child = load_scenario(tmp_path).scripts[1]
    assert [e.call_key for e in child.entries] == ["2/1"]
    assert child.seed_length == 4


def test_primary_ignores_seed_length(tmp_path: Path) -> None:
    write_scenario(tmp_path, (header("p", seed=5), SEEDED))
    assert len(load_scenario(tmp_path).scripts[0].entries) == 3
