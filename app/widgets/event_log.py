"""The event log: a tail view of the newest lines (line API; appending never re-lays out)."""

from __future__ import annotations

from collections import deque

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.strip import Strip
from textual.widget import Widget


class EventLog(Widget):
    """Shows the last lines that fit; the mouse wheel scrolls back through ``max_lines``."""

    DEFAULT_CSS = "EventLog { height: 1fr; }"

    def __init__(self, *, max_lines: int = 2000, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: deque[Text] = deque(maxlen=max_lines)
        self.back = 0
        """How many lines the view is scrolled up from the newest."""

    def write(self, line: str | Text) -> None:
        """Append one line and repaint."""
        text = Text(line) if isinstance(line, str) else line
        text.no_wrap = True
        text.end = ""
        self.entries.append(text)
        if self.back:
            self.back = min(self.back + 1, max(len(self.entries) - self.size.height, 0))
        self.refresh()

    def render_line(self, y: int) -> Strip:
        height, width = self.size.height, self.size.width
        base = self.rich_style
        index = len(self.entries) - self.back - height + y
        if not 0 <= index < len(self.entries):
            return Strip.blank(width, base)
        segments = list(self.entries[index].render(self.app.console))
        return Strip(Segment.apply_style(segments, base)).crop_extend(0, width, base)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.back = min(self.back + 3, max(len(self.entries) - self.size.height, 0))
        self.refresh()

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self.back = max(self.back - 3, 0)
        self.refresh()

