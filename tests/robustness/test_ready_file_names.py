"""A readyFile that is no plain relative name inside the ready directory (a NUL byte, a lone
surrogate, a control or bidirectional formatting character, an absolute path, ``..``) is
refused by one rule (``models.ready_file_problem``): where the sidecar is read, by
``validate``, by the editor's entry check, and at serve time for a call that carries one
anyway (which never crashes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay_engine import ReplayEngine
from replay_engine.authoring.entry_text import parse_entry_text
from replay_engine.errors import READY_FILE, EntryTextError, InputError
from replay_engine.models import HangEntry, ScriptEntry, SessionScript, ready_file_problem
from replay_engine.scenario.sidecar import validate_sidecar

from .conftest import assert_typed_failure, cli

BAD_NAMES = ["a\x00b.marker", "lone-\ud83d.marker", "two\nlines.marker", "tab\t.marker",
             "gpj\u202eexe.marker", "iso\u2066late.marker", "\x85next.marker",
             "../outside.marker", "sub/../../outside.marker", "/etc/outside.marker"]
WHY = {"\x00": "NUL byte", "\ud83d": "no file name", "\n": "control character (U+000A",
       "\t": "control character (U+0009", "\u202e": "bidirectional formatting character (U+202E",
       "\u2066": "bidirectional formatting character (U+2066", "\x85": "control character (U+0085",
       "..": "contains '..'", "/etc": "is an absolute path"}


def _why(name: str) -> str:
    return next(why for key, why in WHY.items() if key in name)


@pytest.mark.parametrize("name", BAD_NAMES)
def test_validate_refuses_a_ready_file_no_file_can_have(scenario: Path, name: str) -> None:
    (scenario / "replay.override.json").write_text(
        json.dumps([{"kind": "hang", "readyFile": name}]), encoding="utf-8")
    result = cli("validate", str(scenario))
    assert_typed_failure(result)
    assert "entry 0.readyFile: " in result.stdout and _why(name) in result.stdout, result.stdout


@pytest.mark.parametrize("name", BAD_NAMES)
def test_the_sidecar_validator_names_the_problem(name: str) -> None:
    with pytest.raises(InputError) as caught:
        validate_sidecar([{"kind": "hang", "readyFile": name}], "side.json")
    assert "entry 0.readyFile" in caught.value.message
    assert _why(name) in caught.value.message


@pytest.mark.anyio
@pytest.mark.parametrize("name", BAD_NAMES)
async def test_a_call_carrying_one_fails_as_a_ready_file_error(tmp_path: Path, name: str) -> None:
    entry = HangEntry.model_construct(kind="hang", readyFile=name)  # past every validator
    script = SessionScript(recorded_id="s", created_at=0, primary=True,
                           entries=[ScriptEntry(entry, "replaced")])
    engine = ReplayEngine([script], ready_dir=tmp_path)
    handle = engine.open_call(None)
    with pytest.raises(InputError) as caught:
        async for _ in handle.chunks():
            pass
    problem = ready_file_problem(name)
    assert problem is not None
    assert caught.value.code == READY_FILE and f"the readyFile {problem}" in caught.value.message
    assert not any(c in caught.value.message for c in "\x00\n\t\u202e\u2066\x85")
    (record,) = engine.journal()
    assert record.outcome == "failed" and record.code == READY_FILE
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", BAD_NAMES)
def test_the_editors_entry_check_refuses_it_where_it_is(name: str) -> None:
    text = '{"kind": "hang",\n "readyFile": ' + json.dumps(name) + "}"
    with pytest.raises(EntryTextError) as caught:
        parse_entry_text(text)
    (problem,) = caught.value.problems
    assert (problem.location, problem.line, problem.column) == ("readyFile", 2, 15)
    assert _why(name) in problem.message


@pytest.mark.parametrize("name", ["ready.marker", "sub/dir/ready.marker", "a b.marker",
                                  "caf\u00e9.marker", "x..y.marker"])
def test_plain_relative_names_pass(name: str) -> None:
    assert ready_file_problem(name) is None
