"""The header: two lines of facts, state flags first (``headless.header`` says what and in which
order), fitted to the width on every render so the least important facts are cut first."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from ..headless.header import Line, RecordFacts, ReplayFacts, fit, record_lines, replay_lines


class StatusHeader(Widget):
    """Repainted when its facts change (never re-lays out)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: tuple[Line, ...] = ()
        self.text = Text()
        """Both lines whole, as they read at any width that holds them (what tests read)."""

    def render(self) -> Text:
        width = self.size.width
        return Text("\n").join(fit(line, width) for line in self.lines)

    def show(self, facts: ReplayFacts) -> None:
        """The replay header."""
        self._set(replay_lines(facts))

    def show_recording(self, facts: RecordFacts) -> None:
        """The record-mode header."""
        self._set(record_lines(facts))

    def _set(self, lines: tuple[Line, ...]) -> None:
        text = Text("\n").join(fit(line, 1 << 20) for line in lines)
        if text != self.text:
            self.lines = lines
            self.text = text
            self.refresh()
