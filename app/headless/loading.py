"""Loading and hot reload of the scenario: one load at a time, a failure keeps the last good
scripts (banner), and reloads wait for an override editor that holds unsaved changes."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import anyio

from replay_engine import (
    DEFAULT_RUN,
    SIDECAR_NAME,
    UNFINISHED_CALL,
    InputError,
    LoadProgress,
    ReplayError,
    Scenario,
    ScenarioNotFoundError,
    SidecarError,
    StagedScripts,
    fingerprint,
    load_scenario,
)

from .reload import FilesState, describe_changes, files_state, wait_for_directory, watch_scenario
from .state import DebugState

UNFINISHED_CODE = UNFINISHED_CALL
"""The load error the editor's form can fix: a primary call that never finished while recorded."""
EDITOR_FIXES = (UNFINISHED_CODE, SidecarError.code)
"""Load errors ``o`` opens the editor for whatever is selected: an unfinished call (the form) and
a sidecar that does not load (as text, beside its problems)."""
NO_SIDECAR = ("A scenario opened from a file has no replay.override.json: start the debugger on "
              "a scenario directory to override its calls.")
"""What ``o`` and ``E`` say on a scenario given as a file (a persisted session)."""


class EventLogView(Protocol):
    """Where a line for the event log goes, and how the screen is asked to repaint."""

    def log_line(self, line: str) -> None:
        """Append a line to the event log."""

    def request_flush(self) -> None:
        """Repaint from the engine's state soon."""


class LoadView(EventLogView, Protocol):
    """What a load shows: the scripts it read, or why it failed."""

    def show_scenario(self, scenario: Scenario) -> None:
        """Show freshly loaded scripts (the error banner goes away)."""

    def show_load_error(self, title: str, error: ReplayError) -> None:
        """Show why the scenario did not load."""


class ReloadGuard(Protocol):
    """Holds reloads back while an override editor has unsaved changes."""

    @property
    def deferred(self) -> bool:
        """Whether a reload waits for the editor to close."""

    def has_unsaved_changes(self) -> bool:
        """Whether an open override editor holds edits that a reload would make stale."""

    def defer(self, why: str) -> None:
        """Keep a reload for when the editor closes."""


WRITING_S = 2.0
"""A log changed this recently whose last call has not finished is still being written (a
recording in progress): the watcher waits this long for the rest before calling it a failure."""

PartialView = Callable[[LoadProgress | None], bool]
"""Shows the primary's calls read so far by the first load (None: take them away again);
False when the screen cannot show them yet (``ScenarioLoader.show_progress`` offers them again)."""
PROGRESS_PAINT_S = 0.25
"""The first load's rows are shown again at most this often: each showing lays the screen out
again, which the loading thread waits for (it shares the interpreter with the screen)."""


