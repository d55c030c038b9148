"""The bundled sample scenarios load to what sample_scenarios/README.md says they show."""

from __future__ import annotations

import pytest

from replay_engine import DerivationError, LogParseError, SidecarError, load_scenario, parse_session_log
from tests.conftest import SAMPLES


def texts(entry: object) -> str:
    return "".join(c.get("text", "") for c in entry.entry.chunks if c["type"] == "text-delta")  # type: ignore[attr-defined]


def test_every_sample_is_documented() -> None:
    readme = (SAMPLES / "README.md").read_text(encoding="utf-8")
    for directory in SAMPLES.iterdir():
        if directory.is_dir():
            assert f"`{directory.name}`" in readme


def test_nested_subagents() -> None:
    scenario = load_scenario(SAMPLES / "nested-subagents")
    parent, docs, fork = scenario.scripts
    assert [s.recorded_id for s in scenario.scripts] == ["nest-parent", "nest-child-docs", "nest-child-fork"]
    assert [e.call_key for e in parent.entries] == ["1/1", "1/2", "1/3"]
    assert [e.call_key for e in docs.entries] == ["1/1", "1/2"]
    assert fork.seed_length == 8
    assert [e.call_key for e in fork.entries] == ["2/1"]
    assert texts(fork.entries[0]) == "tests: 42"
    # The fork repeats the parent's first events verbatim before its own.
    parent_events = parse_session_log((SAMPLES / "nested-subagents" / "session.jsonl").read_text())
    fork_events = parse_session_log((SAMPLES / "nested-subagents" / "session.2.jsonl").read_text())
    assert fork_events[:8] == parent_events[:8]
    assert fork_events[8:] != parent_events[8:]


def test_packed_rows_expand_to_ordinary_chunks() -> None:
    (first, second) = load_scenario(SAMPLES / "packed-rows").scripts[0].entries
    types = [c["type"] for c in first.entry.chunks]  # type: ignore[union-attr]
    assert types == (["block-start"] + ["reasoning-delta"] * 3 + ["block-end", "block-start"]
                     + ["text-delta"] * 4 + ["block-end", "block-start"] + ["tool-call-delta"] * 3
                     + ["block-end", "finish"])
    tools = [c for c in first.entry.chunks if c["type"] == "tool-call-delta"]  # type: ignore[union-attr]
    assert ["name" in c for c in tools] == [True, True, False]
    assert "".join(c["argumentsDelta"] for c in tools) == '{"pattern":"TODO"}'
    assert texts(first) == "I will search for TODO."
    assert texts(second) == "One TODO in src/a.py."
    times = list(first.times or [])
    assert times[6:10] == [times[6], times[6] + 5, times[6] + 3, times[6] + 10]


def test_retry_shares_a_key() -> None:
    failed, ok = load_scenario(SAMPLES / "retry").scripts[0].entries
    assert failed.call_key == ok.call_key == "1/1"
    assert failed.entry.chunks[-1]["reason"]["kind"] == "error"  # type: ignore[union-attr]
    assert ok.entry.chunks[-1] == {"type": "finish", "reason": {"kind": "stop"}}  # type: ignore[union-attr]


def test_compaction_call() -> None:
    entries = load_scenario(SAMPLES / "compaction").scripts[0].entries
    assert [e.call_key for e in entries] == ["1/1", "compaction", "1/2"]
    assert [c["type"] for c in entries[1].entry.chunks] == [  # type: ignore[union-attr]
        "block-start", "block-end", "usage", "finish"]


def test_patch_throw_append_and_hang_samples() -> None:
    patched = load_scenario(SAMPLES / "patch-throw-append").scripts[0].entries
    assert [(e.entry.kind, e.origin) for e in patched] == [
        ("chunks", "derived"), ("throw", "patched"), ("chunks", "appended")]
    hang = load_scenario(SAMPLES / "hang-ready-file").scripts[0].entries
    assert [(e.entry.kind, e.origin) for e in hang] == [("chunks", "replaced"), ("hang", "replaced")]
    assert hang[1].entry.readyFile == "hang-ready.marker"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("name", "error", "code"),
    [
        ("broken-unfinished-call", DerivationError, "UNFINISHED_CALL"),
        ("broken-sidecar", SidecarError, "SIDECAR_INVALID"),
        ("broken-json-line", LogParseError, "LOG_PARSE"),
        ("broken-packed-row", LogParseError, "LOG_PARSE"),
    ],
)
def test_broken_samples_fail_with_typed_errors(name: str, error: type, code: str) -> None:
    with pytest.raises(error) as caught:
        load_scenario(SAMPLES / name)
    assert caught.value.code == code
    assert str(SAMPLES / name) in caught.value.message
    if name == "broken-sidecar":
        assert len(caught.value.problems) == 8
