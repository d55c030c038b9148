"""Search across the main screen's panes (``/``): the scripts are filtered, matches are marked
in the call pane's lists and the event log, and ``.`` / ``,`` go from match to match in the
focused list."""

from __future__ import annotations

from collections.abc import Callable

from textual.widget import Widget

from ..widgets.line_list import LineList
from ..widgets.search_bar import SearchBar
from .panes import Panes


class Search:
    """The search box and what it marks."""

    def __init__(self, panes: Panes, bar: SearchBar, reselect: Callable[[], None]) -> None:
        self.panes = panes
        self.bar = bar
        self.reselect = reselect
        """Shows the selected call again (a filter may change it)."""

    def open(self) -> None:
        """Open the search box (it filters the scripts and marks matches as you type)."""
        self.bar.add_class("open")
        self.bar.focus()

    def apply(self, text: str) -> int:
        """Filter the scripts by ``text`` and mark it in the call pane and the event log;
        returns the number of matching calls."""
        text = text.strip()
        scripts = self.panes.scripts
        matched = scripts.set_filter(text)
        scripts.border_title = (f"Scripts — / {text} ({matched} call{'s' if matched != 1 else ''})"
                                if text else "Scripts")
        for view in self.panes.call.query(LineList):
            view.set_search(text)
        self.panes.live.event_log.set_search(text)
        self.reselect()
        return matched

    def closed(self, cleared: bool) -> None:
        """The box closed (``cleared``: with Esc, the search goes too); back to the scripts."""
        if cleared:
            self.apply("")
        self.bar.remove_class("open")
        self.panes.focus("scripts")

    def step(self, focused: Widget | None, step: int) -> str | None:
        """Go to the next (1) or previous (-1) match in the focused list (the scripts unless
        another list has focus); returns what to tell the user when there is none."""
        target = focused if isinstance(focused, LineList) else self.panes.scripts
        if not target.search_text:
            return "No search: press / first."
        if not target.next_match(step):
            return f"No match for {target.search_text!r} here."
        return None
