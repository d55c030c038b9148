"""Keeps an override editor's unsaved changes safe: a reload waits until the editor closes, and
quitting asks first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from textual.screen import Screen

from .headless.loading import EventLogView
from .screens.override_editor import OverrideEditorScreen


class EditorGuard:
    """Finds the open override editor on the screen stack and holds reloads back for it."""

    def __init__(self, screens: Callable[[], Sequence[Screen[Any]]], view: EventLogView) -> None:
        self._screens = screens
        self._view = view
        self._deferred = False
        self.asking_quit = False
        """Set while the quit question is on screen (a second ``q`` does not ask twice)."""

    @property
    def deferred(self) -> bool:
        """Whether a reload waits for the editor to close."""
        return self._deferred

    def open_editor(self) -> OverrideEditorScreen | None:
        """The override editor on the screen stack, if one is open."""
        for screen in reversed(self._screens()):
            if isinstance(screen, OverrideEditorScreen):
                return screen
        return None

    def has_unsaved_changes(self) -> bool:
        """Whether an open override editor holds edits that closing it would lose."""
        editor = self.open_editor()
        return editor is not None and editor.has_unsaved_changes

    def defer(self, why: str) -> None:
        """Keep a reload for when the editor closes, so its unsaved edits stay consistent."""
        if not self._deferred:
            self._view.log_line(f"reload deferred ({why}): the override editor has unsaved "
                           "changes; reloading when it closes")
            self._view.request_flush()
        self._deferred = True

    def take_deferred(self) -> bool:
        """Whether a reload was deferred (and forget it: the caller runs it now or never)."""
        deferred, self._deferred = self._deferred, False
        return deferred
