"""``E``: open the sidecar, or the file and line an event-log line names, in the user's own
terminal editor with the debugger suspended, then reload the scenario.

The embedded server keeps serving while the editor runs (the editor runs as a child process the
event loop waits for); only painting stops until the terminal is handed back.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from textual.app import App, SuspendNotSupported

from replay_engine import SIDECAR_NAME, InputError, ReplayError, Scenario

from .headless.external_editor import (
    NO_EDITOR,
    EditorProblem,
    EditTarget,
    editor_argv,
    editor_command,
    named_file_line,
)
from .headless.loading import NO_SIDECAR, ScenarioLoader
from .headless.state import AppOptions, DebugState
from .screens.main import MainScreen
from .widgets.event_log import EventLog


def edit_target(log: EventLog, root: Path, scenario: Scenario | None,
                error: ReplayError | None = None) -> EditTarget | None:
    """The file ``E`` opens: the file and line the selected event-log line names while the log
    has focus, else the file and line the load ``error`` names, else the sidecar (None when the
    scenario has no sidecar path)."""
    if log.has_focus and 0 <= log.cursor < len(log.entries):
        named = named_file_line(log.entries[log.cursor].plain, Path.cwd())
        if named is not None:
            return named
    if isinstance(error, InputError) and error.file and Path(error.file).is_file():
        return EditTarget(Path(error.file), error.line)
    if scenario is not None and scenario.config.overrideFile:
        return EditTarget(Path(scenario.config.overrideFile))
    return EditTarget(root / SIDECAR_NAME) if root.is_dir() else None


def missing_program(argv: list[str], env: Mapping[str, str] = os.environ) -> EditorProblem | None:
    """Why ``argv[0]`` cannot start (not on ``$PATH``, or not an executable file), else None:
    checked before the terminal is handed over, so a missing editor is a message, not a
    suspended debugger."""
    program = argv[0]
    if shutil.which(program, path=env.get("PATH", os.defpath)) is not None:
        return None
    where = "is not an executable file" if os.sep in program else "is not installed (not on $PATH)"
    return EditorProblem(f"cannot run {program}: it {where}; set $VISUAL / $EDITOR to an editor "
                         "that is installed, or fix the file in another terminal and press l",
                         started=False)


async def run_in_terminal(app: App[Any], argv: list[str]) -> EditorProblem | None:
    """Run ``argv`` in the app's terminal with the app suspended; None when it ran and exited
    0, else why not: it could not start (no suspending here, e.g. under a test driver; the
    program is missing) or it exited with an error status. The app always resumes: Textual's
    ``suspend`` does not when its block raises, so nothing does."""
    failure: BaseException | None = None
    status = 0
    try:
        with app.batch_update(), app.suspend():
            try:
                process = await asyncio.create_subprocess_exec(*argv)
                status = await process.wait()
            except BaseException as exc:  # noqa: BLE001 - re-raised once the app resumed
                failure = exc
    except SuspendNotSupported:
        return EditorProblem(
            f"cannot hand this terminal to {argv[0]} here (the debugger cannot be suspended in "
            f"this environment): run {' '.join(argv)} in another terminal, then press l",
            started=False)
    if isinstance(failure, OSError):
        return EditorProblem(f"cannot run {argv[0]} ({failure.strerror or failure}); check "
                             "$VISUAL / $EDITOR", started=False)
    if failure is not None:
        raise failure
    return None if status == 0 else EditorProblem(f"{argv[0]} exited with status {status}",
                                                   started=True)


async def open_in_editor(app: App[Any], target: EditTarget | None, loader: ScenarioLoader,
                         log: Callable[[str], None],
                         env: Mapping[str, str] = os.environ) -> None:
    """Open ``target`` in ``$VISUAL`` / ``$EDITOR``, then reload (the sidecar's reload is skipped
    when its content did not change)."""
    if target is None:
        app.notify(NO_SIDECAR, severity="error")
        return
    command = editor_command(env)
    if command is None:
        app.notify(NO_EDITOR, title="No editor set", severity="warning", timeout=10)
        log(f"E: no editor set. {NO_EDITOR}")
        return
    argv = editor_argv(command, target)
    problem = missing_program(argv, env)
    if problem is None:
        log(f"E: opening {target.describe()} in {command[0]}")
        problem = await run_in_terminal(app, argv)
    if problem is not None:
        app.notify(problem.message, severity="warning", timeout=10)
        log(f"E: {problem.message}")
        if not problem.started:
            return
    if target.path.name == SIDECAR_NAME:
        app.run_worker(loader.reload_sidecar(f"edited in {command[0]}"), group="reload")
    else:
        app.run_worker(loader.load(why=f"edited in {command[0]}"), group="reload")


class OpenInEditorKey:
    """The App's ``E`` action (the App sets ``main``, ``options``, ``state`` and ``loader``)."""

    main: MainScreen
    options: AppOptions
    state: DebugState
    loader: ScenarioLoader

    async def action_open_in_editor(self) -> None:
        """Open the sidecar (or the file and line the selected event-log line or the load error
        names) in $VISUAL / $EDITOR with the debugger suspended, then reload."""
        assert isinstance(self, App)
        target = edit_target(self.main.live_pane.event_log, self.options.scenario,
                             self.state.scenario, self.state.load_error)
        await open_in_editor(self, target, self.loader, self.main.log_in_order)
