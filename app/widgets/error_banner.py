"""The error banner: a load, reload, serve or record failure in two lines (what failed, where and
the start of the fix); Enter on it opens the whole text, every problem listed."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widget import Widget

from replay_engine import MAX_LISTED_PROBLEMS, InputError, ReplayError

from ..keymap import LIST_KEYS, bindings
from .line_list import LineList

SUMMARY_LINES = 2


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


def whole_error(title: str, error: ReplayError | str) -> Text:
    """Everything about one error: title, location, the message, and every problem of an error
    that lists them (the message names only the first few)."""
    text = Text(title, style="bold")
    if not isinstance(error, ReplayError):
        text.append("\n" + error)
        return text
    text.append(f"\n{describe_error(error)}\n", style="bold")
    text.append(error.message)
    problems = getattr(error, "problems", None)
    if isinstance(problems, list) and len(problems) > MAX_LISTED_PROBLEMS:  # the message counts the rest
        text.append(f"\n\nAll {len(problems)} problems:", style="bold")
        for problem in problems:
            text.append(f"\n  {problem}")
    return text


def summary_line(error: ReplayError | str) -> Text:
    """The second line of a one-error banner: the message's first line, its file named by its
    base name (the whole text has the path)."""
    if not isinstance(error, ReplayError):
        return Text(error.splitlines()[0] if error else "")
    first = error.message.splitlines()[0] if error.message else ""
    if isinstance(error, InputError) and error.file:
        first = first.replace(error.file, Path(error.file).name)
    return Text(first)


class ErrorBanner(Widget, can_focus=True):
    """Hidden until an error is shown. Each source (the load, the server, ...) has its own
    section, so a bad path and a busy port both show; the next good load clears its own.

    A focus stop while it shows; Enter opens every section whole."""

    BINDINGS = bindings(k for k in LIST_KEYS if k.action == "open_detail")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._sections: dict[str, tuple[str, ReplayError | str]] = {}

    def show_error(self, title: str, error: ReplayError | str, *, source: str = "load") -> None:
        """Show an error with its location and the fix its message gives (replacing the
        earlier error of the same ``source``)."""
        self._sections[source] = (title, error)
        self._repaint()

    def clear(self, source: str = "load") -> None:
        """Take one source's error away (the banner hides when none is left)."""
        if self._sections.pop(source, None) is not None or not self._sections:
            self._repaint()

    def _repaint(self) -> None:
        self.set_class(bool(self._sections), "visible")
        self.refresh()

    @property
    def showing(self) -> bool:
        """Whether an error is on screen."""
        return self.has_class("visible")

    @property
    def whole(self) -> Text:
        """Every section whole (what Enter opens and tests read)."""
        return Text("\n\n").join(whole_error(t, e) for t, e in self._sections.values())

    def summary(self) -> list[Text]:
        """The two lines shown: one error's title and first line, or the first two titles."""
        sections = list(self._sections.values())
        if len(sections) == 1:
            title, error = sections[0]
            return [Text(title, style="bold"), summary_line(error)]
        lines = [Text(title, style="bold") for title, _ in sections[:SUMMARY_LINES]]
        if len(sections) > SUMMARY_LINES:
            lines[-1].append(f" (and {len(sections) - SUMMARY_LINES} more)")
        return lines

    def render(self) -> Text:
        width = self.size.width or 1 << 20  # not laid out yet: the lines whole
        lines = self.summary()
        if not lines:
            return Text()
        hint = Text("  Enter: all" if self.has_focus else "  Tab, Enter: all", style="italic")
        last = lines[-1]
        last.truncate(max(width - hint.cell_len, 8), overflow="ellipsis")
        lines[-1] = Text.assemble(last, hint)
        for line in lines:
            line.truncate(width, overflow="ellipsis")
        return Text("\n").join(lines)

    def action_open_detail(self) -> None:
        """Open the whole error text."""
        if self._sections:
            self.post_message(LineList.DetailRequested("Errors", self.whole))

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
