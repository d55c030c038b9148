"""Asks which wire the demo agent speaks before it runs: chat completions, Messages, Responses
or Gemini."""

from __future__ import annotations

from typing import Literal, cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

DemoDialect = Literal["openai", "anthropic", "responses", "gemini"]
"""The dialects the demo agent can drive (replay_engine's DEMO_DIALECTS)."""

CHOICES: tuple[tuple[DemoDialect, str], ...] = (
    ("openai", "1  openai     chat completions, the openai SDK  (POST /v1/chat/completions)"),
    ("anthropic", "2  anthropic  Messages, streamed with httpx  (POST /v1/messages)"),
    ("responses", "3  responses  Responses, the openai SDK's responses.stream  (POST /v1/responses)"),
    ("gemini", "4  gemini     Gemini, streamed with httpx  "
               "(POST /v1beta/models/{model}:streamGenerateContent)"),
)
"""Each dialect and how the chooser lists it."""


class DialectChoiceScreen(ModalScreen[DemoDialect | None]):
    """Dismisses the chosen dialect, or None when closed without one."""

    DEFAULT_CSS = """
    DialectChoiceScreen { align: center middle; }
    DialectChoiceScreen > Vertical {
        width: 92; max-width: 100%; height: auto; border: thick $accent; background: $surface;
        padding: 1 2;
    }
    DialectChoiceScreen OptionList { height: auto; margin-top: 1; }
    """

    BINDINGS = [
        Binding("1", "choose('openai')", "openai"),
        Binding("2", "choose('anthropic')", "anthropic"),
        Binding("3", "choose('responses')", "responses"),
        Binding("4", "choose('gemini')", "gemini"),
        Binding("escape", "cancel", "Cancel", key_display="Esc"),
    ]

    def __init__(self, selected: DemoDialect = "openai") -> None:
        super().__init__()
        self.selected = selected

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Run the demo agent over which wire? (Enter or 1-4; Esc cancels)",
                         id="dialect-question")
            yield OptionList(*(Option(label, id=name) for name, label in CHOICES),
                             id="dialect-options")
        yield Footer(compact=True)  # its own keys, over the main screen's (which would not act)

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = [name for name, _ in CHOICES].index(self.selected)
        options.focus()

    def action_choose(self, dialect: str) -> None:
        """Close with ``dialect``."""
        self.dismiss(cast(DemoDialect, dialect))

    def action_cancel(self) -> None:
        """Close without running the demo agent."""
        self.dismiss(None)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.action_choose(event.option.id)
