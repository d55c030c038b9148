"""A detail view: one long line (a log line, a chunk, a session row, a call) shown whole, wrapped,
with a key that copies it to the clipboard."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static


class DetailScreen(ModalScreen[None]):
    """Shows ``text`` whole; ``c`` copies it, Esc / Enter / q close."""

    DEFAULT_CSS = """
    DetailScreen { align: center middle; }
    #detail { width: 92%; height: 80%; border: thick $primary; background: $surface; }
    #detail-body { height: 1fr; padding: 0 1; }
    """
    BINDINGS = [
        Binding("c", "copy", "Copy", tooltip="Copy the whole text to the clipboard."),
        Binding("escape,enter,q", "dismiss", "Close", key_display="Esc"),
    ]

    def __init__(self, title: str, text: str | Text) -> None:
        super().__init__()
        self.title_text = title
        self.text = text

    @property
    def plain(self) -> str:
        """The text without styles (what is copied)."""
        return self.text.plain if isinstance(self.text, Text) else self.text

    def compose(self) -> ComposeResult:
        with Vertical(id="detail") as box:
            box.border_title = self.title_text
            with VerticalScroll(id="detail-body"):
                yield Static(self.text if isinstance(self.text, Text) else Text(self.text), id="detail-text")
        yield Footer(compact=True)

    def action_copy(self) -> None:
        """Copy the text to the clipboard (OSC 52)."""
        self.app.copy_to_clipboard(self.plain)
        self.notify(f"Copied {len(self.plain)} character(s) to the clipboard.")
