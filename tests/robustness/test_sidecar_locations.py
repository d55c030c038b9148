"""Every sidecar error names its place: a file that is not UTF-8 its first bad byte (line,
column, byte offset), one nested too deep the first array or object past the limit (line,
column, JSON path), and each problem of one that does not validate its line and column, in
``validate``, the load every front end does, the debugger's banner and the editor's raw mode
alike (one rule: ``jsonlocate``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from replay_engine import ReplayEngine, SidecarError, load_scenario
from replay_engine.authoring.raw import open_raw_sidecar
from replay_engine.jsonlimits import MAX_JSON_DEPTH
from tests.robustness.conftest import assert_typed_failure, cli

SIDE = "replay.override.json"
BAD_UTF8 = b'[\n  {"kind": "chunks", "chunks": [\n    {"type": "text-delta", "text": "caf\xe9"}]}\n]\n'
"""A latin-1 ``é`` on line 3, column 40 (in bytes): byte offset 74."""
INVALID = '[\n  {"kind": "chunks", "chunks": []},\n  {"kind": "hang", "wat": 1}\n]\n'


def _deep() -> str:
    return '[{"kind": "chunks", "chunks": [\n  {"type": "finish", "x": ' \
        + "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH + "}]}]"


def test_a_sidecar_that_is_not_utf8_names_its_first_bad_byte(scenario: Path) -> None:
    (scenario / SIDE).write_bytes(BAD_UTF8)
    offset = BAD_UTF8.index(b"\xe9")
    column = offset - BAD_UTF8.rindex(b"\n", 0, offset)
    with pytest.raises(SidecarError) as failed:
        load_scenario(scenario)
    assert failed.value.line == 3
    assert f"{SIDE}:3:{column}: not UTF-8 text (byte 0xe9 at byte offset {offset}" \
        in failed.value.message
    result = cli("validate", str(scenario))
    assert_typed_failure(result)
    assert f"{SIDE}:3:{column}: not UTF-8" in result.stdout + result.stderr
    raw = open_raw_sidecar(scenario)  # the editor's raw mode says the same place
    assert raw.read_problem is not None and raw.read_problem.startswith(
        f"line 3, column {column} (byte offset {offset})")


def test_a_sidecar_nested_too_deep_names_where_and_its_json_path(scenario: Path) -> None:
    text = _deep()
    (scenario / SIDE).write_text(text)
    with pytest.raises(SidecarError) as failed:
        load_scenario(scenario)
    column = len('  {"type": "finish", "x": ') + MAX_JSON_DEPTH - 4 + 1  # 4 levels above x
    where = failed.value.location
    assert failed.value.line == 2 and where is not None
    assert where.startswith("entry 0.chunks[0].x[0]") and "…" in where
    assert f"{SIDE}:2:{column}: {where}: the sidecar is nested deeper" in failed.value.message
    problems = open_raw_sidecar(scenario).problems(text)
    assert [(p.line, p.column, p.location) for p in problems] == [(2, column, where)]


def test_each_problem_is_listed_with_its_line_and_column(scenario: Path) -> None:
    (scenario / SIDE).write_text(INVALID)
    with pytest.raises(SidecarError) as failed:
        load_scenario(scenario)
    assert "line 3, column 27: entry 1.wat: unknown key" in failed.value.message
    result = cli("validate", str(scenario))
    assert_typed_failure(result)
    assert "line 3, column 27: entry 1.wat: unknown key" in result.stdout + result.stderr
    raw = open_raw_sidecar(scenario)  # the raw mode's rule, the same places
    assert [(p.line, p.column, p.location) for p in raw.problems(INVALID)] == [
        (3, 27, "entry 1.wat")]


@pytest.mark.anyio
async def test_the_debugger_banner_shows_the_place(scenario: Path, tmp_path: Path) -> None:
    from dsh_replay_tui.headless.loading import ScenarioLoader
    from dsh_replay_tui.headless.state import AppOptions, DebugState

    from tests.app.test_layout import _Guard, _RecordingView

    root = tmp_path / "banner"
    shutil.copytree(scenario, root)
    (root / SIDE).write_bytes(BAD_UTF8)
    view = _RecordingView()
    loader = ScenarioLoader(DebugState(AppOptions(scenario=root), ReplayEngine([])), view,
                            _Guard())
    assert not await loader.load(initial=True)
    (root / SIDE).write_text(INVALID)
    assert not await loader.load(initial=True)
    shown = [error.message for _, error in view.errors]
    assert ":3:" in shown[0] and "byte offset" in shown[0]
    assert "line 3, column 27: entry 1.wat" in shown[1]
    assert json.loads(INVALID)  # the document is JSON: only its entries are wrong
