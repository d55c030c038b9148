"""Messages the debugger's widgets post (past tense: what happened)."""

from __future__ import annotations

from textual.message import Message


class CallSelected(Message):
    """The user moved to a call (``call_index`` None: a script header row)."""

    def __init__(self, script_index: int, call_index: int | None) -> None:
        super().__init__()
        self.script_index = script_index
        self.call_index = call_index
