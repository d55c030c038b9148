"""Safe re-recording: a recording is made beside the scenario and replaces it only when it
succeeded, keeping what it replaces as numbered backups.

``attempt_directory`` makes ``NAME.recording-N`` beside the scenario directory ``NAME`` (a
fresh N, never one that exists), where the recorder writes. ``attempt_problems`` says why an
attempt must not replace the scenario (a call that failed upstream, a call still streaming,
a write that failed, nothing recorded). ``install`` writes new scenario files in, each old one
first kept as ``FILE.bak.N`` (one N for the set, never an existing one), and ``promote`` does
it for a whole attempt. A failed attempt is left where it is, for the user to read.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..files import atomic_write, exclusive_lock
from .directory import existing_scenario_files, keep_backups
from .writer import ScenarioRecorder

ATTEMPT_INFIX = ".recording-"
"""``NAME.recording-N``: the directory of one recording attempt of scenario ``NAME``."""


_MADE_FOR: dict[Path, list[Path]] = {}
"""Per attempt directory, the folders ``attempt_directory`` created above it (deepest first)."""


def attempt_directory(scenario: Path) -> Path:
    """Create and return a fresh attempt directory beside ``scenario`` (its parents too)."""
    made = [parent for parent in [scenario.parent, *scenario.parent.parents]
            if not parent.exists()]
    scenario.parent.mkdir(parents=True, exist_ok=True)
    number = 1
    while True:
        candidate = scenario.with_name(f"{scenario.name}{ATTEMPT_INFIX}{number}")
        try:
            candidate.mkdir()
        except FileExistsError:
            number += 1
            continue
        _MADE_FOR[candidate] = made
        return candidate


def discard_attempt(attempt: Path) -> None:
    """Delete an attempt (installed, or with nothing to keep), and the folders made for it
    that are now empty: a first recording of ``scenarios/mod/test`` that recorded nothing
    leaves no ``scenarios/mod`` behind (a folder that existed before, or holds anything, such
    as the installed scenario, stays). Every attempt is deleted here."""
    shutil.rmtree(attempt, ignore_errors=True)
    for folder in _MADE_FOR.pop(attempt, []):
        try:
            folder.rmdir()
        except OSError:  # not empty (another test's scenario is there), or gone
            break


def attempt_problems(recorder: ScenarioRecorder) -> list[str]:
    """Why a finished recording must not replace its scenario (empty: every call succeeded).
    The recorder's own ``problems`` are about failed child calls, which are listed here."""
    problems: list[str] = []
    for report in recorder.reports:
        if report.failed:
            who = "the anonymous session" if report.session is None else f"session {report.session}"
            problems.append(f"{report.file} call #{report.index} (turn/step {report.key}, {who}) "
                            f"failed upstream: {report.code}: {report.message}")
    if recorder.dropped:
        problems.append(f"{len(recorder.dropped)} call(s) were still streaming when the test "
                        "ended, so they were not recorded")
    if recorder.failure is not None:
        problems.append(f"the recording stopped: [{recorder.failure.code}] "
                        f"{recorder.failure.message}")
    if not recorder.reports and not recorder.dropped and recorder.failure is None:
        problems.append("no model call was recorded (the test sent none through the recorder)")
    return problems


def install(scenario: Path, files: Mapping[str, bytes], remove: Sequence[str] = ()) -> list[Path]:
    """Write ``files`` (name → bytes) into ``scenario`` and delete the ``remove`` names, each
    file that changes or goes first kept as ``NAME.bak.N``; returns the backups. Each file is
    replaced atomically, under the scenario's lock (one installer at a time)."""
    scenario.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(scenario):
        touched = [scenario / name for name in [*files, *remove]
                   if (scenario / name).is_file()]
        backups = keep_backups(touched)
        for name, data in files.items():
            atomic_write(scenario / name, data)
        for name in remove:
            (scenario / name).unlink(missing_ok=True)
    return backups


def check_loads(scenario: Path, attempt: Path, files: Mapping[str, bytes],
                remove: Sequence[str] = ()) -> None:
    """Load the scenario as it would be with ``files`` written in and ``remove`` gone, in a
    trial copy inside the attempt (ReplayError when it would not load)."""
    from ..scenario.loading import load_scenario

    trial = attempt / ".merged"
    shutil.rmtree(trial, ignore_errors=True)
    trial.mkdir()
    try:
        for path in existing_scenario_files(scenario):
            if path.name not in remove:
                (trial / path.name).write_bytes(path.read_bytes())
        for name, data in files.items():
            (trial / name).write_bytes(data)
        load_scenario(trial)
    finally:
        shutil.rmtree(trial, ignore_errors=True)


def promote(attempt: Path, scenario: Path) -> list[Path]:
    """Make the attempt's recording the scenario: its scenario files replace the old ones, and
    old ones it has no counterpart for are removed (all kept as backups); the attempt
    directory is deleted. Returns the backups."""
    new = {path.name: path.read_bytes() for path in existing_scenario_files(attempt)}
    gone = [path.name for path in existing_scenario_files(scenario) if path.name not in new]
    backups = install(scenario, new, gone)
    discard_attempt(attempt)
    return backups
