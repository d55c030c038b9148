"""The override authoring model: edits, preview, exact files written, atomic save, engine reload."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from replay_engine import ReplayEngine, load_scenario
from replay_engine.authoring.draft import (
    EntryTextError,
    OverrideDraft,
    atomic_write,
    fingerprint,
    parse_entry_text,
)
from replay_engine.errors import AbortedError, ConfigError, ReplayError, SidecarError
from replay_engine.models import ChunksEntry, ReplayConfig, ThrowEntry
from replay_engine.scenario.loading import load_scenario_config

SAMPLES = Path(__file__).resolve().parents[2] / "sample_scenarios"


@pytest.fixture
def scenario_dir(tmp_path: Path) -> Path:
    """A private copy of the basic-chat sample (2 recorded calls, 10 and 6 chunks)."""
    target = tmp_path / "basic-chat"
    shutil.copytree(SAMPLES / "basic-chat", target)
    return target


def derived_json(root: Path) -> list[dict[str, Any]]:
    scenario = load_scenario(root)
    assert scenario.derived_primary is not None
    return [e.to_json() for e in scenario.derived_primary]


def serve_all(root: Path, calls: int) -> list[tuple[list[dict[str, Any]], ReplayError | None]]:
    """Serve ``calls`` calls of the primary from a fresh load through a real engine's reload."""

    async def run() -> list[tuple[list[dict[str, Any]], ReplayError | None]]:
        engine = ReplayEngine([], ready_dir=root)
        engine.reload(load_scenario(root).scripts)
        out: list[tuple[list[dict[str, Any]], ReplayError | None]] = []
        for _ in range(calls):
            got: list[dict[str, Any]] = []
            try:
                async for chunk in engine.stream("s1"):
                    got.append(chunk)
            except ReplayError as exc:
                out.append((got, exc))
            else:
                out.append((got, None))
        engine.assert_consumed()
        return out

    return asyncio.run(run())


def sidecar(root: Path) -> Path:
    return root / "replay.override.json"


def expected_bytes(doc: Any) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


def test_new_draft_is_patches_form_and_clean(scenario_dir: Path) -> None:
    draft = OverrideDraft.open(load_scenario(scenario_dir))
    assert draft.form == "patches"
    assert draft.base_length == 2
    assert not draft.dirty
    assert [e.to_json() for e in draft.effective()] == derived_json(scenario_dir)
    assert all(not c.changed and not c.edited for c in draft.compare())
    assert draft.render() == '{\n  "patches": []\n}\n'


def test_throw_here_writes_exact_file_and_engine_serves_it(scenario_dir: Path) -> None:
    derived = derived_json(scenario_dir)
    draft = OverrideDraft.open(load_scenario(scenario_dir))
    draft.throw_here(1, "rate limited", "RATE_LIMIT", prefix=2)
    assert draft.dirty
    saved = draft.save()
    want = {"patches": [{"at": 1, "entry": {"kind": "throw", "chunks": derived[1]["chunks"][:2],
                                             "message": "rate limited", "code": "RATE_LIMIT"}}]}
    assert sidecar(scenario_dir).read_bytes() == expected_bytes(want) == saved.data
    assert saved.written and saved.backup is None and saved.is_current()
    assert saved.sha256 == fingerprint(sidecar(scenario_dir))
    assert not draft.dirty
    served = serve_all(scenario_dir, 2)
    assert served[0] == (derived[0]["chunks"], None)
    chunks, error = served[1]
    assert chunks == derived[1]["chunks"][:2]
    assert error is not None and error.code == "RATE_LIMIT" and error.message == "rate limited"


