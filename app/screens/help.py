"""The help screen (``?``): every key of the screen below it, by area, from the key table plus any
binding the table does not describe."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from .. import keymap
from ..keymap import Key

SEARCH_NOTE = ("Search syntax: words match a call's summary, tool names, kind, origin, finish and "
               "turn/step key; tool:NAME, kind:KIND (chunks, throw, hang) and origin:ORIGIN (derived, "
               "patched, replaced, appended) match one field. Every word must match. Enter keeps the "
               "filter, Esc clears it.")


def help_rows(screen: Screen[object], keys: tuple[Key, ...]) -> list[tuple[str, list[tuple[str, str]]]]:
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


class HelpScreen(ModalScreen[None]):
    """Keys by area; any key closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    #help { width: 92%; max-width: 120; height: 92%; border: thick $primary; background: $surface; }
    #help-body { height: 1fr; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close", key_display="Esc")]

    def __init__(self, over: Screen[object], keys: tuple[Key, ...], note: str | None = None) -> None:
        super().__init__()
        self.sections = help_rows(over, keys)
        self.note: str = note if note is not None else getattr(over, "HELP_NOTE", SEARCH_NOTE)
        """Below the keys: the screen's own ``HELP_NOTE`` (the main screen's search syntax)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="help") as box:
            box.border_title = "Keys (Esc closes)"
            with VerticalScroll(id="help-body"):
                yield Static(self._table(), id="help-table")
                if self.note:
                    yield Static(Text(self.note, style="dim"), id="help-note")
        yield Footer(compact=True)

    def _table(self) -> Table:
        table = Table(box=None, show_header=False, expand=True, padding=(0, 1))
        width = max([14, *(len(area) for area, _ in self.sections)])  # area names are not cut
        table.add_column("key", style="bold cyan", no_wrap=True, width=width)
        table.add_column("action", ratio=1)
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
