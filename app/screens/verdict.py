"""The assert-consumed verdict, shown over the main screen until a key is pressed."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from replay_engine import verdict_text


class VerdictScreen(ModalScreen[None]):
    """Lists every assert-consumed problem (or says the run is consumed)."""

    BINDINGS = [Binding("escape,enter,q,a", "dismiss", "Close")]

    def __init__(self, problems: list[str], scripts: int) -> None:
        super().__init__()
        self.problems = problems
        self.scripts = scripts

    def compose(self) -> ComposeResult:
        style = "bold green" if not self.problems else "bold red"
        with Vertical(id="verdict"):
            yield Static(Text(verdict_text(self.problems, self.scripts), style=style))
            yield Static(Text("press Enter or Esc to close", style="dim"))
