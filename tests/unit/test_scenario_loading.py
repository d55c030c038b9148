"""docs/format.md#scenario-directory: scenario directories and the DSH_SNAPSHOT_* variables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from replay_engine import (
    ReplayConfig,
    ScenarioNotFoundError,
    load_replay_script,
    load_scenario,
    load_session_scripts,
)
from replay_engine.scenario.loading import config_from_directory, config_from_env
from tests.unit.logtools import call_events, header, text_chunks, write_log, write_scenario

ONE_CALL = call_events(1, 1, text_chunks("hi"))


def _ids(scenario_scripts: list) -> list[str]:
    return [s.recorded_id for s in scenario_scripts]


@pytest.mark.parametrize(
    ("names", "children"),
    [
        (["session.1.jsonl", "session.2.jsonl"], ["session.1.jsonl", "session.2.jsonl"]),
        (["session.10.jsonl", "session.2.jsonl"], ["session.2.jsonl", "session.10.jsonl"]),
        (["session.expected.jsonl", "session.1.json", "session.a1.jsonl", "session..jsonl",
          "session.1.jsonl.bak", "xsession.1.jsonl", "session.-1.jsonl"], []),
        (["session.007.jsonl"], ["session.007.jsonl"]),
    ],
    ids=["plain", "numeric-order", "not-children", "leading-zeros"],
)
def test_directory_children_are_exactly_digit_names(tmp_path: Path, names: list[str],
                                                    children: list[str]) -> None:
    write_scenario(tmp_path, (header("p"), ONE_CALL))
    for name in names:
        write_log(tmp_path / name, header(name), ONE_CALL)
    config = config_from_directory(tmp_path)
    assert [Path(p).name for p in config.childFiles] == children
    assert config.file == str(tmp_path / "session.jsonl")
    assert config.overrideFile == str(tmp_path / "replay.override.json")


def test_directory_with_child_directory_named_like_a_log(tmp_path: Path) -> None:
    """Listed, so that loading it fails naming it (tests/unit/test_unreadable_logs.py)."""
    write_scenario(tmp_path, (header("p"), ONE_CALL))
    (tmp_path / "session.1.jsonl").mkdir()
    assert config_from_directory(tmp_path).childFiles == [str(tmp_path / "session.1.jsonl")]


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_directory_not_found(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "nope"
    if kind == "file":
        target.write_text("{}")
    with pytest.raises(ScenarioNotFoundError) as caught:
        load_scenario(target)
    assert str(target) in caught.value.message
    assert "session.jsonl" in caught.value.message
    assert caught.value.code == "SCENARIO_NOT_FOUND"


def test_directory_missing_primary_names_fix(tmp_path: Path) -> None:
    with pytest.raises(ScenarioNotFoundError) as caught:
        load_scenario(tmp_path)
    message = caught.value.message
    assert str(tmp_path / "session.jsonl") in message
    assert "replay.override.json" in message


def test_missing_sidecar_file_is_ignored(tmp_path: Path) -> None:
    write_scenario(tmp_path, (header("p"), ONE_CALL))
    scenario = load_scenario(tmp_path)
    assert scenario.sidecar_form is None
    assert [e.origin for e in scenario.scripts[0].entries] == ["derived"]


def _env_scenario(tmp_path: Path) -> dict[str, Path]:
    a = write_log(tmp_path / "a" / "main.jsonl", header("main", 5), ONE_CALL)
    b = write_log(tmp_path / "b" / "kid-one.jsonl", header("kid1", 20), ONE_CALL)
    c = write_log(tmp_path / "c" / "kid-two.jsonl", header("kid2", 10), ONE_CALL)
    return {"primary": a, "child1": b, "child2": c}


@pytest.mark.parametrize(
    ("children_value", "expected"),
    [
        ("{child1}{sep}{child2}", ["main", "kid2", "kid1"]),
        ("{child1}", ["main", "kid1"]),
        ("", ["main"]),
        ("{sep}{child1}{sep}", ["main", "kid1"]),
        (None, ["main"]),
    ],
    ids=["two", "one", "empty-is-none", "empty-segments-skipped", "unset"],
)
def test_env_variables(tmp_path: Path, children_value: str | None, expected: list[str]) -> None:
    files = _env_scenario(tmp_path)
    env = {"DSH_SNAPSHOT_FILE": str(files["primary"])}
    if children_value is not None:
        env["DSH_SNAPSHOT_CHILD_FILES"] = children_value.format(
            sep=os.pathsep, child1=files["child1"], child2=files["child2"]
        )
    scenario = load_scenario(env)
    assert _ids(scenario.scripts) == expected
    assert scenario.root is None
    assert set(scenario.headers) == {Path(s.file).name for s in scenario.scripts if s.file}


def test_env_children_split_on_os_path_separator_only(tmp_path: Path) -> None:
    files = _env_scenario(tmp_path)
    other = ";" if os.pathsep == ":" else ":"
    env = {
        "DSH_SNAPSHOT_FILE": str(files["primary"]),
        "DSH_SNAPSHOT_CHILD_FILES": f"{files['child1']}{other}{files['child2']}",
    }
    with pytest.raises(ScenarioNotFoundError) as caught:
        load_scenario(env)
    assert "child session log not found" in caught.value.message


@pytest.mark.parametrize("value", [None, ""], ids=["unset", "empty"])
def test_env_missing_primary(value: str | None) -> None:
    env = {} if value is None else {"DSH_SNAPSHOT_FILE": value}
    with pytest.raises(ScenarioNotFoundError) as caught:
        load_scenario(env)
    assert "DSH_SNAPSHOT_FILE" in caught.value.message


def test_env_primary_path_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "gone.jsonl"
    with pytest.raises(ScenarioNotFoundError) as caught:
        load_scenario({"DSH_SNAPSHOT_FILE": str(missing)})
    assert str(missing) in caught.value.message


def test_env_override_applies_and_missing_override_is_ignored(tmp_path: Path) -> None:
    files = _env_scenario(tmp_path)
    env = {"DSH_SNAPSHOT_FILE": str(files["primary"]),
           "DSH_SNAPSHOT_OVERRIDE": str(tmp_path / "absent.json")}
    assert load_scenario(env).sidecar_form is None
    sidecar = tmp_path / "elsewhere.json"
    sidecar.write_text('[{"kind":"hang"}]')
    env["DSH_SNAPSHOT_OVERRIDE"] = str(sidecar)
    scenario = load_scenario(env)
    assert scenario.sidecar_form == "list"
    assert [e.entry.kind for e in scenario.scripts[0].entries] == ["hang"]


def test_env_sidecar_without_primary_log(tmp_path: Path) -> None:
    sidecar = tmp_path / "only.json"
    sidecar.write_text('[{"kind":"hang","readyFile":"r"}]')
    scenario = load_scenario({"DSH_SNAPSHOT_FILE": "", "DSH_SNAPSHOT_OVERRIDE": str(sidecar)})
    primary = scenario.scripts[0]
    assert (primary.recorded_id, primary.created_at, primary.file) == ("", 0, None)
    assert scenario.headers == {}


def test_env_from_process_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _env_scenario(tmp_path)
    monkeypatch.setenv("DSH_SNAPSHOT_FILE", str(files["primary"]))
    monkeypatch.setenv("DSH_SNAPSHOT_CHILD_FILES", str(files["child2"]))
    monkeypatch.delenv("DSH_SNAPSHOT_OVERRIDE", raising=False)
    assert _ids(load_scenario().scripts) == ["main", "kid2"]
    assert config_from_env().childFiles == [str(files["child2"])]


def test_config_helpers(tmp_path: Path) -> None:
    files = _env_scenario(tmp_path)
    sidecar = tmp_path / "sc.json"
    sidecar.write_text('{"patches":[{"at":1,"entry":{"kind":"hang"}}]}')
    config = ReplayConfig(file=str(files["primary"]), overrideFile=str(sidecar),
                          childFiles=[str(files["child1"])])
    scripts = load_session_scripts(config)
    assert _ids(scripts) == ["main", "kid1"]
    primary = load_replay_script(config)
    assert [(e.entry.kind, e.origin) for e in primary] == [("chunks", "derived"), ("hang", "appended")]
