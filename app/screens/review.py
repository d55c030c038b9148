"""The review before anything is installed: every call of the old and the new scenario, the
selected one's Output view old beside new, jumps from changed call to changed call, and the
end in keep (True) or discard (False)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from replay_engine import CallDiff, ScenarioDiff, ScriptDiff

from .. import keymap
from ..widgets.output_view import output_view

MARKS = {"same": ("=", "dim"), "changed": ("≠", "bold yellow"), "added": ("+", "bold green"),
         "removed": ("-", "bold red")}


def row_text(script: ScriptDiff, call: CallDiff) -> Text:
    """One row of the list: mark, script and call, status and what changed."""
    mark, style = MARKS[call.status]
    text = Text(f"{mark} [{script.index}] #{call.index} {call.status}", style=style)
    if call.changes:
        note = " (usage-only)" if call.usage_only else " (timing-only)" if call.timing_only else ""
        text.append(f": {', '.join(call.changes)}{note}", style="")
    return text


class ReviewScreen(Screen[bool]):
    """Old and new calls side by side; dismissed with True (keep) or False (discard)."""

    BINDINGS = keymap.bindings(keymap.REVIEW_KEYS)
    HELP_KEYS = keymap.REVIEW_KEYS
    """What ``?`` and the palette list here (not the main screen's keys and search syntax)."""
    HELP_NOTE = ""
    DEFAULT_CSS = """
    ReviewScreen #rv-summary { height: auto; padding: 0 1; }
    ReviewScreen #rv-calls { height: 1fr; max-height: 40%; }
    ReviewScreen #rv-sides { height: 2fr; }
    ReviewScreen .rv-side { width: 1fr; border: round $secondary; }
    """

    def __init__(self, diff: ScenarioDiff, problems: list[str]) -> None:
        super().__init__()
        self.diff = diff
        self.problems = problems
        self.rows: list[tuple[ScriptDiff, CallDiff]] = [
            (script, call) for script in diff.scripts for call in script.calls]

    def compose(self) -> ComposeResult:
        yield Static(self._summary(), id="rv-summary")
        yield OptionList(*(Option(row_text(s, c)) for s, c in self.rows), id="rv-calls")
        with Horizontal(id="rv-sides"):
            with VerticalScroll(classes="rv-side", id="rv-old-box"):
                yield Static(id="rv-old")
            with VerticalScroll(classes="rv-side", id="rv-new-box"):
                yield Static(id="rv-new")
        yield Footer()

    def _summary(self) -> Text:
        counts = self.diff.counts()
        differ = counts["changed"] + counts["added"] + counts["removed"]
        text = Text("Review before keeping: ", style="bold")
        text.append(f"{differ} call(s) differ ({counts['changed']} changed, "
                    f"{counts['usageOnly']} usage-only, {counts['timingOnly']} timing-only, "
                    f"{counts['added']} added, {counts['removed']} removed), "
                    f"{counts['same']} same")
        for problem in self.problems:
            text.append(f"\n⚠ {problem}", style="bold red")
        return text

    def on_mount(self) -> None:
        calls = self.query_one("#rv-calls", OptionList)
        calls.focus()
        first = next((i for i, (_, c) in enumerate(self.rows) if c.status != "same"), 0)
        if self.rows:
            calls.highlighted = first
            self.show(first)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.show(event.option_index)

    @property
    def current(self) -> int | None:
        """The highlighted row."""
        return self.query_one("#rv-calls", OptionList).highlighted

    def show(self, index: int) -> None:
        """Show row ``index``'s call old beside new (the Output view of each)."""
        script, call = self.rows[index]
        for side, label, script_side in (("old", "old", script.old), ("new", "new", script.new)):
            widget = self.query_one(f"#rv-{side}", Static)
            present = script_side is not None and call.index < len(script_side.entries)
            title = Text(f"{label}: [{script.index}] #{call.index}", style="bold")
            if script_side is None or not present:
                widget.update(Text.assemble(title, ("\n(no such call)", "dim")))
                continue
            widget.update(output_view(title, script_side.entries[call.index], {}))
        if call.changes:
            self.query_one("#rv-summary", Static).update(
                Text.assemble(self._summary(), "\n", (f"#{call.index}: ", "bold"),
                              "; ".join(call.details())))
        else:
            self.query_one("#rv-summary", Static).update(self._summary())

    def action_next_change(self, step: int) -> None:
        """Jump to the next (step 1) or previous (-1) call that is not the same."""
        here = self.current if self.current is not None else -1
        order = range(here + 1, len(self.rows)) if step > 0 else range(here - 1, -1, -1)
        for index in order:
            if self.rows[index][1].status != "same":
                self.query_one("#rv-calls", OptionList).highlighted = index
                return
        self.notify("No more changed calls that way.", timeout=2)

    def action_keep(self) -> None:
        """Install the new calls."""
        self.dismiss(True)

    def action_discard(self) -> None:
        """Drop the new calls."""
        self.dismiss(False)
