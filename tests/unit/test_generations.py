"""docs/format.md#generations case by case: file selection and version checks, every compact stream record and
its malformed forms, the inherited cut, the sidecar's ``accepted``, tokens and the
announcement rule, and that loading and ``validate`` agree on each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay_engine import ReplayEngine, ReplayError, entry_to_json, load_scenario
from replay_engine.errors import SessionTokenError
from replay_engine.scenario.check import check_scenario
from replay_engine.scenario.layout import log_name, scenario_layout
from tests.unit.enginetools import scripts

pytestmark = pytest.mark.anyio

FIN = {"type": "finish", "reason": {"kind": "stop"}}


def header(version: Any = 4, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "session", "id": "s", "createdAt": 5}
    if version is not None:
        out["version"] = version
    out.update(extra)
    return out


def settlement(stream: list[Any], turn: Any = 1, step: Any = 1, seq: int | None = None,
               kind: str = "assistant/message") -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, "data": {"turn": turn, "step": step, "stream": stream}}
    if seq is not None:
        out.update(seq=seq, time=seq)
    return out


def chunk(c: dict[str, Any], t: int = 1) -> dict[str, Any]:
    return {"type": "chunk", "time": t, "chunk": c}


def text_run(*texts: str, time0: int = 10, index: Any = 0, dt: Any = None) -> dict[str, Any]:
    return {"type": "text-chunks", "time0": time0, "index": index,
            "dt": [1] * (len(texts) - 1) if dt is None else dt, "texts": list(texts)}


def write(root: Path, name: str, lines: list[Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def chunks_of(root: Path, script: int = 0) -> list[list[dict[str, Any]]]:
    return [e.entry.chunks for e in load_scenario(root).scripts[script].entries]  # type: ignore[union-attr]


def load_error(root: Path) -> ReplayError:
    with pytest.raises(ReplayError) as caught:
        load_scenario(root)
    problems, _ = check_scenario(str(root))
    assert problems and caught.value.message in problems[0] + "".join(problems)
    return caught.value


# --- selection --------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "role"), [
    ("session.jsonl", (None, 0)), ("session.3.jsonl", (3, 0)), ("session.v4.jsonl", (None, 4)),
    ("session.2.v13.jsonl", (2, 13)), ("session.v0.jsonl", None), ("session.v01.jsonl", None),
    ("session.V4.jsonl", None), ("session.v4.jsonl.zstd", None), ("session.x.jsonl", None),
])
def test_log_names(name: str, role: tuple[int | None, int] | None) -> None:
    found = log_name(name)
    assert (None if found is None else (found.ordinal, found.generation)) == role


def test_the_highest_generation_of_each_role_is_read_and_older_ones_ignored(tmp_path: Path) -> None:
    old = [header(None), {"type": "assistant/chunk", "data": {"turn": 1, "step": 1,
                                                             "chunk": {"type": "broken"}}}]
    write(tmp_path, "session.jsonl", old)  # never read: a v3 stands for the primary
    write(tmp_path, "session.v3.jsonl", [header(3), settlement([chunk({"type": "text-delta",
                                                                   "index": 0, "text": "a"}), chunk(FIN)])])
    write(tmp_path, "session.1.jsonl", [header(None, id="c", createdAt=9), *[
        {"type": "assistant/chunk", "seq": 0, "time": 0, "data": {"turn": 1, "step": 1, "chunk": FIN}}]])
    layout = scenario_layout(tmp_path)
    assert layout.by_generation and layout.primary.name == "session.v3.jsonl"
    assert [p.name for p in layout.children] == ["session.1.jsonl"]
    assert [p.name for p in layout.ignored] == ["session.jsonl"]
    scenario = load_scenario(tmp_path)
    assert sorted(scenario.headers) == ["session.1.jsonl", "session.v3.jsonl"]
    assert [p.name for p in scenario.ignored] == ["session.jsonl"]
    assert chunks_of(tmp_path) == [[{"type": "text-delta", "index": 0, "text": "a"}, FIN]]
    assert check_scenario(str(tmp_path))[0] == []


@pytest.mark.parametrize(("name", "version", "needle"), [
    ("session.v4.jsonl", 3, "file name says generation 4 but the header's version is 3"),
    ("session.v4.jsonl", None, "version is None"),
    ("session.v4.jsonl", "4", "version is '4'"),
    ("session.v1.jsonl", 2, "generation 1"),
    ("session.jsonl", 3, "a version 3 log must be named session[.N].v3.jsonl"),
])
def test_the_name_generation_must_equal_the_header_version(tmp_path: Path, name: str, version: Any,
                                                          needle: str) -> None:
    write(tmp_path, name, [header(version)])
    assert needle in load_error(tmp_path).message


def test_an_unversioned_v3_log_is_refused_instead_of_loading_no_call(tmp_path: Path) -> None:
    write(tmp_path, "session.jsonl", [header(3), settlement([chunk(FIN)])])
    error = load_error(tmp_path)
    assert "session.jsonl" in error.message and "session[.N].v3.jsonl" in error.message


# --- compact records ----------------------------------------------------------------------


def test_every_record_expands_to_its_chunks(tmp_path: Path) -> None:
    tool = {"type": "tool-call-chunks", "time0": 3, "index": 1, "dt": [2], "id": "t1",
            "name": "ls", "args": ['{"a"', ":1}"]}
    plain_tool = {"type": "tool-call-chunks", "time0": 3, "index": 2, "dt": [], "id": "t2",
                  "args": ["{}"]}
    reasoning = {"type": "reasoning-chunks", "time0": 0, "index": 0, "dt": [5], "texts": ["x", "y"]}
    write(tmp_path, "session.v4.jsonl", [header(), settlement(
        [reasoning, tool, plain_tool, chunk(FIN, 9)], seq=0)])
    (entry,) = load_scenario(tmp_path).scripts[0].entries
    assert entry.entry.chunks == [  # type: ignore[union-attr]
        {"type": "reasoning-delta", "index": 0, "text": "x"},
        {"type": "reasoning-delta", "index": 0, "text": "y"},
        {"type": "tool-call-delta", "index": 1, "id": "t1", "name": "ls", "argumentsDelta": '{"a"'},
        {"type": "tool-call-delta", "index": 1, "id": "t1", "name": "ls", "argumentsDelta": ":1}"},
        {"type": "tool-call-delta", "index": 2, "id": "t2", "argumentsDelta": "{}"},
        FIN,
    ]
    assert list(entry.times) == [0, 5, 3, 5, 3, 9]


@pytest.mark.parametrize(("record", "needle"), [
    ("not a record", "record 1: not an object"),
    ({"type": "chunk", "time": 1}, "keys must be type, time, chunk"),
    ({"type": "chunk", "time": 1.5, "chunk": FIN}, "time must be a safe integer"),
    ({"type": "chunk", "time": 2**53, "chunk": FIN}, "time must be a safe integer"),
    ({"type": "chunk", "time": 1, "chunk": [1]}, "chunk must be a JSON object"),
    ({"type": "text-chunks", "time0": 0, "index": 0, "dt": [], "texts": []}, "non-empty list"),
    ({"type": "text-chunks", "time0": 0, "index": 0, "dt": [], "texts": [1]}, "non-empty list"),
    ({"type": "text-chunks", "time0": 0, "index": -1, "dt": [], "texts": ["a"]}, "index must be"),
    ({"type": "text-chunks", "time0": 0, "index": 0.5, "dt": [], "texts": ["a"]}, "index must be"),
    ({"type": "text-chunks", "time0": 0, "index": 0, "dt": [1], "texts": ["a"]}, "dt must be a list of 0"),
    ({"type": "text-chunks", "time0": 0, "index": 0, "dt": [0.5], "texts": ["a", "b"]}, "dt holds 0.5"),
    ({"type": "text-chunks", "time0": 2**53 - 1, "index": 0, "dt": [1], "texts": ["a", "b"]},
     "beyond the safe integers"),
    ({"type": "text-chunks", "time0": 0, "index": 0, "dt": [], "texts": ["a"], "x": 1}, "keys must be"),
    ({"type": "tool-call-chunks", "time0": 0, "index": 0, "dt": [], "id": "", "args": ["a"]},
     "id must be a non-empty string"),
    ({"type": "tool-call-chunks", "time0": 0, "index": 0, "dt": [], "id": "i", "name": "",
      "args": ["a"]}, "name, when present, must be a non-empty string"),
    ({"type": "packed", "time0": 0}, "unsupported record"),
    ({"time": 0}, "unsupported record"),
])
def test_a_malformed_record_names_the_file_line_and_record(tmp_path: Path, record: Any,
                                                          needle: str) -> None:
    write(tmp_path, "session.v4.jsonl", [header(), {"type": "turn/start", "data": {}},
                                         settlement([chunk({"type": "block-start", "index": 0}),
                                                     record])])
    error = load_error(tmp_path)
    assert "session.v4.jsonl:3: settlement stream record 1" in error.message
    assert needle in error.message


def test_a_negative_zero_index_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl"
    path.write_text(json.dumps(header()) + "\n" + '{"type":"assistant/message","data":{"turn":1,'
                    '"step":1,"stream":[{"type":"text-chunks","time0":0,"index":-0,"dt":[],'
                    '"texts":["a"]},{"type":"chunk","time":1,"chunk":{"type":"finish"}}]}}\n')
    assert "index must be a non-negative safe integer" in load_error(tmp_path).message


@pytest.mark.parametrize(("event", "needle"), [
    ({"type": "assistant/message"}, "has no data object"),
    ({"type": "assistant/attempt", "data": {"turn": 1, "stream": {}}}, "data.stream is not a list"),
    ([1, 2], "the line is not a JSON object"),
    (None, "the line is not a JSON object"),
    ({"type": "x", "seq": 1}, "the event has seq but no time"),
])
def test_malformed_events(tmp_path: Path, event: Any, needle: str) -> None:
    write(tmp_path, "session.v4.jsonl", [header(), event])
    error = load_error(tmp_path)
    assert "session.v4.jsonl:2" in error.message and needle in error.message


def test_complete_and_projected_events_cannot_mix(tmp_path: Path) -> None:
    write(tmp_path, "session.v4.jsonl", [header(), {"type": "a", "seq": 0, "time": 0},
                                         {"type": "b"}])
    assert "session.v4.jsonl:3: a projected event in a complete log" in load_error(tmp_path).message


def test_an_empty_v2_log_is_an_error(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "session.v2.jsonl").write_text("\n  \n")
    assert "the log is empty" in load_error(tmp_path).message


def test_a_thrown_stream_is_an_unfinished_call_naming_turn_step_and_the_sidecar(tmp_path: Path) -> None:
    write(tmp_path, "session.v4.jsonl", [header(), settlement([chunk(FIN)], 1, 1),
                                         settlement([chunk({"type": "text-delta", "index": 0,
                                                            "text": "par"})], 2, 3)])
    error = load_error(tmp_path)
    assert error.code == "UNFINISHED_CALL" and getattr(error, "call_key", None) == "2/3"
    assert "model call 2/3 " in error.message and "replay.override.json" in error.message


def test_retries_that_share_a_step_are_separate_calls_and_empty_streams_none(tmp_path: Path) -> None:
    write(tmp_path, "session.v4.jsonl", [
        header(), settlement([chunk({"type": "finish", "reason": {"kind": "error"}})],
                             kind="assistant/attempt"),
        settlement([]), settlement([chunk(FIN)]),
        {"type": "assistant/chunk", "data": {"turn": 9, "step": 9, "chunk": {"type": "x"}}},
        {"type": "text-chunks", "data": {}},  # v0 shapes are ignored events here
    ])
    assert chunks_of(tmp_path) == [[{"type": "finish", "reason": {"kind": "error"}}], [FIN]]


def test_a_compaction_call(tmp_path: Path) -> None:
    write(tmp_path, "session.v4.jsonl", [header(), {"type": "compaction/summary", "data": {
        "llmStreamCall": True, "rawOutput": [{"type": "text", "text": "sum"}]}}])
    assert chunks_of(tmp_path) == [[
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "sum"}}, FIN]]


# --- the inherited cut ------------------------------------------------------------------


def _child(tmp_path: Path, events: list[Any], seeded: bool = True) -> None:
    write(tmp_path, "session.v4.jsonl", [header()])
    write(tmp_path, "session.1.v4.jsonl", [header(id="child", createdAt=9, isSeeded=seeded),
                                           *events])


def test_a_child_is_derived_from_its_last_inherited_marker(tmp_path: Path) -> None:
    inherited = settlement([chunk({"type": "text-delta", "index": 0, "text": "parent"}), chunk(FIN)])
    own = settlement([chunk({"type": "text-delta", "index": 0, "text": "own"}), chunk(FIN)])
    marker = {"type": "session/end-seed", "data": {"inherited": True}}
    _child(tmp_path, [inherited, marker, inherited, marker, own])
    scenario = load_scenario(tmp_path)
    assert chunks_of(tmp_path, 1) == [[{"type": "text-delta", "index": 0, "text": "own"}, FIN]]
    assert scenario.headers["session.1.v4.jsonl"].to_json()["seedLength"] == 3


def test_a_primary_is_never_cut(tmp_path: Path) -> None:
    marker = {"type": "session/end-seed", "data": {"inherited": True}}
    write(tmp_path, "session.v4.jsonl", [header(isSeeded=True), settlement([chunk(FIN)]), marker])
    assert len(chunks_of(tmp_path)) == 1


def test_seeded_without_marker_and_marker_without_seed_are_errors(tmp_path: Path) -> None:
    _child(tmp_path / "a", [settlement([chunk(FIN)])], seeded=True)
    assert "isSeeded but the log has no session/end-seed" in load_error(tmp_path / "a").message
    _child(tmp_path / "b", [{"type": "session/end-seed", "data": {"inherited": True}}], seeded=False)
    error = load_error(tmp_path / "b")
    assert "session.1.v4.jsonl:2:" in error.message and "not seeded" in error.message


# --- sidecars -----------------------------------------------------------------------------


THROW = {"kind": "throw", "chunks": [], "message": "m", "code": "AUTH"}


def test_accepted_is_kept_in_a_directory_read_by_generation(tmp_path: Path) -> None:
    write(tmp_path, "session.v4.jsonl", [header()])
    (tmp_path / "replay.override.json").write_text(json.dumps([{**THROW, "accepted": True}]))
    entry = load_scenario(tmp_path).scripts[0].entries[0].entry
    assert entry_to_json(entry) == {**THROW, "accepted": True}
    (tmp_path / "replay.override.json").write_text(json.dumps({"patches": [
        {"at": 0, "entry": {**THROW, "accepted": "yes"}}]}))
    assert "patch 0.entry.accepted: must be true or false" in load_error(tmp_path).message


def test_accepted_is_an_unknown_key_in_a_legacy_directory(tmp_path: Path) -> None:
    write(tmp_path, "session.jsonl", [header(None)])
    (tmp_path / "replay.override.json").write_text(json.dumps([{**THROW, "accepted": False}]))
    assert "entry 0.accepted: unknown key" in load_error(tmp_path).message


def test_a_v2_primary_replaced_by_a_bare_list_is_still_checked(tmp_path: Path) -> None:
    write(tmp_path, "session.v4.jsonl", [header(), settlement([{"type": "x"}])])
    (tmp_path / "replay.override.json").write_text(json.dumps([THROW]))
    assert "settlement stream record 0: unsupported record" in load_error(tmp_path).message


# --- tokens and announced children ------------------------------------------------------------


def _text(t: str) -> Any:
    from replay_engine import ChunksEntry

    return ChunksEntry(kind="chunks", chunks=[{"type": "text-delta", "index": 0, "text": t}, FIN])


async def test_session_tokens_before_and_after_binding() -> None:
    engine = ReplayEngine(scripts([_text("ask {{session:2}}"), _text("x {{session:1}}")],
                                  [_text("child of {{session:1}}")]))
    with pytest.raises(SessionTokenError) as caught:
        engine.open_call("parent")
    assert "session token {{session:2}} was used before that recorded session bound" in \
           caught.value.message and "session parent" in caught.value.message
    child = engine.open_call("kid")
    assert child.entry.chunks[0]["text"] == "child of parent"  # type: ignore[union-attr]
    again = engine.open_call("parent")
    assert again.entry.chunks[0]["text"] == "x parent"  # type: ignore[union-attr]
    anonymous = ReplayEngine(scripts([_text("{{session:1}}")]))
    with pytest.raises(SessionTokenError):
        anonymous.open_call(None)  # the anonymous key is never a live id


async def test_an_announced_child_binds_to_its_slot_whatever_the_arrival_order() -> None:
    engine = ReplayEngine(scripts([_text("p1"), _text("p2")], [_text("first child")],
                                  [_text("second child")]))
    announce = [{"role": "tool", "content": "started subagent kid-B"},
                {"role": "tool", "content": [{"type": "text", "text": "started subagent kid-C"}]}]
    engine.open_call("parent", announce)
    late = engine.open_call("kid-C")  # arrives first, but was announced second
    early = engine.open_call("kid-B")
    assert (late.script_index, early.script_index) == (2, 1)
    bindings = {b.session: b for b in engine.state().bindings}
    assert bindings["kid-C"].script_index == 2
    stranger = ReplayEngine(scripts([_text("p")], [_text("c")]))
    stranger.open_call("parent", [{"content": "started subagent someone-else"}])
    assert stranger.open_call("other").script_index == 1  # no announcement: first-call order
