"""A sidecar that does not load, as text beside every problem it has, checked again as you type.

The override editor shows this instead of its form when the sidecar is broken (invalid JSON,
or JSON with problems); it saves only a document with no problem left.
"""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import OptionList, Static, TextArea
from textual.widgets.option_list import Option

from replay_engine import EntryProblem, RawSidecar, Rename, SavedSidecar

from ..headless.override_edits import problem_line

CHECK_DELAY_S = 0.25
"""Typing pauses this long before the text is checked again."""
LARGE_TEXT = 64 * 1024
"""Texts longer than this are checked in a thread, so typing never waits for the check."""
LISTED = 500
"""At most this many problems are listed; the rest are counted."""


def _problem_text(problem: EntryProblem) -> Text:
    """A problem's line, its place (line, column) in bold."""
    text = Text(problem_line(problem))
    text.stylize("bold", 0, len(f"line {problem.line}, column {problem.column}"))
    return text


class RawSidecarPane(Vertical):
    """The sidecar's text (a TextArea) and its problems (Enter or a click jumps to one)."""

    DEFAULT_CSS = """
    RawSidecarPane { height: 1fr; }
    RawSidecarPane #rs-body { height: 1fr; }
    RawSidecarPane #rs-text { width: 3fr; height: 1fr; border: round $primary; }
    RawSidecarPane #rs-side { width: 2fr; min-width: 30; height: 1fr; }
    RawSidecarPane #rs-count { height: auto; padding: 0 1; }
    RawSidecarPane #rs-count.invalid { color: $error; text-style: bold; }
    RawSidecarPane #rs-count.valid { color: $success; text-style: bold; }
    RawSidecarPane #rs-problems { height: 1fr; border: round $error; }
    """

    class Checked(Message):
        """The text was checked: ``problems`` is what it has now (empty: it can be saved)."""

        def __init__(self, problems: list[EntryProblem]) -> None:
            super().__init__()
            self.problems = problems

    def __init__(self, raw: RawSidecar, problems: list[EntryProblem], *,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.raw = raw
        self.problems = problems
        """The problems of the text as last checked."""
        self.checked_text: str = raw.text
        """The text ``problems`` belong to."""
        self._timer: Timer | None = None
        self._generation = 0

    def compose(self) -> ComposeResult:
        with Horizontal(id="rs-body"):
            area = TextArea(self.raw.text, id="rs-text", soft_wrap=False, show_line_numbers=True)
            area.border_title = f"{self.raw.path.name} as text"
            yield area
            with Vertical(id="rs-side"):
                yield Static(id="rs-count")
                problems = OptionList(id="rs-problems")
                problems.border_title = "problems (Enter jumps to one)"
                yield problems

    def on_mount(self) -> None:
        self._show(self.problems)

    @property
    def text(self) -> str:
        """The text as it is now."""
        return self.query_one("#rs-text", TextArea).text

    @property
    def has_unsaved_changes(self) -> bool:
        """Whether the text differs from the file as read or last saved."""
        return self.text != self.raw.text

    @property
    def valid(self) -> bool:
        """Whether the text as it is now was checked and has no problem."""
        return not self.problems and self.checked_text == self.text

    def _show(self, problems: list[EntryProblem]) -> None:
        count = self.query_one("#rs-count", Static)
        count.set_class(bool(problems), "invalid")
        count.set_class(not problems, "valid")
        if problems:
            count.update(f"✗ {len(problems)} problem(s): ^s saves once none is left")
        else:
            count.update("✓ no problem: ^s saves it and reloads the scenario")
        options = [Option(_problem_text(p), id=str(i)) for i, p in enumerate(problems[:LISTED])]
        if len(problems) > LISTED:
            options.append(Option(f"… and {len(problems) - LISTED} more", disabled=True))
        listed = self.query_one("#rs-problems", OptionList)
        before = listed.highlighted
        listed.clear_options()
        listed.add_options(options)
        if problems:  # a row is always highlighted, so Enter on the list jumps to one
            listed.highlighted = min(before or 0, min(len(problems), LISTED) - 1)

    def on_key(self, event: events.Key) -> None:
        """Text typed while the problems list has focus goes to the text, at its cursor (the
        list has no use for it)."""
        listed = self.query_one("#rs-problems", OptionList)
        if listed.has_focus and event.is_printable and event.character:
            event.stop()
            event.prevent_default()
            area = self.query_one("#rs-text", TextArea)
            area.focus()
            area.insert(event.character)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(CHECK_DELAY_S, self._check_soon)

    def _check_soon(self) -> None:
        self.run_worker(self.check(), group="rs-check", exclusive=True)

    async def check(self) -> list[EntryProblem]:
        """Check the text as it is now (in a thread when it is large) and show the problems."""
        self._generation += 1
        generation, text = self._generation, self.text
        if len(text) > LARGE_TEXT:
            problems = await asyncio.to_thread(self.raw.problems, text)
        else:
            problems = self.raw.problems(text)
        if generation == self._generation:
            self.problems, self.checked_text = problems, text
            self._show(problems)
            self.post_message(self.Checked(problems))
        return problems

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Put the cursor where the chosen problem is."""
        event.stop()
        index = int(event.option.id or 0)
        if index < len(self.problems):
            problem = self.problems[index]
            area = self.query_one("#rs-text", TextArea)
            area.cursor_location = (problem.line - 1, problem.column - 1)
            area.scroll_cursor_visible(center=True)
            area.focus()

    async def save(self, rename: Rename | None = None) -> SavedSidecar:
        """Check the text once more and write it; raises ReplayError (nothing written) while it
        has problems, OSError when the file cannot be written."""
        text = self.text
        if self._timer is not None:
            self._timer.stop()
        saved = await asyncio.to_thread(self.raw.save, text, rename=rename)
        self.checked_text, self.problems = text, []
        return saved
