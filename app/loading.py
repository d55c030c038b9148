"""Loading and hot reload of the scenario: one load at a time, a failure keeps the last good
scripts (banner), and reloads wait for an override editor that holds unsaved changes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from replay_engine import SIDECAR_NAME, InputError, ReplayError, Scenario, fingerprint, load_scenario

from .editing import UNFINISHED_CODE
from .reload import describe_changes, watch_scenario

if TYPE_CHECKING:
    from .app import ReplayApp


class ScenarioLoading:
    """Mixed into ReplayApp: load, reload (key, watcher, control API) and the error banner."""

    async def load(self: ReplayApp, *, initial: bool = False, why: str = "reload requested") -> bool:
        """(Re)load the scenario; a failure keeps serving the last good scripts.

        While an override editor holds unsaved changes the reload waits until it closes."""
        async with self._load_lock:
            return await self._load_locked(initial, why)

    async def _load_locked(self: ReplayApp, initial: bool, why: str) -> bool:
        if not initial and self.editor_has_unsaved_changes():
            self.defer_reload(why)
            return False
        try:
            scenario = await asyncio.to_thread(self._read_scenario)
        except ReplayError as exc:
            self._load_failed(exc, initial)
            return False
        self._apply(scenario, initial)
        return True

    async def reload_sidecar(self: ReplayApp, why: str) -> bool:
        """Reload after the sidecar changed, unless its content is what the last load read (the
        editor's save reloads once: whichever of its close and the watcher comes second skips)."""
        async with self._load_lock:
            if not self._reload_deferred and (
                    await asyncio.to_thread(self._read_sidecar_digest) == self._sidecar_digest):
                self.live_pane.log_event(f"{SIDECAR_NAME}: content already loaded, no reload")
                self.request_flush()
                return False
            return await self._load_locked(False, why)

    def _sidecar_path(self: ReplayApp) -> Path | None:
        root = self.options.scenario
        return root / SIDECAR_NAME if root.is_dir() else None

    def _read_sidecar_digest(self: ReplayApp) -> str | None:
        path = self._sidecar_path()
        try:
            return fingerprint(path) if path is not None else None
        except OSError:
            return None  # unreadable: the load reports it

    def _read_scenario(self: ReplayApp) -> Scenario:
        # The digest is taken first: a write racing the load then differs and reloads again.
        self._sidecar_digest = self._read_sidecar_digest()
        try:
            return load_scenario(self.options.scenario)
        except OSError as exc:
            raise InputError(f"{exc.filename or self.options.scenario}: cannot read "
                             f"({exc.strerror}); check the file and its permissions.",
                             file=exc.filename) from None
        except ReplayError:
            raise
        except Exception as exc:  # a loader bug must not take the debugger down
            raise ReplayError(f"{self.options.scenario}: loading failed unexpectedly "
                              f"({type(exc).__name__}: {exc}); please report this with the "
                              "scenario.", code="INTERNAL") from exc

    def _apply(self: ReplayApp, scenario: Scenario, initial: bool) -> None:
        old = self.scenario
        self.scenario = scenario
        self.load_error = None
        self.banner.clear()
        changes = self.engine.reload(scenario.scripts)
        self.scripts_view.set_scripts(scenario.scripts)
        self.call_pane.forget_context()
        calls = sum(len(s.entries) for s in scenario.scripts)
        if initial or old is None:
            self.live_pane.log_event(f"loaded {self.options.scenario}: {len(scenario.scripts)} "
                                     f"session script(s), {calls} call(s)")
        else:
            self.live_pane.log_event(describe_changes(changes, self._names()))
        self._show_selected()
        self.request_flush()

    def reload_from_api(self: ReplayApp) -> Scenario:
        """``POST /replay/v1/reload``: reload now; errors go to the banner and the caller.

        Refused (RELOAD_DEFERRED) while an override editor holds unsaved changes."""
        if self.editor_has_unsaved_changes():
            self.defer_reload("control API")
            raise ReplayError("the override editor of dsh-replay-tui has unsaved changes; the "
                              "scenario reloads when the editor is saved or closed.",
                              code="RELOAD_DEFERRED")
        try:
            scenario = self._read_scenario()
        except ReplayError as exc:
            self._load_failed(exc, False)
            raise
        self._apply(scenario, False)
        return scenario

    def _load_failed(self: ReplayApp, error: ReplayError, initial: bool) -> None:
        self.load_error = error
        title = ("Cannot load the scenario — nothing is served until it loads" if self.scenario is None
                 else "Reload failed — still serving the last good scripts")
        if error.code == UNFINISHED_CODE:
            title += " — press o to decide the call"
        self.banner.show_error(title, error)
        self.live_pane.log_event(f"{'load' if initial else 'reload'} failed [{error.code}]: "
                                 f"{error.message}")
        self.request_flush()

    async def _watch(self: ReplayApp) -> None:
        async def changed(names: list[str]) -> None:
            self.live_pane.log_event("changed: " + ", ".join(names))
            if names == [SIDECAR_NAME]:
                await self.reload_sidecar("files changed")
            else:
                await self.load(why="files changed")

        await watch_scenario(self.options.scenario, changed, stop_event=self._stop_watch,
                             on_ready=self.watching.set)
