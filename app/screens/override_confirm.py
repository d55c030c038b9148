"""Asks before unsaved override edits are thrown away."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static


class ConfirmDiscardScreen(ModalScreen[bool]):
    """Dismisses True to discard the unsaved changes, False to keep editing."""

    DEFAULT_CSS = """
    ConfirmDiscardScreen { align: center middle; }
    ConfirmDiscardScreen > Vertical {
        width: 64; height: auto; border: thick $warning; background: $surface; padding: 1 2;
    }
    ConfirmDiscardScreen Horizontal { height: auto; margin-top: 1; }
    ConfirmDiscardScreen Button { margin-right: 2; }
    """

    BINDINGS = [
        Binding("y,d", "answer(True)", "Discard"),
        Binding("n,escape", "answer(False)", "Keep editing"),
    ]

    def __init__(self, what: str, *, quitting: bool = False) -> None:
        super().__init__()
        self.what = what
        self.question = (f"Quit and discard unsaved changes to {what}?" if quitting
                         else f"Discard unsaved changes to {what}?")

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, id="oe-confirm-text")
            with Horizontal():
                yield Button("Discard (y)", variant="error", id="oe-discard")
                yield Button("Keep editing (n)", variant="primary", id="oe-keep")
        yield Footer(compact=True)  # its own keys, over the editor's (which would not act)

    def on_mount(self) -> None:
        self.query_one("#oe-keep", Button).focus()

    def action_answer(self, discard: bool) -> None:
        """Close with the answer."""
        self.dismiss(discard)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "oe-discard")
