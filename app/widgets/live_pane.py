"""The live pane: bound sessions (key, script, cursor, state) and the event log."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import RichLog, Static

from replay_engine.engine import RunState

from .scripts_view import STATUS_STYLE

LOG_LINES = 2000


class LivePane(Vertical):
    """Sessions on top (short: one row per bound session), events below."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[str] = []
        self.sessions: list[str] = []
        """Plain text of each bound-session row (what the table shows)."""

    def compose(self) -> ComposeResult:
        yield Static(Text("no session bound yet", style="dim"), id="sessions")
        yield RichLog(id="event-log", max_lines=LOG_LINES, wrap=True, markup=False)

    def set_state(self, state: RunState, names: list[str]) -> None:
        """Repaint the sessions table from a run snapshot (``names``: recorded id per script)."""
        self.sessions = []
        if not state.bindings:
            self.query_one("#sessions", Static).update(Text("no session bound yet", style="dim"))
            return
        table = Table(expand=True, box=None, pad_edge=False)
        for column in ("session", "script", "cursor", "state"):
            table.add_column(column)
        for b in state.bindings:
            key = b.session if b.session is not None else "(anonymous)"
            script = names[b.script_index] if b.script_index < len(names) else "?"
            status = b.status.upper() if b.status == "hanging" else b.status
            if b.call_index is not None:
                status += f" #{b.call_index} ({b.chunks_served} chunk(s))"
            if b.ready_file:
                status += f" readyFile {b.ready_file}"
            cells = (key, f"[{b.script_index}] {script}", f"{b.cursor}/{b.length}", status)
            self.sessions.append("  ".join(cells))
            table.add_row(*cells[:3], Text(status, style=STATUS_STYLE[b.status]))
        self.query_one("#sessions", Static).update(table)

    def log_event(self, line: str | Text) -> None:
        """Append one line to the event log (kept for tests and the quit verdict)."""
        plain = line.plain if isinstance(line, Text) else line
        self.lines.append(plain)
        if len(self.lines) > LOG_LINES:
            del self.lines[: len(self.lines) - LOG_LINES]
        self.query_one(RichLog).write(line)
