"""The override editor's kind switch: chunks, throw or hang, one always selected.

A one-row segmented switch: the arrows select at once (there is no highlight to confirm), the
first letters pick a kind directly, and a click picks the kind under the mouse.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from ..headless.override_edits import KINDS, Kind
from ..keymap import EDITOR_KIND_KEYS, bindings

_GAP = 2


class KindToggle(Widget, can_focus=True):
    """Shows the kind of the selected call; a change posts :class:`KindToggle.Changed`."""

    DEFAULT_CSS = """
    KindToggle { width: auto; height: 1; padding: 0 1; background: $boost; }
    KindToggle:focus { background: $block-cursor-blurred-background; }
    """
    BINDINGS = bindings(EDITOR_KIND_KEYS)

    kind: reactive[Kind] = reactive[Kind]("chunks")
    """The kind selected."""

    class Changed(Message):
        """The selected kind changed (by the user or by :meth:`show`)."""

        def __init__(self, toggle: KindToggle, kind: Kind) -> None:
            super().__init__()
            self.toggle = toggle
            self.kind = kind

        @property
        def control(self) -> KindToggle:
            """The switch."""
            return self.toggle

    def render(self) -> Text:
        out = Text(no_wrap=True)
        for i, kind in enumerate(KINDS):
            if i:
                out.append(" " * _GAP)
            if kind == self.kind:
                out.append(f"◉ {kind}", style="bold reverse" if self.has_focus else "bold")
            else:
                out.append(f"○ {kind}", style="dim")
        return out

    def get_content_width(self, container: object, viewport: object) -> int:
        return sum(len(kind) + 2 for kind in KINDS) + _GAP * (len(KINDS) - 1)

    def watch_kind(self, kind: Kind) -> None:
        self.post_message(self.Changed(self, kind))

    def show(self, kind: Kind) -> None:
        """Select ``kind``."""
        self.kind = kind

    def action_kind(self, kind: str) -> None:
        """Select the kind a key names (c, t, h)."""
        for known in KINDS:
            if known == kind:
                self.kind = known

    def action_step(self, step: int) -> None:
        """Select the next (1) or previous (-1) kind."""
        self.kind = KINDS[(KINDS.index(self.kind) + step) % len(KINDS)]

    def on_click(self, event: events.Click) -> None:
        """Select the kind under the mouse."""
        x = event.x - self.styles.padding.left
        start = 0
        for kind in KINDS:
            end = start + len(kind) + 2
            if start <= x < end + _GAP // 2:
                self.kind = kind
                return
            start = end + _GAP

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
