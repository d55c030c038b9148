"""The assert-consumed verdict, shown over the main screen until a key is pressed."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from replay_engine import verdict_text


def verdict_lines(problems: list[str], scripts: int, notes: list[str], *, run: str,
                  loaded: bool = True) -> tuple[str, bool]:
    """The verdict of one run as shown (and logged), and whether it reads as a success.

    ``problems`` is the engine's verdict (docs/format.md#binding, refused, in flight, cut, strict divergence);
    ``notes`` add what is worth knowing without failing it (the first divergence).
    """
    if not loaded:
        return (f"assert-consumed (run {run}): nothing served — the scenario never loaded; fix "
                "it (see the banner) and press l", False)
    text = verdict_text(problems, scripts, run)
    if notes:
        text += "\n" + "\n".join(f"  {n}" for n in notes)
    return text, not problems


class VerdictScreen(ModalScreen[None]):
    """Lists every problem of the verdict (or says the run is consumed) and the first divergence."""

    BINDINGS = [Binding("escape,enter,q,a", "dismiss", "Close", key_display="Esc")]

    def __init__(self, problems: list[str], scripts: int, notes: list[str] | None = None, *,
                 run: str = "default", loaded: bool = True) -> None:
        super().__init__()
        self.problems = problems
        self.scripts = scripts
        self.notes = list(notes or [])
        self.loaded = loaded
        self.text, self.ok = verdict_lines(problems, scripts, self.notes, run=run, loaded=loaded)

    def compose(self) -> ComposeResult:
        style = "bold green" if self.ok else ("bold red" if self.problems or not self.loaded
                                              else "bold yellow")
        with Vertical(id="verdict"):
            yield Static(Text(self.text, style=style))
            yield Static(Text("press Enter or Esc to close", style="dim"))
        yield Footer(compact=True)  # its own keys, over the main screen's (which would not act)
