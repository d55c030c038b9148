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
    """Hidden until an error is shown; cleared by the next good load."""

    def show_error(self, title: str, error: ReplayError | str) -> None:
        """Show an error with its location and the fix its message gives."""
        text = Text(title, style="bold")
        if isinstance(error, ReplayError):
            text.append(f"\n{describe_error(error)}\n", style="bold")
            text.append(error.message)
        else:
            text.append("\n" + error)
        self.update(text)
        self.add_class("visible")

    def clear(self) -> None:
        """Hide the banner."""
        self.update("")
        self.remove_class("visible")

    @property
    def showing(self) -> bool:
        """Whether an error is on screen."""
        return self.has_class("visible")
