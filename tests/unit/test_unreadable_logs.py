"""A log that holds a log's name but cannot be read is an error naming it, never skipped.

A scenario replays every ``session.N.jsonl`` it holds: one silently left out would make the
scenario replay fewer sessions than were recorded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from replay_engine import LogParseError, load_scenario
from replay_engine.authoring.unfinished import load_primary_for_authoring
from replay_engine.cli.dispatch import main
from replay_engine.scenario.check import validate_scenario
from tests.unit.logtools import call_events, header, text_chunks, write_scenario

ONE_CALL = call_events(1, 1, text_chunks("hi"))


def dangling(path: Path) -> str:
    os.symlink(path.parent / "gone.jsonl", path)
    return "is a symbolic link to"


def directory(path: Path) -> str:
    path.mkdir()
    return "is a directory, not a file"


def failing_read(path: Path) -> str:
    """A file that opens but whose read fails, even for root: /proc/self/mem at offset 0."""
    if not sys.platform.startswith("linux"):
        pytest.skip("needs Linux's /proc/self/mem (a file whose read fails with EIO)")
    os.symlink("/proc/self/mem", path)
    return "cannot read the session log (Input/output error)"


def no_permission(path: Path) -> str:
    if os.geteuid() == 0:
        pytest.skip("root reads a mode-000 file; failing_read covers an unreadable file for root")
    path.write_text("{}\n")
    path.chmod(0)
    return "cannot read the session log (Permission denied)"


KINDS: dict[str, Callable[[Path], str]] = {
    "dangling-symlink": dangling,
    "directory": directory,
    "read-fails": failing_read,
    "no-permission": no_permission,
}


@pytest.mark.parametrize("kind", KINDS)
def test_unreadable_child_is_an_error_naming_it(kind: str, tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", (header("p"), ONE_CALL), [(header("c1"), ONE_CALL)])
    bad = root / "session.2.jsonl"
    fragment = KINDS[kind](bad)
    with pytest.raises(LogParseError) as caught:
        load_scenario(root)
    assert caught.value.file == str(bad)
    assert caught.value.message.startswith(f"{bad}: ")
    assert fragment in caught.value.message
    assert "restore the log, or remove or rename it" in caught.value.message
    (problem,) = validate_scenario(str(root))
    assert problem == caught.value.message


@pytest.mark.parametrize("kind", KINDS)
def test_unreadable_primary_is_an_error_not_a_missing_log(kind: str, tmp_path: Path) -> None:
    """Even with a bare-list sidecar (which only reads the primary's header)."""
    root = write_scenario(tmp_path / "s", None, sidecar=[{"kind": "hang"}])
    bad = root / "session.jsonl"
    fragment = KINDS[kind](bad)
    with pytest.raises(LogParseError) as caught:
        load_scenario(root)
    assert caught.value.file == str(bad) and fragment in caught.value.message
    with pytest.raises(LogParseError) as authoring:
        load_primary_for_authoring(bad)
    assert fragment in authoring.value.message


def test_validate_prints_the_unreadable_child_and_fails(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    root = write_scenario(tmp_path / "s", (header("p"), ONE_CALL))
    dangling(root / "session.1.jsonl")
    assert main(["validate", str(root)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {root}: 1 problem(s)" in out
    assert f"{root / 'session.1.jsonl'}: the session log is a symbolic link to" in out


def test_names_that_are_not_children_are_still_ignored(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", (header("p"), ONE_CALL))
    (root / "session.expected.jsonl").mkdir()
    dangling(root / "session.1.jsonl.bak")
    assert len(load_scenario(root).scripts) == 1