def test_throw_prefix_zero_and_out_of_range(scenario_dir: Path) -> None:
    draft = OverrideDraft.open(load_scenario(scenario_dir))
    entry = draft.throw_here(0, "nope", "AUTH")
    assert isinstance(entry, ThrowEntry) and entry.chunks == []
    with pytest.raises(SidecarError, match=r"prefix 7 is out of range: call 1 has 6 recorded"):
        draft.throw_here(1, "x", "SERVER", prefix=7)
    with pytest.raises(SidecarError, match=r"prefix -1"):
        draft.throw_here(1, "x", "SERVER", prefix=-1)
    with pytest.raises(SidecarError, match=r"call 1\.code: must be a non-empty string"):
        draft.throw_here(1, "x", "", prefix=1)
    with pytest.raises(SidecarError, match=r"call 3 does not exist: the derived primary script "
                                           r"has 2 call\(s\)"):
        draft.throw_here(3, "x", "SERVER")
    # the append slot has no recorded chunks: only prefix 0
    draft.throw_here(2, "after", "SERVER")
    with pytest.raises(SidecarError, match="call 2 has 0 recorded chunk"):
        draft.throw_here(2, "after", "SERVER", prefix=1)


def test_hang_here_with_ready_file_is_served_until_cancelled(scenario_dir: Path) -> None:
    draft = OverrideDraft.open(load_scenario(scenario_dir))
    draft.hang_here(0, "ready.marker")
    draft.save()
    assert sidecar(scenario_dir).read_bytes() == expected_bytes(
        {"patches": [{"at": 0, "entry": {"kind": "hang", "readyFile": "ready.marker"}}]})
    with pytest.raises(SidecarError, match="readyFile"):
        draft.hang_here(1, "")

    async def run() -> tuple[list[dict[str, Any]], bool]:
        engine = ReplayEngine(load_scenario(scenario_dir).scripts, ready_dir=scenario_dir)
        handle = engine.open_call("s")
        got: list[dict[str, Any]] = []
        with pytest.raises(AbortedError):
            async for chunk in handle.chunks():
                got.append(chunk)
                if len(got) == 2:
                    handle.cancel()
        return got, (scenario_dir / "ready.marker").exists()

    got, ready = asyncio.run(run())
    assert [c["type"] for c in got] == ["block-start", "text-delta"]
    assert ready


def test_set_entry_text_append_and_chunk_diff(scenario_dir: Path) -> None:
    derived = derived_json(scenario_dir)
    draft = OverrideDraft.open(load_scenario(scenario_dir))
    edited = [*derived[1]["chunks"][:1], {"type": "text-delta", "index": 0, "text": "Hi!"},
              *derived[1]["chunks"][-2:]]
    draft.set_entry_text(1, json.dumps(edited))
    index = draft.append(ThrowEntry(chunks=[], message="again", code="SERVER"))
    assert index == 2
    with pytest.raises(SidecarError, match="already appended"):
        draft.append(ChunksEntry(chunks=[]))
    rows = draft.compare()
    assert [(r.index, r.edited, r.changed) for r in rows] == [
        (0, False, False), (1, True, True), (2, True, True)]
    ops = [(c.op, c.chunk.get("text")) for c in rows[1].chunk_changes if c.op != "same"]
    assert ops == [("removed", derived[1]["chunks"][1]["text"]),
                   *[("removed", c.get("text")) for c in derived[1]["chunks"][2:-2]],
                   ("added", "Hi!")]
    assert rows[2].notes == ("added",) and rows[2].derived is None
    draft.save()
    assert json.loads(sidecar(scenario_dir).read_text()) == {"patches": [
        {"at": 1, "entry": {"kind": "chunks", "chunks": edited}},
        {"at": 2, "entry": {"kind": "throw", "chunks": [], "message": "again", "code": "SERVER"}},
    ]}
    served = serve_all(scenario_dir, 3)
    assert served[1] == (edited, None)
    assert served[2][0] == [] and served[2][1] is not None and served[2][1].code == "SERVER"


