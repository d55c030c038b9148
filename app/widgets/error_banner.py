"""The error banner: a load or reload failed; says where and how to fix it."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from replay_engine import InputError, ReplayError


def describe_error(error: ReplayError) -> str:
    """File, line/location and code of an error, as one short line."""
    where: list[str] = []
    if isinstance(error, InputError):
        if error.file:
            where.append(f"file {error.file}")
        if error.line is not None:
            where.append(f"line {error.line}")
        if error.location:
            where.append(f"at {error.location}")
    where.append(f"code {error.code}")
    return ", ".join(where)


class ErrorBanner(Static):
    """Hidden until an error is shown. Each source (the load, the server, ...) has its own
    section, so a bad path and a busy port both show; the next good load clears its own."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._sections: dict[str, Text] = {}

    def show_error(self, title: str, error: ReplayError | str, *, source: str = "load") -> None:
        """Show an error with its location and the fix its message gives (replacing the
        earlier error of the same ``source``)."""
        text = Text(title, style="bold")
        if isinstance(error, ReplayError):
            text.append(f"\n{describe_error(error)}\n", style="bold")
            text.append(error.message)
        else:
            text.append("\n" + error)
        self._sections[source] = text
        self._repaint()

    def clear(self, source: str = "load") -> None:
        """Take one source's error away (the banner hides when none is left)."""
        if self._sections.pop(source, None) is not None or not self._sections:
            self._repaint()

    def _repaint(self) -> None:
        self.update(Text("\n\n").join(self._sections.values()))
        self.set_class(bool(self._sections), "visible")

    @property
    def showing(self) -> bool:
        """Whether an error is on screen."""
        return self.has_class("visible")
