"""The event log: the newest lines (a virtual list, so appending never re-lays out), following the
tail until the user moves up; Enter opens a line whole."""

from __future__ import annotations

from collections import deque

from rich.text import Text
from textual.message import Message

from ..keymap import LIVE_KEYS, bindings
from .line_list import LineList


class LiveList(LineList):
    """A list of the Live pane (sessions, event log): ← / → move to the other one, so the pane
    is one focus stop with both lists inside it."""

    BINDINGS = bindings(LIVE_KEYS)

    class SwitchRequested(Message):
        """The user asked for the pane's other list."""

        def __init__(self, sender: LiveList) -> None:
            super().__init__()
            self.list = sender

    def action_switch_list(self) -> None:
        """Go to the other list of the pane."""
        self.post_message(self.SwitchRequested(self))


class EventLog(LiveList):
    """Keeps ``max_lines``; its selected row is marked only while it has focus."""

    DEFAULT_CSS = "EventLog { height: 1fr; }"
    cursor_when_blurred = False

    def __init__(self, *, max_lines: int = 2000, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: deque[Text] = deque(maxlen=max_lines)
        self._follow_pending = False

    @property
    def following(self) -> bool:
        """Whether new lines scroll into view (the cursor is on the newest line, or unfocused)."""
        return not self.has_focus or self.cursor >= self.row_count - 1

    def write(self, line: str | Text, *, replace: bool = False) -> None:
        """Append one line (``replace``: overwrite the newest line instead) and repaint."""
        self.write_many([(line, replace)])

    def write_many(self, lines: list[tuple[str | Text, bool]]) -> None:
        """Append lines (each with its ``replace``), then repaint once."""
        follow = self.following
        for line, replace in lines:
            text = Text(line) if isinstance(line, str) else line
            text.no_wrap = True
            text.end = ""
            if replace and self.entries:
                self.entries[-1] = text
            else:
                full = len(self.entries) == self.entries.maxlen
                self.entries.append(text)
                if full and not follow and self.cursor:
                    self.cursor -= 1  # the oldest line went: stay on the same line
        self.set_rows(len(self.entries), width=max(self.scrollable_content_region.width, 1))
        if follow:
            self.cursor = len(self.entries) - 1
            self._to_newest()
            # The line that first overflows the log makes it scrollable only at the next
            # layout; scroll again once that happened, or the log would stop following here.
            if not self._follow_pending:
                self._follow_pending = True
                self.call_after_refresh(self._follow)

    def _follow(self) -> None:
        self._follow_pending = False
        if self.following:
            self._to_newest()

    def _to_newest(self) -> None:
        self.scroll_to(y=max(len(self.entries) - self.visible_rows, 0), animate=False,
                       immediate=True)

    def on_resize(self) -> None:
        """Lines written before the first layout (or a resize) keep the newest in view."""
        if self.following:
            self._to_newest()

    def row_text(self, index: int) -> Text:
        return self.entries[index].copy()

    def detail(self, index: int) -> tuple[str, str | Text]:
        return f"Event log line {index + 1} of {len(self.entries)}", self.entries[index].copy()
