"""The context footer: the keys that act now, from the key table, within one line.

The screen says which moments hold (``headless.moments``: a call paused, recording, nothing
bound, the focused pane); the keys of those moments show first, the always-shown ones (help,
quit) last."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rich.text import Text
from textual.widget import Widget

from ..keymap import Key, footer_keys, shown_key

KEY_STYLE = "bold reverse"


class ContextFooter(Widget):
    """One line; repaints only when the moments (or its width) change."""

    DEFAULT_CSS = "ContextFooter { height: 1; dock: bottom; background: $panel; }"

    def __init__(self, keys: Sequence[Key], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.keys = tuple(keys)
        self.moments: tuple[str, ...] = ()
        self._labels: dict[str, str] = {}
        self._always = True

    def set_moments(self, moments: Sequence[str], labels: dict[str, str] | None = None, *,
                    always: bool = True) -> None:
        """Show the keys of ``moments``; ``labels`` renames keys by action for now (``zoom`` reads
        ``Restore`` while a pane is zoomed); not ``always``: leave out the always-shown keys
        (typing goes to a box, so they would not act)."""
        moments = tuple(moments)
        labels = labels or {}
        if moments != self.moments or labels != self._labels or always != self._always:
            self.moments = moments
            self._labels = labels
            self._always = always
            self.refresh()

    @property
    def shown(self) -> list[tuple[str, str]]:
        """(key, label) of each key on screen now."""
        return [(shown_key(k), self._labels.get(k.action, k.label))
                for k in footer_keys(self._relabelled(), self.moments, max(self.size.width, 1),
                                     always=self._always)]

    def _relabelled(self) -> list[Key]:
        if not self._labels:
            return list(self.keys)
        return [replace(k, label=self._labels[k.action]) if k.action in self._labels else k
                for k in self.keys]

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, (key, label) in enumerate(self.shown):
            if i:
                text.append("  ")
            text.append(f"{key}", style=KEY_STYLE)
            text.append(f" {label}")
        return text
