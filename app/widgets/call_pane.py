"""The call pane: assembled output, chunk list, live request vs recorded context, raw JSON.

Each tab is one list, and only the shown one can take focus, so the pane is one focus stop
whose list is the tab on screen; the tabs are named in the pane's bottom border (``[`` / ``]``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Hashable
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import ContentSwitcher

from replay_engine import CallRecord, SessionScript

from ..headless.callview import (
    ContextItem,
    diff_context,
    entry_chunks,
    live_new_messages,
    recorded_context,
)
from ..headless.scriptinfo import show_tokens
from .chunk_list import ChunkList, TextLines
from .line_list import LineList
from .output_view import output_view
from .rendered_lines import RenderedLines

TABS = ("output", "chunks", "request", "raw")
TAB_NAMES = {"output": "Output", "chunks": "Chunks", "request": "Request", "raw": "Raw"}
NOTHING = "Select a call in the scripts pane (↑ ↓ there; Tab moves between panes)."
NO_CALL = {"chunks": "select a call in the scripts (↓) for its chunks",
           "raw": "select a call in the scripts (↓) for its entry JSON"}
"""What the Chunks and Raw tabs say on a script row (or with nothing loaded): not a blank pane."""
NO_CHUNKS = "this call streams no chunks (Output and Raw say what it does)"
MARK_STYLE = {"=": "green", "≠": "bold red", "+": "bold yellow", "-": "bold yellow"}


@dataclass(frozen=True, slots=True)
class CallView:
    """Everything the pane shows about one call."""

    script: SessionScript
    script_index: int
    call_index: int
    record: CallRecord | None
    served: int | None
    live_ids: dict[int, str] | None = None
    """The live id bound to each script (``{{session:N}}`` tokens read with it)."""


def served_so_far(record: CallRecord, served: int | None) -> int:
    """Chunks the call has served: the binding's live count while it streams, paused or hangs
    (the journal's count is taken when the call ends), the journal's once it ended."""
    if record.outcome == "streaming" and served is not None:
        return served
    return record.chunks_served


def _request_facts(view: CallView | None) -> tuple[str, int] | None:
    """What the request tab shows that changes while the call runs (its outcome, its count)."""
    if view is None or view.record is None:
        return None
    return view.record.outcome, served_so_far(view.record, view.served)


class CallPane(Widget):
    """Tabs over the selected call; only the active tab is rendered."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: CallView | None = None
        self._dirty: set[str] = set()
        self._outcome: tuple[str, int] | None = None
        """The outcome and count the request tab last showed (it is painted again on change)."""
        self._about: Text | None = None
        self._shown_title = ""
        self.context_loaded = asyncio.Event()
        """Set once the Request tab shows its recorded context (loaded with the scripts)."""
        self.request_rows: list[tuple[str, str, str]] = []
        """The request tab's rows as plain text: (mark, live message, recorded message)."""

    def compose(self) -> ComposeResult:
        with ContentSwitcher(initial="output", id="call-tabs"):
            yield RenderedLines("Output", id="output")
            yield ChunkList(id="chunks")
            yield RenderedLines("Request", id="request")
            yield TextLines(id="raw")

    def on_mount(self) -> None:
        self._name_tabs()
        self.query_one("#output", RenderedLines).set_renderable(Text(NOTHING))

    def set_title(self, title: str) -> None:
        """Name what the pane shows (its border repaints only when the name changes)."""
        if title != self._shown_title:
            self._shown_title = title
            self.border_title = title

    @property
    def active(self) -> str:
        """The id of the active tab."""
        return self.query_one(ContentSwitcher).current or "output"

    @property
    def focus_list(self) -> LineList:
        """The list of the tab on screen (the pane's focus stop)."""
        return self.query_one(f"#{self.active}", LineList)

    def show_tab(self, tab: str) -> None:
        """Show ``tab``; focus moves with it when it was in the pane."""
        if tab == self.active:
            return
        had_focus = self.has_focus_within
        self.query_one(ContentSwitcher).current = tab
        self._name_tabs()
        self._render_tab(tab)
        if had_focus:
            self.focus_list.focus()

    def cycle_tab(self, step: int) -> None:
        """Switch to the next (1) or previous (-1) tab."""
        current = TABS.index(self.active) if self.active in TABS else 0
        self.show_tab(TABS[(current + step) % len(TABS)])

    def _name_tabs(self) -> None:
        active = self.active
        names = [f"[reverse] {TAB_NAMES[t]} [/]" if t == active else f" {TAB_NAMES[t]} "
                 for t in TABS]
        self.border_subtitle = "".join(names) + r" \[ ] "

    def show(self, view: CallView | None) -> None:
        """Show a call (or nothing); called on selection and on live updates of the call."""
        same = (
            view is not None and self.view is not None
            and (view.script is self.view.script and view.script_index == self.view.script_index
                 and view.call_index == self.view.call_index)
            and view.live_ids == self.view.live_ids
        )
        previous = self.view
        if view is None and previous is None and self._about is None:
            return  # still nothing selected
        self.view = view
        self._about = None
        if same and previous is not None and view is not None and previous.record is view.record:
            # Only the served count moved: repaint the highlight, nothing else.
            self.query_one(ChunkList).set_served(view.served)
            facts = _request_facts(view)
            if facts != self._outcome:  # the request tab says the outcome and the count
                self._outcome = facts
                self._dirty.add("request")
                if self.active == "request":
                    self._render_tab("request")
            return
        self._outcome = _request_facts(view)
        self._dirty = set(TABS)
        self._render_tab(self.active)

    def show_about(self, about: Text) -> None:
        """Show facts about something that is not a call (a script row is selected)."""
        if self._about is not None and about == self._about and self.view is None:
            return
        self.view = None
        self._about = about
        self._dirty = set(TABS)
        self._render_tab(self.active)

    def _render_tab(self, tab: str) -> None:
        view = self.view
        if tab == "chunks":
            chunks = entry_chunks(view.script.entries[view.call_index]) if view else ()
            listed = self.query_one(ChunkList)
            listed.set_empty_text(NO_CHUNKS if view else NO_CALL["chunks"])
            listed.set_chunks(chunks, view.served if view else None)
        elif tab in self._dirty:
            if tab == "output":
                self.query_one("#output", RenderedLines).set_renderable(
                    self._output, key=self._output_key())
            elif tab == "request":
                self.query_one("#request", RenderedLines).set_renderable(self._request())
            elif tab == "raw":
                lines: list[str] = []
                if view is not None:
                    item = view.script.entries[view.call_index]
                    text = json.dumps(item.to_json(with_origin=True), indent=2, ensure_ascii=False)
                    lines = show_tokens(text, view.live_ids or {}).splitlines()
                raw = self.query_one(TextLines)
                raw.set_empty_text("" if view else NO_CALL["raw"])
                raw.set_lines(lines)
        self._dirty.discard(tab)

    def _title(self) -> Text:
        view = self.view
        assert view is not None
        item = view.script.entries[view.call_index]
        chunks = len(entry_chunks(item))
        title = Text(f"call #{view.call_index} of [{view.script_index}] "
                     f"{view.script.recorded_id or '(no id)'}", style="bold")
        key = f"  key {item.call_key}" if item.call_key else ""
        lines = f"  lines {item.lines[0]}-{item.lines[1]}" if item.lines else ""
        title.append(f"{key}  {item.entry.kind}  {item.origin}  {chunks} chunk(s){lines}",
                     style="dim")
        return title

    def _output_key(self) -> Hashable | None:
        """What the Output tab's lines depend on (None: do not keep them)."""
        view = self.view
        if view is None:
            return None
        ids = tuple(sorted((view.live_ids or {}).items()))
        return (id(view.script.entries[view.call_index].entry), view.call_index, ids)

    def _output(self) -> RenderableType:
        view = self.view
        if view is None:
            return self._about if self._about is not None else Text(NOTHING)
        item = view.script.entries[view.call_index]
        return output_view(self._title(), item, view.live_ids or {})

    def _request(self) -> RenderableType:
        view = self.view
        if view is None:
            return self._about if self._about is not None else Text(NOTHING)
        head = self._title()
        record = view.record
        if record is None:
            live: list[ContextItem] = []
            head.append("\nnot requested yet in this run", style="italic")
        else:
            live = live_new_messages(record.messages, record.dialect)
            wire = f" over {record.dialect}" if record.dialect else ""
            head.append(f"\nlive request{wire}: call id {record.call_id}, session "
                        f"{record.session if record.session is not None else '(anonymous)'}, "
                        f"model {record.model or '-'}, {record.outcome}, "
                        f"{served_so_far(record, view.served)} chunk(s) served")
        recorded = self._recorded_context(view)
        if recorded is None:
            head.append("\nno recorded context: this entry comes from the sidecar", style="dim")
            recorded = []
        table = Table(expand=True, show_lines=True)
        table.add_column("", width=1)
        table.add_column("live request (new messages)", ratio=1)
        table.add_column("recorded context (log)", ratio=1)
        self.request_rows = []
        for mark, a, b in diff_context(live, recorded):
            row = (mark, f"{a.role}: {a.text}" if a else "", f"{b.role}: {b.text}" if b else "")
            self.request_rows.append(row)
            table.add_row(Text(mark, style=MARK_STYLE[mark]), row[1], row[2])
        return Group(head, table)

    def _recorded_context(self, view: CallView) -> list[ContextItem] | None:
        """What the log held before the call, as loaded with the scripts (no file is read)."""
        found = recorded_context(view.script, view.call_index)
        self.context_loaded.set()
        return found

    def forget_context(self) -> None:
        """Drop the rendered output (after a reload the scripts, and the recorded context they
        carry, may have changed)."""
        self.query_one("#output", RenderedLines).forget()