def test_remove_patch_goes_back_to_derived_and_keeps_backup(scenario_dir: Path) -> None:
    derived = derived_json(scenario_dir)
    draft = OverrideDraft.open(load_scenario(scenario_dir))
    draft.throw_here(0, "boom", "SERVER")
    first = draft.save().data
    again = OverrideDraft.open(load_scenario(scenario_dir))
    assert again.patches and not again.dirty
    with pytest.raises(SidecarError, match=r"call 1 is not patched.*patched calls: 0"):
        again.remove(1)
    again.remove(0)
    saved = again.save()
    assert sidecar(scenario_dir).read_bytes() == b'{\n  "patches": []\n}\n'
    assert saved.backup == scenario_dir / "replay.override.json.bak"
    assert saved.backup.read_bytes() == first
    assert [c for c, _ in serve_all(scenario_dir, 2)] == [d["chunks"] for d in derived]


def test_bare_list_stays_a_list_and_edits_apply_to_entries(scenario_dir: Path) -> None:
    original = [{"kind": "chunks", "chunks": [{"type": "finish", "reason": {"kind": "stop"}}]},
                {"kind": "hang"}]
    sidecar(scenario_dir).write_text(json.dumps(original))
    draft = OverrideDraft.open(load_scenario(scenario_dir))
    assert draft.form == "list" and draft.base_length == 2
    assert draft.derived is not None  # the log exists: the preview shows it beside the list
    draft.throw_here(0, "denied", "AUTH", prefix=1)
    draft.append(ChunksEntry(chunks=[{"type": "finish", "reason": {"kind": "stop"}}]))
    draft.remove(1)
    with pytest.raises(SidecarError, match=r"call 5 does not exist: the bare-list sidecar has 2"):
        draft.remove(5)
    saved = draft.save()
    want = [{"kind": "throw", "chunks": [{"type": "finish", "reason": {"kind": "stop"}}],
             "message": "denied", "code": "AUTH"},
            {"kind": "chunks", "chunks": [{"type": "finish", "reason": {"kind": "stop"}}]}]
    assert sidecar(scenario_dir).read_bytes() == expected_bytes(want)
    assert saved.backup is not None and json.loads(saved.backup.read_text()) == original
    served = serve_all(scenario_dir, 2)
    assert served[0][1] is not None and served[0][1].code == "AUTH"
    assert served[1] == ([{"type": "finish", "reason": {"kind": "stop"}}], None)


def test_bare_list_without_primary_log(tmp_path: Path) -> None:
    root = tmp_path / "s"
    root.mkdir()
    sidecar(root).write_text('[{"kind": "hang"}]')
    draft = OverrideDraft.open(load_scenario(root))
    assert draft.form == "list" and draft.derived is None
    draft.hang_here(0, "r")
    draft.save()
    assert sidecar(root).read_bytes() == expected_bytes([{"kind": "hang", "readyFile": "r"}])


def test_invalid_document_is_never_saved(scenario_dir: Path) -> None:
    draft = OverrideDraft.open(load_scenario(scenario_dir))
    draft.throw_here(0, "ok", "SERVER")
    draft.save()
    before = sidecar(scenario_dir).read_bytes()
    draft.put(1, ThrowEntry.model_construct(kind="throw", chunks=[], message="", code="X"))
    with pytest.raises(SidecarError, match=r"patch 1\.entry\.message"):
        draft.save()
    assert sidecar(scenario_dir).read_bytes() == before
    assert not (scenario_dir / "replay.override.json.bak").exists()


def test_failed_rename_leaves_old_file_and_no_temp(scenario_dir: Path) -> None:
    draft = OverrideDraft.open(load_scenario(scenario_dir))
    draft.throw_here(0, "first", "SERVER")
    draft.save()
    before = sidecar(scenario_dir).read_bytes()
    draft.throw_here(0, "second", "SERVER")

    def failing(src: str, dst: str) -> None:
        if Path(dst) == sidecar(scenario_dir):
            raise OSError(28, "No space left on device")
        os.replace(src, dst)

    with pytest.raises(OSError, match="No space"):
        draft.save(rename=failing)
    assert sidecar(scenario_dir).read_bytes() == before
    assert sorted(p.name for p in scenario_dir.iterdir()) == [
        "replay.override.json", "replay.override.json.bak", "session.jsonl"]
    assert draft.dirty  # the edit is still in the draft and can be saved once the disk is fixed
    draft.save()
    assert b'"second"' in sidecar(scenario_dir).read_bytes()


