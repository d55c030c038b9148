"""The search box ``/`` opens above the footer: typing filters as you go, Enter keeps the filter,
Esc clears it."""

from __future__ import annotations

from textual.message import Message
from textual.widgets import Input

from ..keymap import SEARCH_BAR_KEYS, bindings


class SearchBar(Input):
    """Hidden until ``/``; posts :class:`SearchBar.Closed` on Enter or Esc."""

    BINDINGS = bindings(SEARCH_BAR_KEYS)

    class Closed(Message):
        """The box closed; ``cleared`` when Esc dropped the search."""

        def __init__(self, cleared: bool) -> None:
            super().__init__()
            self.cleared = cleared

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder="search: words, tool:NAME, kind:KIND, origin:ORIGIN — Enter keeps, "
                                     "Esc clears", id=id, compact=True)

    def action_clear_search(self) -> None:
        """Drop the search and close the box."""
        self.value = ""
        self.post_message(self.Closed(cleared=True))

    def action_keep_search(self) -> None:
        """Keep the filter and go back to the scripts."""
        self.post_message(self.Closed(cleared=False))
