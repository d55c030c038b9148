"""What the debugger was asked for and what it currently shows, shared by the app and its screens."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from replay_engine import (
    DEFAULT_RUN,
    HangEntry,
    ReplayEngine,
    ReplayError,
    RunState,
    Scenario,
    ServeOptions,
    StepMode,
)


class RecordingStatus(Protocol):
    """What the screens show of a recording (record mode)."""

    @property
    def active(self) -> bool:
        """True while calls are being recorded."""

    @property
    def upstream(self) -> str:
        """Where the calls go."""

    def counts(self) -> list[tuple[str, int]]:
        """Calls recorded per session, in the order sessions first called."""

    @property
    def title(self) -> str | None:
        """The header's first segment (None: ``● RECORDING → upstream``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AppOptions(ServeOptions):
    """What the command line (or a test) asks of the debugger: the serve option set every
    front end shares (``ServeOptions``: listening, pace, catalog, ready dir, URL file, journal
    limit, strict, bind, wire), and the debugger's own."""

    scenario: Path
    serve: bool = True
    watch: bool = True
    url_label: str | None = None
    """Shown instead of the real URL (snapshots use a fixed one)."""
    upstream: str | None = None
    """Record mode: record calls forwarded to this base URL into ``scenario`` first, then load
    and serve what was recorded."""
    force: bool = False
    """Record mode: record into a directory that already holds a scenario (kept as .bak.N)."""
    live_from: bool = False
    """``upstream`` without ``--record``: serve the scenario, and go live to the upstream from
    a chosen call (``live_from.py``) instead of recording first."""
    from_divergence: bool = False
    """With ``live_from``: each session goes live at its first diverged call by itself."""
    mode: StepMode = "run"
    """The step mode the default run starts in (``--mode``): ``call`` holds every call before
    its first chunk, ``chunk`` every chunk, so nothing is served before a key is pressed."""
    breaks: tuple[tuple[int, int], ...] = ()
    """Breakpoints (script, call) of the default run from the start (``--break``)."""


@dataclass(slots=True)
class DebugState:
    """The engine, the run shown, the scenario last loaded (or why it did not load) and the URL."""

    options: AppOptions
    engine: ReplayEngine
    run_name: str = DEFAULT_RUN
    scenario: Scenario | None = None
    load_error: ReplayError | None = None
    url: str | None = None
    serve_error: str | None = None
    """Why the embedded server could not start (None while serving or not asked to serve)."""
    own_ready_dir: Path | None = None
    """The temporary directory relative hang readyFiles go to when no ready dir was given
    (removed on quit, with the markers the debugger created)."""
    ready_dir_noted: bool = False
    """Live already said where readyFiles go."""
    run_chosen: bool = False
    """The user picked the run to follow; until then the screen follows the first run that binds."""
    recording: RecordingStatus | None = None
    """Record mode's recording (None when not recording)."""
    record_refused: str | None = None
    """Why record mode could not start recording (nothing is recorded or served then)."""
    live: RecordingStatus | None = None
    """The live-from recording (``--upstream`` without ``--record``; None otherwise)."""
    last_state: RunState | None = None
    """The followed run as last painted."""

    def __post_init__(self) -> None:
        """Start the default run (the one bare URLs and pytest's --dsh-replay-debug use) as
        asked: held from its first call, before any scenario is served."""
        if self.options.mode != "run":
            self.engine.set_mode(self.options.mode)
        for script, call in self.options.breaks:
            if (script, call) not in self.engine.breakpoints:
                self.engine.toggle_breakpoint(script, call)

    def runs(self) -> list[str]:
        """The runs the screen can follow: the default run, every run that bound a session, and
        the one followed now (in that order, each once)."""
        out = [DEFAULT_RUN, *self.engine.bound_runs(), self.run_name]
        return list(dict.fromkeys(out))

    @property
    def url_label(self) -> str:
        """The URL shown in the header."""
        if self.options.url_label is not None:
            return self.options.url_label
        return self.url or "not serving"

    def names(self) -> list[str]:
        """The recorded session id of each script (empty before a scenario loads)."""
        return [s.recorded_id for s in self.scenario.scripts] if self.scenario else []

    def ready_dir_note(self) -> str | None:
        """Where relative hang readyFiles are created, once the scenario has one (else None)."""
        scenario = self.scenario
        if scenario is None or not any(
                isinstance(item.entry, HangEntry) and item.entry.readyFile
                and not Path(item.entry.readyFile).is_absolute()
                for script in scenario.scripts for item in script.entries):
            return None
        where = ("a temporary directory of this session, removed on quit"
                 if self.own_ready_dir is not None else "from --ready-dir")
        return f"hang readyFiles are created in {self.engine.ready_dir} ({where})"

    def untimed_logs(self) -> list[str]:
        """File names of the loaded logs that leave chunk times out (projected logs)."""
        if self.scenario is None:
            return []
        return [Path(s.file).name for s in self.scenario.scripts if s.untimed and s.file]

    def chunks_served(self, script_index: int, call_index: int) -> int | None:
        """How many chunks of a call the run has served (None: not bound to it now)."""
        served = None
        for b in self.engine.state(self.run_name).bindings:
            if b.script_index == script_index and b.call_index == call_index:
                served = b.chunks_served
        return served


def remove_ready_files(created: Iterable[Path], own: Path | None) -> None:
    """Delete the empty ready markers the engine created, then the app's own temporary ready
    dir (``own``) where empty; anything else in it was put there by someone else."""
    for path in created:
        try:
            if path.is_file() and path.stat().st_size == 0:
                path.unlink()
        except OSError:
            pass  # gone already, or not ours to remove
    if own is None or not own.is_dir():
        return
    for folder, _, _ in sorted(os.walk(own), key=lambda w: -len(w[0])):
        try:
            os.rmdir(folder)  # only empty ones
        except OSError:
            pass
