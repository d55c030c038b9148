"""The override editor inside the debugger: open it (also on a scenario that does not load),
never lose its unsaved changes to a quit or a reload, and reload exactly once after a save."""

from __future__ import annotations

from typing import TYPE_CHECKING

from replay_engine import UNFINISHED_CALL

from .screens.override_editor import OverrideEditorScreen
from .widgets.override_confirm import ConfirmDiscardScreen

if TYPE_CHECKING:
    from .app import ReplayApp

UNFINISHED_CODE = UNFINISHED_CALL
"""The load error the editor can fix: a primary call that never finished while recorded."""


class EditorActions:
    """Mixed into ReplayApp: the ``o`` action, the quit guard and reloads deferred for the editor."""

    _reload_deferred: bool
    _asking_quit: bool

    def open_editor(self: ReplayApp) -> OverrideEditorScreen | None:
        """The override editor on the screen stack, if one is open."""
        for screen in reversed(self.screen_stack):
            if isinstance(screen, OverrideEditorScreen):
                return screen
        return None

    def editor_has_unsaved_changes(self: ReplayApp) -> bool:
        """Whether an open override editor holds edits that closing it would lose."""
        editor = self.open_editor()
        return editor is not None and editor.has_unsaved_changes

    def defer_reload(self: ReplayApp, why: str) -> None:
        """Keep a reload for when the editor closes, so its unsaved edits stay consistent."""
        if not self._reload_deferred:
            self.live_pane.log_event(f"reload deferred ({why}): the override editor has unsaved "
                                     "changes; reloading when it closes")
            self.request_flush()
        self._reload_deferred = True

    def action_override(self: ReplayApp) -> None:
        """Edit the override sidecar at the selected primary call, or decide the unfinished call
        of a scenario that does not load."""
        error = self.load_error
        if self.scenario is None or (error is not None and error.code == UNFINISHED_CODE):
            if not self.options.scenario.is_dir():
                self.notify("The scenario is not a directory; edit its sidecar file by hand.",
                            severity="error")
                return
            self.push_screen(OverrideEditorScreen.for_directory(self.options.scenario),
                             self._editor_closed)
            return
        selected = self.scripts_view.selected()
        if selected is None or selected[1] is None:
            self.notify("Select a call of the primary script.", severity="warning")
            return
        s, j = selected
        if not self.scenario.scripts[s].primary:
            self.notify("Sidecars apply to the primary session only; select a primary call.",
                        severity="warning")
            return
        served = None
        for b in self.engine.state(self.run_name).bindings:
            if b.script_index == s and b.call_index == j:
                served = b.chunks_served
        self.push_screen(OverrideEditorScreen(self.scenario, j, served), self._editor_closed)

    def _editor_closed(self: ReplayApp, saved: bool | None) -> None:
        """Reload once after a save (the watcher skips the write it then sees), or run a reload
        deferred while the editor had unsaved changes."""
        deferred, self._reload_deferred = self._reload_deferred, False
        if saved and not deferred:
            self.run_worker(self.reload_sidecar("override saved"), group="reload")
        elif deferred:
            self.live_pane.log_event("override editor closed: running the deferred reload")
            self.run_worker(self.load(), group="reload")

    async def action_quit(self: ReplayApp) -> None:
        """Quit with the verdict; asks first when an override editor holds unsaved changes."""
        editor = self.open_editor()
        if editor is None or not editor.has_unsaved_changes:
            await self.quit_with_verdict()
            return
        if self._asking_quit:
            return
        self._asking_quit = True
        name = editor.draft.path.name if editor.draft is not None else "the override"

        def answered(discard: bool | None) -> None:
            self._asking_quit = False
            if discard:
                self.run_worker(self.quit_with_verdict(), group="quit")

        self.push_screen(ConfirmDiscardScreen(name, question=f"Quit and discard unsaved changes "
                                                             f"to {name}?"), answered)
