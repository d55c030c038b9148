"""A readyFile no file system can hold (a NUL byte, a lone surrogate) is refused where the
sidecar is read, by ``validate`` too, and never crashes a call that carries one anyway."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay_engine import ReplayEngine
from replay_engine.errors import READY_FILE, InputError
from replay_engine.models import HangEntry, ScriptEntry, SessionScript
from replay_engine.scenario.sidecar import validate_sidecar

from .conftest import assert_typed_failure, cli

BAD_NAMES = ["a\x00b.marker", "lone-\ud83d.marker"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_validate_refuses_a_ready_file_no_file_can_have(scenario: Path, name: str) -> None:
    (scenario / "replay.override.json").write_text(
        json.dumps([{"kind": "hang", "readyFile": name}]), encoding="utf-8")
    result = cli("validate", str(scenario))
    assert_typed_failure(result)
    assert "entry 0.readyFile: holds" in result.stdout, result.stdout


@pytest.mark.parametrize("name", BAD_NAMES)
def test_the_sidecar_validator_names_the_problem(name: str) -> None:
    with pytest.raises(InputError) as caught:
        validate_sidecar([{"kind": "hang", "readyFile": name}], "side.json")
    assert "entry 0.readyFile" in caught.value.message
    assert ("NUL byte" if "\x00" in name else "no file name") in caught.value.message


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
    assert caught.value.code == READY_FILE and "readyFile holds" in caught.value.message
    assert "\x00" not in caught.value.message
    (record,) = engine.journal()
    assert record.outcome == "failed" and record.code == READY_FILE
    assert list(tmp_path.iterdir()) == []