class ScenarioLoader:
    """Loads the scenario into the engine: on start, on a key, from the watcher, from the control API."""

    def __init__(self, state: DebugState, view: LoadView, guard: ReloadGuard,
                 partial: PartialView | None = None) -> None:
        self.state = state
        self.view = view
        self.guard = guard
        self.partial = partial
        """Where the first load's progress is shown (only rows: nothing is served meanwhile)."""
        self._progress: LoadProgress | None = None
        """The latest progress the loading thread handed over, not shown yet."""
        self._handover = threading.Lock()
        self._partial_open = False
        """Whether the first load still reads (its progress may be shown)."""
        self._partial_shown = False
        self._shown_at: float | None = None
        """When the first load's progress was last shown."""
        self._lock = asyncio.Lock()
        """One load at a time, so the watcher can tell a change it already loaded."""
        self._sidecar_digest: str | None = None
        """Fingerprint of the sidecar as read by the last load (before it read the scenario)."""
        self._prefetched: asyncio.Future[Scenario] | None = None
        self._seen: FilesState | None = None
        """The scenario files as the last load found them (a watch that starts later reloads
        when they differ: a change before the watch was in place is not lost)."""
        self._recheck: asyncio.Task[bool] | None = None
        self._writer_wait: asyncio.TimerHandle | None = None
        """The load due once a call still being written had time to finish."""
        self._writer_load: asyncio.Future[bool] | None = None
        self.on_loaded: Callable[[], None] | None = None
        """Called after every load that succeeded (the app writes a waiting URL file then)."""

    @property
    def root(self) -> Path:
        """The scenario path the debugger was started on."""
        return self.state.options.scenario

    async def load(self, *, initial: bool = False, why: str = "reload requested",
                   settle: bool = False) -> bool:
        """(Re)load the scenario; a failure keeps serving the last good scripts.

        While an override editor holds unsaved changes the reload waits until it closes. With
        ``settle`` (the watcher's loads), a last call still being written is waited for."""
        async with self._lock:
            return await self._load_locked(initial, why, settle)

    def prefetch(self) -> None:
        """Start reading the scenario now, in a thread, so that the first load overlaps the
        screen's own start (the first ``load(initial=True)`` takes the result). The primary's
        calls show as they are derived; the engine gets nothing until the whole load is done."""
        if self._prefetched is None:
            loop = asyncio.get_running_loop()
            self._partial_open = self.partial is not None
            told = None if self.partial is None else lambda p: self._told(loop, p)
            self._prefetched = asyncio.ensure_future(asyncio.to_thread(self._read_scenario, told))

    def _told(self, loop: asyncio.AbstractEventLoop, progress: LoadProgress) -> None:
        """In the loading thread: hand the latest progress over (one pending repaint at most)."""
        with self._handover:
            pending, self._progress = self._progress is not None, progress
        if not pending:
            loop.call_soon_threadsafe(self.show_progress)

    def show_progress(self) -> None:
        """Show the first load's latest progress handed over (the screen calls this once its
        panes exist: what came before is kept until then)."""
        with self._handover:
            progress, self._progress = self._progress, None
        now = time.monotonic()
        if (progress is None or not self._partial_open or self.partial is None
                or (self._shown_at is not None and now - self._shown_at < PROGRESS_PAINT_S)):
            return
        if self.partial(progress):
            self._partial_shown = True
            self._shown_at = now
            return
        with self._handover:  # not shown yet: kept (the thread no longer schedules meanwhile)
            self._progress = self._progress or progress

    def _close_partial(self, failed: bool) -> None:
        """The first load ended: its progress is no longer shown (failed: its rows go away)."""
        self._partial_open = False
        if failed and self._partial_shown and self.partial is not None:
            self.partial(None)
        self._partial_shown = False

    async def _load_locked(self, initial: bool, why: str, settle: bool = False) -> bool:
        if not initial and self.guard.has_unsaved_changes():
            self.guard.defer(why)
            return False
        read, self._prefetched = self._prefetched if initial else None, None
        try:
            scenario = await (read if read is not None else asyncio.to_thread(self._read_scenario))
        except ReplayError as exc:
            self._close_partial(True)
            if settle and exc.code == UNFINISHED_CODE and self._being_written():
                self._wait_for_writer(exc)
                return False
            self._load_failed(exc, initial)
            return False
        self._close_partial(False)
        self._apply(scenario, initial)
        return True

    async def reload_sidecar(self, why: str) -> bool:
        """Reload after the sidecar changed, unless its content is what the last load read and
        loaded (the editor's save reloads once: whichever of its close and the watcher comes
        second skips; after a failed load it is loaded again, to say whether it still fails)."""
        async with self._lock:
            if not self.guard.deferred and self.state.load_error is None and (
                    await asyncio.to_thread(self._read_sidecar_digest) == self._sidecar_digest):
                self.view.log_line(f"{SIDECAR_NAME}: content already loaded, no reload")
                self.view.request_flush()
                return False
            return await self._load_locked(False, why)

    def _read_sidecar_digest(self) -> str | None:
        path = self.root / SIDECAR_NAME if self.root.is_dir() else None
        try:
            return fingerprint(path) if path is not None else None
        except OSError:
            return None  # unreadable: the load reports it

    def _read_scenario(self, progress: Callable[[LoadProgress], None] | None = None) -> Scenario:
        # The digest is taken first: a write racing the load then differs and reloads again.
        self._sidecar_digest = self._read_sidecar_digest()
        self._seen = files_state(self.root)
        try:
            return load_scenario(self.root, progress=progress)
        except OSError as exc:
            raise InputError(f"{exc.filename or self.root}: cannot read "
                             f"({exc.strerror}); check the file and its permissions.",
                             file=exc.filename) from None
        except ReplayError:
            raise
        except Exception as exc:  # a loader bug must not take the debugger down
            raise ReplayError(f"{self.root}: loading failed unexpectedly "
                              f"({type(exc).__name__}: {exc}); please report this with the "
                              "scenario.", code="INTERNAL") from exc

    def _apply(self, scenario: Scenario, initial: bool,
               staged: StagedScripts | None = None) -> None:
        state = self.state
        old = state.scenario
        state.scenario = scenario
        state.load_error = None
        changes = state.engine.reload(staged if staged is not None else scenario.scripts)
        # The scripts live as long as the load: keep their millions of objects out of the
        # cyclic collector, whose full passes over them would stall the screen for hundreds
        # of ms while sessions stream (reference counting still frees them after a reload).
        gc.freeze()
        self._drop_stray_breakpoints(scenario)
        self.view.show_scenario(scenario)
        calls = sum(len(s.entries) for s in scenario.scripts)
        if initial or old is None:
            self.view.log_line(f"loaded {self.root}: {len(scenario.scripts)} "
                          f"session script(s), {calls} call(s)")
        else:
            self.view.log_line(describe_changes(changes, state.names()))
        for warning in scenario.warnings:  # read anyway, as validate and inspect warn
            self.view.log_line(f"warning: {warning}")
        self.view.request_flush()
        if self.on_loaded is not None:
            self.on_loaded()

    def _being_written(self) -> bool:
        """Whether a scenario file changed within the last ``WRITING_S``."""
        seen = self._seen or {}
        newest = max((mtime for name, (_, _, mtime) in seen.items() if name), default=0)
        return time.time_ns() - newest < WRITING_S * 1e9

    def _wait_for_writer(self, error: ReplayError) -> None:
        """Say once that a call is still being written, and load again when it had time to
        finish (a later change loads sooner; a call still unfinished then is a failure)."""
        if self._writer_wait is not None:
            return
        where = f" in {error.file}" if isinstance(error, InputError) and error.file else ""
        self.view.log_line(f"a call is still being written{where}: loading it once it is "
                           "finished")
        self.view.request_flush()

        def due() -> None:
            self._writer_wait = None
            self._writer_load = asyncio.ensure_future(
                self.load(why="the call being written", settle=True))

        self._writer_wait = asyncio.get_running_loop().call_later(WRITING_S, due)

    def _drop_stray_breakpoints(self, scenario: Scenario) -> None:
        """Remove breakpoints on calls the scenario does not have (``--break 5:0``, or calls a
        reload took away), saying so: no key could select them to clear them."""
        engine, scripts = self.state.engine, scenario.scripts
        for run in dict.fromkeys([DEFAULT_RUN, *engine.runs()]):
            for script, call in sorted(engine.breakpoints_of(run)):
                if script < len(scripts) and call < len(scripts[script].entries):
                    continue
                engine.toggle_breakpoint(script, call, run=run)
                where = (f"script [{script}] has {len(scripts[script].entries)} call(s)"
                         if script < len(scripts) else
                         f"the scenario has {len(scripts)} script(s), numbered from 0")
                self.view.log_line(f"breakpoint {script}:{call} removed: no such call ({where})")

    async def reload_from_api(self) -> Scenario:
        """``POST /replay/v1/reload``: reload now; errors go to the banner and the caller.
        The scenario loads in a worker thread and is swapped in at once: streams go on.

        Refused (RELOAD_DEFERRED) while an override editor holds unsaved changes."""
        if self.guard.has_unsaved_changes():
            self.guard.defer("control API")
            raise ReplayError("the override editor of dsh-replay-tui has unsaved changes; the "
                              "scenario reloads when the editor is saved or closed.",
                              code="RELOAD_DEFERRED")
        async with self._lock:
            try:
                scenario, staged = await asyncio.to_thread(self._read_staged)
            except ReplayError as exc:
                self._load_failed(exc, False)
                raise
            self._apply(scenario, False, staged)
        return scenario

    def _read_staged(self) -> tuple[Scenario, StagedScripts]:
        """``_read_scenario`` and the engine's staging of its scripts (in a worker thread)."""
        scenario = self._read_scenario()
        return scenario, self.state.engine.stage(scenario.scripts)

    def _load_failed(self, error: ReplayError, initial: bool) -> None:
        self.state.load_error = error
        if self.state.scenario is None:  # nothing was ever served: model calls answer 503
            self.state.engine.set_not_loaded(error)
        title = ("Cannot load the scenario (nothing served)" if self.state.scenario is None
                 else "Reload failed — still serving the last good scripts")
        if error.code == UNFINISHED_CODE:
            title += " — press o to decide the call"
        elif isinstance(error, ScenarioNotFoundError) and self.root.is_file():
            title = ("Cannot load a file — quit (q) and open its directory: dsh-replay-tui "
                     f"{self.root.parent}")
        elif error.code == SidecarError.code:
            title += " — press o to fix the sidecar (E opens it in $EDITOR)"
        else:
            title += " — fix it, then press l"
        self.view.show_load_error(title, error)
        self.view.log_line(f"{'load' if initial else 'reload'} failed [{error.code}]: {error.message}")
        self.view.request_flush()

    async def await_directory(self, stop_event: anyio.Event,
                              on_ready: Callable[[], None]) -> bool:
        """Wait for a scenario directory that does not exist yet, then load it (False: stopped)."""
        def watching(ancestor: Path) -> None:
            self.view.log_line(f"waiting for {self.root} to appear (watching {ancestor})")
            self.view.request_flush()
            on_ready()

        if not await wait_for_directory(self.root, stop_event=stop_event, on_ready=watching):
            return False
        self.view.log_line(f"{self.root} appeared")
        await self.load(why="the scenario directory appeared")
        return True

    async def watch(self, stop_event: anyio.Event, on_ready: Callable[[], None]) -> None:
        """Reload on every debounced change of a scenario file, until ``stop_event``; when the
        directory is replaced, watch the new one. Each time the watch is in place, files that
        changed since the last load (before the watch could see them) are loaded."""
        async def changed(names: list[str]) -> None:
            self.view.log_line("changed: " + ", ".join(names))
            if names == [SIDECAR_NAME]:
                await self.reload_sidecar("files changed")
            else:
                await self.load(why="files changed", settle=True)

        def ready() -> None:
            on_ready()
            if files_state(self.root) != self._seen and self._recheck is None:
                self._recheck = asyncio.ensure_future(self._load_missed())

        await watch_scenario(self.root, changed, stop_event=stop_event, on_ready=ready)

    async def _load_missed(self) -> bool:
        try:
            self.view.log_line(f"{self.root} changed before the watch was in place")
            return await self.load(why="changed while starting to watch")
        finally:
            self._recheck = None