def test_atomic_write_keeps_permissions_and_cleans_up(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    target.write_bytes(b"old")
    target.chmod(0o640)
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640

    def boom(src: str, dst: str) -> None:
        raise OSError("rename failed")

    with pytest.raises(OSError):
        atomic_write(target, b"newer", rename=boom)
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_saving_identical_content_touches_nothing(scenario_dir: Path) -> None:
    draft = OverrideDraft.open(load_scenario(scenario_dir))
    draft.hang_here(1)
    first = draft.save()
    mtime = sidecar(scenario_dir).stat().st_mtime_ns
    again = OverrideDraft.open(load_scenario(scenario_dir)).save()
    assert not again.written and again.sha256 == first.sha256 and again.backup is None
    assert sidecar(scenario_dir).stat().st_mtime_ns == mtime
    assert not (scenario_dir / "replay.override.json.bak").exists()


def test_save_refuses_to_clobber_a_file_changed_on_disk(scenario_dir: Path) -> None:
    draft = OverrideDraft.open(load_scenario(scenario_dir))
    draft.hang_here(1)
    sidecar(scenario_dir).write_text('{"patches": [{"at": 0, "entry": {"kind": "hang"}}]}')
    with pytest.raises(SidecarError, match="changed on disk") as info:
        draft.save()
    assert info.value.code == "SIDECAR_CHANGED"
    assert "at\": 0" in sidecar(scenario_dir).read_text()


def test_open_rejects_invalid_sidecar_and_missing_path(scenario_dir: Path) -> None:
    scenario = load_scenario(scenario_dir)
    sidecar(scenario_dir).write_text('{"patches": [{"at": 0}]}')
    with pytest.raises(SidecarError, match=r"patch 0\.entry"):
        OverrideDraft.open(scenario)
    env_scenario = load_scenario_config(ReplayConfig(file=str(scenario_dir / "session.jsonl")))
    with pytest.raises(ConfigError, match="DSH_SNAPSHOT_OVERRIDE"):
        OverrideDraft.open(env_scenario)


@pytest.mark.parametrize(
    ("text", "line", "column", "location", "message"),
    [
        ('{\n  "kind": "chunks",\n  "chunks": [\n    {"type": "bogus"}\n  ]\n}', 4, 5,
         "chunks[0]", "chunk type 'bogus'"),
        ('[\n  {"type": "finish"},\n  5\n]', 3, 3, "[1]", "a chunk must be a JSON object"),
        ('[\n  {"type": "finish"},\n', 3, 1, "", "not valid JSON"),
        ('{"kind": "throw", "chunks": [], "message": "m", "code": ""}', 1, 57, "code",
         "non-empty"),
        ('{"kind": "hang", "extra": 1}', 1, 27, "extra", "unknown key"),
        ('{"kind": "nap"}', 1, 1, "", "kind 'nap' is not one of"),
        ("[NaN]", 1, 1, "", "NaN is not JSON"),
    ],
)
def test_entry_text_errors_point_at_the_location(
    text: str, line: int, column: int, location: str, message: str
) -> None:
    with pytest.raises(EntryTextError) as info:
        parse_entry_text(text, "editor")
    problem = info.value.problems[0]
    assert (problem.line, problem.column, problem.location) == (line, column, location)
    assert message in problem.message
    assert str(info.value).startswith(f"editor:{line}:{column}: ")


def test_entry_text_accepts_a_chunk_list_or_an_entry() -> None:
    assert parse_entry_text('[{"type": "finish", "replayState": {"a": 1}}]') == ChunksEntry(
        chunks=[{"type": "finish", "replayState": {"a": 1}}])
    assert parse_entry_text('{"kind": "hang", "readyFile": "x"}').kind == "hang"
