"""The help screen (``?``): every key of the screen below it, by area, from the key table plus any
binding the table does not describe."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Static

from .. import keymap
from ..keymap import Key

SEARCH_NOTE = ("Search syntax: words match a call's summary, tool names, kind, origin, finish and "
               "turn/step key; tool:NAME, kind:KIND (chunks, throw, hang) and origin:ORIGIN (derived, "
               "patched, replaced, appended) match one field. Every word must match. Enter keeps the "
               "filter, Esc clears it.")


Sections = list[tuple[str, list[tuple[str, str]]]]
"""(area, [(key, what it does)]) in the order the help lists them."""


def help_rows(screen: Screen[object], keys: tuple[Key, ...]) -> Sections:
    """(area, [(key, what it does)]) for ``keys`` and the bindings of ``screen`` the table lacks."""
    merged: dict[tuple[str, str], list[str]] = {}
    for key in keys:
        shown = key.display or screen.app.get_key_display(Binding(key.keys.split(",")[0], key.action))
        merged.setdefault((key.area, key.help), []).append(shown)
    known = {key.action for key in keymap.TABLE}
    for active in screen.active_bindings.values():
        binding = active.binding
        if (binding.system or binding.action in known or not binding.description
                or keymap.textual_builtin(active.node, binding)):
            continue
        text = binding.tooltip or binding.description
        merged.setdefault((keymap.OTHER, text), []).append(screen.app.get_key_display(binding))
    items = [(area, " ".join(dict.fromkeys(shown)), text) for (area, text), shown in merged.items()]
    return keymap.grouped(items)


def matching(sections: Sections, query: str) -> Sections:
    """The rows of ``sections`` that every word of ``query`` matches (in the key, what it does
    or its area), case-insensitively; areas left without rows go."""
    words = query.lower().split()
    found: Sections = []
    for area, rows in sections:
        kept = [(shown, text) for shown, text in rows
                if all(w in f"{area} {shown} {text}".lower() for w in words)]
        if kept:
            found.append((area, kept))
    return found


class HelpScreen(ModalScreen[None]):
    """Keys by area; ``/`` filters them, Esc (or ``q``, ``?``, F1) closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    #help { width: 92%; max-width: 120; height: 92%; border: thick $primary; background: $surface; }
    #help-body { height: 1fr; padding: 0 1; }
    #help-search { display: none; }
    #help-search.-open { display: block; }
    """
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close", key_display="Esc"),
                Binding("slash", "search", "Search", key_display="/")]
    AUTO_FOCUS = "#help-body"
    """The rows (the arrows scroll them), not the filter box until ``/`` opens it."""

    def __init__(self, over: Screen[object], keys: tuple[Key, ...], note: str | None = None) -> None:
        super().__init__()
        self.all_sections = help_rows(over, keys)
        self.sections = self.all_sections
        """The rows shown (all of them, or those the ``/`` filter matches)."""
        self.note: str = note if note is not None else getattr(over, "HELP_NOTE", SEARCH_NOTE)
        """Below the keys: the screen's own ``HELP_NOTE`` (the main screen's search syntax)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="help") as box:
            box.border_title = "Keys (/ filters, Esc closes)"
            yield Input(placeholder="filter: words of a key or what it does (Enter: read them)",
                        id="help-search", compact=True)
            with VerticalScroll(id="help-body"):
                yield Static(self._table(), id="help-table")
                if self.note:
                    yield Static(Text(self.note, style="dim"), id="help-note")
        yield Footer(compact=True)

    def action_search(self) -> None:
        """Open the filter box (typing goes to it; the rows follow as you type)."""
        box = self.query_one("#help-search", Input)
        box.add_class("-open")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.sections = matching(self.all_sections, event.value)
        self.query_one("#help-table", Static).update(self._table(event.value))
        self.query_one("#help-body", VerticalScroll).scroll_home(animate=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#help-body", VerticalScroll).focus()

    def _table(self, query: str = "") -> Table:
        table = Table(box=None, show_header=False, expand=True, padding=(0, 1))
        width = max([14, *(len(area) for area, _ in self.all_sections)])  # area names are not cut
        table.add_column("key", style="bold cyan", no_wrap=True, width=width)
        table.add_column("action", ratio=1)
        if not self.sections:
            table.add_row("", Text(f"no key matches {query!r}", style="italic"))
        for area, rows in self.sections:
            table.add_row(Text(area, style="bold underline"), "")
            for shown, text in rows:
                table.add_row(shown, text)
        return table

    @property
    def text(self) -> str:
        """The help as plain lines (what tests read)."""
        return "\n".join(f"{area}: " + "; ".join(f"{k} {t}" for k, t in rows)
                         for area, rows in self.sections)
