"""Sidecars and logs that are not regular files, and unreadable paths: a typed error naming
them from every command, never a silent skip, a hang on a FIFO, or a bare OSError."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .conftest import assert_typed_failure, cli

SIDE = "replay.override.json"


def _make(scenario: Path, name: str, kind: str) -> Path:
    target = scenario / name
    if kind == "directory":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "loop":
        target.symlink_to(name)
    return target


@pytest.mark.parametrize("kind", ["directory", "fifo", "loop"])
@pytest.mark.parametrize("name", [SIDE, "session.1.jsonl"])
def test_not_a_file_is_named_by_validate_and_inspect(scenario: Path, name: str, kind: str) -> None:
    _make(scenario, name, kind)
    words = {"directory": "directory", "fifo": "FIFO", "loop": "symbolic link loop"}[kind]
    code = "SIDECAR_INVALID" if name == SIDE else "LOG_UNREADABLE"
    result = cli("validate", str(scenario))
    assert_typed_failure(result)
    assert f"FAIL {scenario}" in result.stdout
    assert name in result.stdout and words in result.stdout
    result = cli("inspect", "--json", str(scenario))
    assert_typed_failure(result)
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and doc["code"] == code and name in doc["error"]
    result = cli("inspect", str(scenario))
    assert_typed_failure(result, code)


def test_validate_checks_every_scenario_after_a_symlink_loop(tmp_path: Path, scenario: Path) -> None:
    looped = tmp_path / "looped"
    looped.symlink_to(looped)
    result = cli("validate", str(looped), str(scenario))
    assert_typed_failure(result)
    assert f"FAIL {looped}" in result.stdout and "symbolic link loop" in result.stdout
    assert f"ok   {scenario}" in result.stdout


def test_inspect_json_on_a_symlink_loop_prints_json(tmp_path: Path) -> None:
    looped = tmp_path / "looped"
    looped.symlink_to(looped)
    result = cli("inspect", "--json", str(looped))
    assert_typed_failure(result)
    assert json.loads(result.stdout)["code"] == "SCENARIO_NOT_FOUND"


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["directory", "fifo", "loop"])
async def test_reload_onto_a_bad_sidecar_keeps_the_last_good_scripts(scenario: Path,
                                                                    kind: str) -> None:
    import httpx

    from replay_engine.server import serve_scenario

    async with serve_scenario(scenario) as server, httpx.AsyncClient(base_url=server.url) as http:
        before = (await http.get("/replay/v1/scripts")).json()
        _make(scenario, SIDE, kind)
        r = await http.post("/replay/v1/reload", json={})
        assert r.status_code == 409 and r.json()["code"] == "SIDECAR_INVALID", r.text
        assert (await http.get("/replay/v1/scripts")).json() == before
        r = await http.post("/v1/chat/completions", json={
            "model": "m", "stream": False, "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200, r.text


@pytest.mark.parametrize("kind", ["directory", "fifo", "loop"])
def test_chunks_file_and_config_that_are_not_files(scenario: Path, tmp_path: Path,
                                                   kind: str) -> None:
    target = _make(tmp_path, "input.json", kind)
    result = cli("override", str(scenario), "--at", "0", "--chunks-file", str(target))
    assert_typed_failure(result, "INPUT")
    assert "input.json: the --chunks-file is" in result.stderr
    result = cli("serve", str(scenario), "--config", str(target))
    assert_typed_failure(result, "CONFIG")
    assert "input.json: the config file is" in result.stderr
