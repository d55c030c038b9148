"""The live pane: bound sessions (key, cursor, state, script) and the event log."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical

from replay_engine import BindingState, RunState

from ..headless.scriptinfo import bound_words
from .event_log import EventLog, LiveList
from .line_list import LineList
from .scripts_view import STATUS_STYLE

LOG_LINES = 2000
KEY_WIDTH = 12
CURSOR_WIDTH = 7
STATE_WIDTH = 22
RUN_WIDTH = 10
"""The run column, shown once a session of another run than the followed one is bound."""


class SessionList(LiveList):
    """One row per bound session (virtual: repainting it never re-lays out the screen).

    The columns most needed come first (key, cursor, state), the script last, so a narrow pane
    cuts the least useful part; Enter shows a row whole (a hang's readyFile included). With no
    session bound, its rows say how to connect one."""

    cursor_when_blurred = False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[tuple[BindingState, str]] = []
        self.with_run = False
        self.hint: list[str] = ["no session bound yet"]
        """What the list says while no session is bound (how to connect one)."""

    def row_text(self, index: int) -> Text:
        if not self.rows:
            line = self.hint[index] if index < len(self.hint) else ""
            return Text(line, style="italic" if index else "bold yellow")
        run = f"{'run':<{RUN_WIDTH}} " if self.with_run else ""
        if index == 0:
            return Text(f"{run}{'session':<{KEY_WIDTH}} {'cursor':>{CURSOR_WIDTH}}  "
                        f"{'state':<{STATE_WIDTH}} script", style="bold")
        b, plain = self.rows[index - 1]
        start = len(run) + KEY_WIDTH + CURSOR_WIDTH + 3
        text = Text(plain[:start])
        text.append(plain[start:start + STATE_WIDTH], style=STATUS_STYLE[b.status])
        text.append(plain[start + STATE_WIDTH:])
        return text

    def move_to(self, index: int) -> None:
        """Rows from the first session: the column header (row 0) opens nothing with Enter."""
        super().move_to(max(index, 1) if self.rows else index)

    def detail(self, index: int) -> tuple[str, str | Text] | None:
        if not self.rows:
            return self.detail_of_hint()
        if index == 0:
            return None
        b, _ = self.rows[index - 1]
        return f"Session {b.session if b.session is not None else '(anonymous)'}", session_detail(b)

    def detail_of_hint(self) -> tuple[str, str | Text] | None:
        """The connection hint whole (Enter on it while no session is bound)."""
        return "No session bound yet", "\n".join(self.hint)


def session_detail(b: BindingState) -> str:
    """Every fact of a bound session, one per line (nothing cut)."""
    lines = [f"session    {b.session if b.session is not None else '(anonymous)'}",
             f"script     [{b.script_index}]",
             f"cursor     {b.cursor}/{b.length}",
             f"state      {b.status}",
             f"bound      {bound_words(b)}"]
    if b.call_index is not None:
        lines.append(f"call       #{b.call_index}, {b.chunks_served} chunk(s) served")
    if b.ready_file:
        lines.append(f"readyFile  {b.ready_file}")
    if b.aborted:
        lines.append("aborted    " + ", ".join(f"#{j}" for j in b.aborted))
    return "\n".join(lines)


def session_row(b: BindingState, names: list[str], run: str | None = None) -> str:
    """One bound session as a line: (run,) key, cursor, state (with the call), script, readyFile."""
    prefix = f"{run[:RUN_WIDTH]:<{RUN_WIDTH}} " if run is not None else ""
    key = b.session if b.session is not None else "(anonymous)"
    if len(key) > KEY_WIDTH:
        key = key[: KEY_WIDTH - 1] + "…"
    script = f"[{b.script_index}] {names[b.script_index] if b.script_index < len(names) else '?'}"
    status = b.status.upper() if b.status == "hanging" else b.status
    if b.call_index is not None:
        status += f" #{b.call_index} {b.chunks_served}ch"
    if b.aborted:
        status += " aborted " + ",".join(f"#{j}" for j in b.aborted)
    if len(status) > STATE_WIDTH:  # the script column stays in line; Enter shows the whole row
        status = status[: STATE_WIDTH - 1] + "…"
    tail = f"  readyFile {b.ready_file}" if b.ready_file else ""
    return (f"{prefix}{key:<{KEY_WIDTH}} {f'{b.cursor}/{b.length}':>{CURSOR_WIDTH}}  "
            f"{status:<{STATE_WIDTH}} {script} by {b.rule}{tail}")


class LivePane(Vertical):
    """Sessions on top, events below: one focus stop, ← / → between the two lists."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[str] = []
        """Plain text of the event log (what it shows, newest last)."""
        self.sessions: list[str] = []
        """Plain text of each bound-session row (what the list shows)."""
        self._last_key: object = None
        self._on_sessions = False

    def compose(self) -> ComposeResult:
        yield SessionList(id="sessions")
        yield EventLog(id="event-log", max_lines=LOG_LINES)

    def on_mount(self) -> None:
        self._size_sessions()

    @property
    def session_list(self) -> SessionList:
        """The bound sessions."""
        return self.query_one(SessionList)

    @property
    def focus_list(self) -> LineList:
        """The list the pane's focus stop lands on (the event log unless the user went to the
        sessions)."""
        return self.session_list if self._on_sessions else self.event_log

    def on_live_list_switch_requested(self, message: LiveList.SwitchRequested) -> None:
        message.stop()
        self._on_sessions = message.list is not self.session_list
        self.focus_list.focus()

    def on_descendant_focus(self) -> None:
        focused = self.screen.focused
        if focused is self.session_list or focused is self.event_log:
            self._on_sessions = focused is self.session_list

    def set_hint(self, lines: list[str]) -> None:
        """What the sessions list says while no session is bound."""
        view = self.session_list
        if lines != view.hint:
            view.hint = lines
            if not view.rows:
                self._size_sessions()
                view.refresh()

    def _size_sessions(self) -> None:
        view = self.session_list
        count = len(view.rows) + 1 if view.rows else len(view.hint)
        if count != view.row_count:
            view.set_rows(count)  # a fixed height (app.tcss): a new count never re-lays out

    def set_state(self, state: RunState, names: list[str],
                  others: Sequence[RunState] = ()) -> None:
        """Repaint the sessions from run snapshots (``names``: recorded id per script): the
        followed run's first, then ``others``; a run column shows once another run bound one."""
        with_run = any(s.bindings for s in others if s.run != state.run)
        runs = [state, *(s for s in others if s.run != state.run)]
        rows = [(b, session_row(b, names, s.run if with_run else None))
                for s in runs for b in s.bindings]
        sessions = [plain for _, plain in rows]
        view = self.session_list
        before = view.rows
        self.sessions = sessions
        view.rows = rows
        if len(rows) != len(before) or with_run != view.with_run:
            view.with_run = with_run
            self._size_sessions()
            view.move_to(view.cursor)  # off the column header once a session is listed
            view.refresh()
            return
        for i, ((b, plain), (old, old_plain)) in enumerate(zip(rows, before, strict=True)):
            if plain != old_plain or b.status != old.status:
                view.refresh_row(i + 1)  # row 0 is the column header

    def log_event(self, line: str | Text, *, key: object = None) -> None:
        """Append one line to the event log; a line with the same ``key`` as the newest line
        replaces it (a call stepped chunk by chunk keeps one line, not one per chunk)."""
        self.log_events([(line, key)])

    def log_events(self, lines: list[tuple[str | Text, object]]) -> None:
        """Append lines (each with its ``key``, as ``log_event``), repainting the log once."""
        written: list[tuple[str | Text, bool]] = []
        for line, key in lines:
            replace = key is not None and key == self._last_key
            self._last_key = key
            plain = line.plain if isinstance(line, Text) else line
            if replace and self.lines:
                self.lines[-1] = plain
            else:
                self.lines.append(plain)
            written.append((line, replace))
        if len(self.lines) > LOG_LINES:
            del self.lines[: len(self.lines) - LOG_LINES]
        for view in self.query(EventLog):  # none while the app shuts down
            view.write_many(written)

    @property
    def event_log(self) -> EventLog:
        """The event log widget."""
        return self.query_one(EventLog)
