"""The scripts pane: every session script in bind order, one row per call (virtual)."""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Hashable, Iterable
from typing import Any

from rich.text import Text

from replay_engine import (
    BindingState,
    LoadProgress,
    RunState,
    SessionScript,
    entry_to_json,
    summarize_entry,
)

from ..headless.scriptinfo import live_ids, show_tokens, source_label
from ..headless.search import CallFacts, Query, call_facts, call_matches, parse_query
from ..messages import CallSelected
from .line_list import LineList

MARKS_WIDTH = 4
"""Breakpoint, live position, served, diverged."""
INDEX_WIDTH = 5
KEY_WIDTH = 5
KIND_WIDTH = 6
ORIGIN_WIDTH = 8
FINISH_WIDTH = 16
SUMMARY_WIDTH = 50
ROW_WIDTH = (MARKS_WIDTH + INDEX_WIDTH + KEY_WIDTH + 1 + KIND_WIDTH + 1 + ORIGIN_WIDTH + 1
             + FINISH_WIDTH + 1 + SUMMARY_WIDTH)
"""Cells a call row needs whole (the side-by-side layout gives the pane this much, within
limits, so summaries are not cut)."""
KIND_STYLE = {"chunks": "green", "throw": "bold red", "hang": "bold magenta"}
ORIGIN_STYLE = {"derived": "dim", "patched": "yellow", "replaced": "cyan", "appended": "blue"}
STATUS_STYLE = {"streaming": "bold green", "paused": "bold yellow", "hanging": "bold red",
                "idle": "cyan"}


def _live_key(b: BindingState | None) -> Hashable:
    """What of a binding the rows show (a change repaints them)."""
    if b is None:
        return None
    return (b.session, b.cursor, b.call_index, b.status, b.aborted, b.unfinished, b.diverged)


def _moved_calls(before: BindingState, after: BindingState) -> set[int]:
    """The calls whose marks differ between two states of one binding."""
    low, high = sorted((before.cursor, after.cursor))
    moved = set(range(low, high + 1))
    moved |= {j for j in (before.call_index, after.call_index) if j is not None}
    for old, new in ((before.unfinished, after.unfinished), (before.diverged, after.diverged)):
        moved |= set(old) ^ set(new)
    return moved


def _call_marks(b: BindingState | None, j: int) -> Hashable:
    """What of a binding one call row shows."""
    if b is None:
        return None
    return (j < b.cursor, j == b.cursor, b.status if b.call_index == j else None,
            j in b.unfinished, j in b.diverged)


def cell(text: str, width: int) -> str:
    """``text`` in a column of ``width`` plus one space, cut with an ellipsis (never run together)."""
    if len(text) > width:
        text = text[: width - 1] + "…"
    return f"{text:<{width}} "


class ScriptsView(LineList):
    """Rows: a header per script, then its calls with turn/step key, kind, origin, finish and
    summary. A search filter hides the calls that do not match (and scripts with none)."""

    DEFAULT_CSS = f"ScriptsView {{ width: {ROW_WIDTH + 2}; max-width: 55%; }}"
    """Side by side, the pane is as wide as a whole call row (and its border), within limits."""
    empty_text = "no scripts: nothing is loaded (the banner above says why)"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.scripts: list[SessionScript] = []
        self._offsets: list[int] = []
        self._live: dict[int, BindingState] = {}
        self._ids: dict[int, str] = {}
        """The live id bound to each script (``{{session:N}}`` tokens read with it)."""
        self._breakpoints: frozenset[tuple[int, int]] = frozenset()
        self._summaries: dict[tuple[int, int], dict[str, Any]] = {}
        self._facts: dict[tuple[int, int], CallFacts] = {}
        self.loading_note: str | None = None
        """Why the rows are not the loaded scripts yet: the first load still reads them."""
        self._filter = Query()
        self._visible: list[int] | None = None
        self._anchor: tuple[int, int | None] | None = None
        """The call selected when the search started (restored once a filter shows it again)."""
        """Full-list row of each shown row while a filter is on (None: every row shows)."""

    # -- data in -----------------------------------------------------------------------

    def set_scripts(self, scripts: list[SessionScript], *, loading: str | None = None) -> None:
        """New scripts (load or reload); the selected call stays selected when it still exists.
        ``loading`` marks the first script as still being read (its header row says so)."""
        selected = self.selected()
        self.scripts = scripts
        self.loading_note = loading
        self._summaries.clear()
        self._facts.clear()
        self._strips.clear()
        self._offsets = []
        total = 0
        for script in scripts:
            self._offsets.append(total)
            total += 1 + len(script.entries)
        self._total = total
        self._apply_filter(selected)

    def show_loading(self, progress: LoadProgress | None) -> None:
        """The first load's primary as far as it is read, marked as loading (None: no rows)."""
        if progress is None:
            self.set_scripts([])
            return
        self.set_scripts([progress.primary], loading=progress.describe())

    # -- search filter -----------------------------------------------------------------

    def set_filter(self, text: str) -> int:
        """Show only the calls matching ``text`` (see :mod:`dsh_replay_tui.headless.search`); returns how
        many calls match (all of them for an empty filter)."""
        current = self.selected() if self.row_count else None
        if current is not None and (current[1] is not None or self._anchor is None):
            self._anchor = current  # typing may hide the selected call for a moment: keep it
        self._filter = parse_query(text)
        self.set_search(text if not self._filter.empty else "")
        return self._apply_filter(self._anchor)

    @property
    def filtered(self) -> bool:
        """Whether a filter hides rows."""
        return self._visible is not None

    def _apply_filter(self, selected: tuple[int, int | None] | None) -> int:
        query = self._filter
        if query.empty:
            self._visible = None
            self.set_rows(self._total)
            matched = self._total - len(self.scripts)
        else:
            rows: list[int] = []
            matched = 0
            for s, script in enumerate(self.scripts):
                calls = [j for j in range(len(script.entries)) if call_matches(query, self.facts(s, j))]
                if calls:
                    rows.append(self._offsets[s])
                    rows.extend(self._offsets[s] + 1 + j for j in calls)
                    matched += len(calls)
            self._visible = rows
            self._strips.clear()
            self.set_rows(len(rows))
        if selected is not None and not self.select(*selected) and self.row_count:
            self.move_to(self.cursor)
        return matched

    def facts(self, s: int, j: int) -> CallFacts:
        """The (cached) searchable facts of a call."""
        key = (s, j)
        found = self._facts.get(key)
        if found is None:
            found = self._facts[key] = call_facts(self.scripts[s].entries[j])
        return found

    def is_match(self, index: int) -> bool:
        return self._visible is not None and self.locate(index)[1] is not None

    def set_live(self, state: RunState, breakpoints: frozenset[tuple[int, int]]) -> None:
        """The run's bindings and the breakpoints; repaints only the rows whose marks moved
        (while many sessions stream, a whole-pane repaint on every frame would be the
        debugger's biggest cost)."""
        live = {b.script_index: b for b in state.bindings}
        previous = self._live
        self._live = live
        ids = live_ids(state)
        if ids != self._ids or breakpoints != self._breakpoints:
            self._ids = ids
            self._breakpoints = breakpoints
            self._strips.clear()
            self.refresh()
            return
        for script in set(live) | set(previous):
            before, after = previous.get(script), live.get(script)
            if before is None or after is None:
                if _live_key(before) != _live_key(after):
                    self._refresh_script(script, None)
            elif _live_key(before) != _live_key(after):
                self._refresh_script(script, _moved_calls(before, after))

    def _refresh_script(self, script: int, calls: Iterable[int] | None) -> None:
        """Repaint a script's header row and ``calls`` (None: every call) when on screen."""
        if script >= len(self.scripts):
            return
        header = self.row_of(script, None)
        if header is not None:
            self.refresh_row(header)
        count = len(self.scripts[script].entries)
        for j in range(count) if calls is None else calls:
            if 0 <= j < count:
                row = self.row_of(script, j)
                if row is not None:
                    self.refresh_row(row)

    # -- selection ---------------------------------------------------------------------

    def locate(self, row: int) -> tuple[int, int | None]:
        """(script index, call index or None for the header) of a shown row."""
        if self._visible is not None:
            row = self._visible[row] if 0 <= row < len(self._visible) else 0
        s = bisect_right(self._offsets, row) - 1
        j = row - self._offsets[s] - 1
        return s, (j if j >= 0 else None)

    def row_of(self, script_index: int, call_index: int | None) -> int | None:
        """The row of a call (or of a script header)."""
        if not 0 <= script_index < len(self.scripts):
            return None
        if call_index is None:
            full = self._offsets[script_index]
        elif not 0 <= call_index < len(self.scripts[script_index].entries):
            return None
        else:
            full = self._offsets[script_index] + 1 + call_index
        if self._visible is None:
            return full
        shown = bisect_right(self._visible, full) - 1
        return shown if shown >= 0 and self._visible[shown] == full else None

    def selected(self) -> tuple[int, int | None] | None:
        """The selected (script, call), if any rows exist."""
        return self.locate(self.cursor) if self.row_count else None

    def select(self, script_index: int, call_index: int | None) -> bool:
        """Move the cursor to a call; False when it does not exist (the nearest row is used)."""
        row = self.row_of(script_index, call_index)
        if row is None:
            row = self.row_of(min(script_index, len(self.scripts) - 1), None)
            if row is not None:
                self.move_to(row)
            return False
        self.move_to(row)
        return True

    def highlighted(self, index: int) -> None:
        # Straight to the screen: one message, not a Highlighted to itself and then this.
        if self.row_count:
            self.post_message(CallSelected(*self.locate(index)))

    # -- rendering ---------------------------------------------------------------------

    def summary(self, s: int, j: int) -> dict[str, Any]:
        """The (cached) one-line summary of a call."""
        key = (s, j)
        cached = self._summaries.get(key)
        if cached is None:
            cached = self._summaries[key] = summarize_entry(self.scripts[s].entries[j],
                                                            width=SUMMARY_WIDTH)
        return cached

    def row_key(self, index: int) -> Hashable:
        s, j = self.locate(index)
        b = self._live.get(s)
        if j is None:
            return ("header", _live_key(b))
        return (_call_marks(b, j), (s, j) in self._breakpoints)

    def row_text(self, index: int) -> Text:
        s, j = self.locate(index)
        script = self.scripts[s]
        binding = self._live.get(s)
        if j is None:
            return self._header_text(s, script, binding)
        info = self.summary(s, j)
        text = Text()
        text.append("●" if (s, j) in self._breakpoints else " ", style="bold red")
        if binding is not None and binding.call_index == j:
            text.append("▶", style=STATUS_STYLE[binding.status])
        elif binding is not None and binding.cursor == j:
            text.append("›", style="bold cyan")
        else:
            text.append(" ")
        served = binding is not None and j < binding.cursor and binding.call_index != j
        if served and binding is not None and j in binding.unfinished:
            text.append("✗", style="bold red")  # ended before its last chunk: not served
        else:
            text.append("✓" if served else " ", style="green")
        if binding is not None and j in binding.diverged:
            text.append("≠", style="bold red")  # the live request left the recording here
        else:
            text.append(" ")
        text.append(f"#{j:<3} ", style="bold")
        text.append(cell(info["callKey"] or "-", KEY_WIDTH), style="dim")
        text.append(cell(info["kind"], KIND_WIDTH), style=KIND_STYLE.get(info["kind"], ""))
        text.append(cell(info["origin"], ORIGIN_WIDTH), style=ORIGIN_STYLE.get(info["origin"], ""))
        text.append(cell(info["finish"] or "-", FINISH_WIDTH), style="italic")
        text.append(show_tokens(info["summary"], self._ids))
        return text

    def detail(self, index: int) -> tuple[str, str | Text] | None:
        s, j = self.locate(index)
        script = self.scripts[s]
        if j is None:
            return f"Script [{s}]", self._header_text(s, script, self._live.get(s), full=True)
        item = script.entries[j]
        info = summarize_entry(item, width=1_000_000)
        body = (f"call #{j} of [{s}] {script.recorded_id or '(no id)'}\n"
                f"turn/step {item.call_key or '-'}  kind {info['kind']}  origin {info['origin']}  "
                f"finish {info['finish'] or '-'}  {info['chunks']} chunk(s)\n\n{info['summary']}\n\n"
                + json.dumps(entry_to_json(item.entry), indent=2, ensure_ascii=False))
        return f"Call #{j} of [{s}]", body

    def _header_text(self, s: int, script: SessionScript, binding: BindingState | None,
                     *, full: bool = False) -> Text:
        """The bound session first (what changes), then the call count, then recorded facts."""
        text = Text()
        role = "primary" if script.primary else "child"
        text.append(f"[{s}] {role} ", style="bold")
        text.append(show_tokens(script.recorded_id, self._ids) or "(no id)", style="bold cyan")
        if self.loading_note is not None and s == 0:
            text.append(f" · {self.loading_note}", style="bold yellow")
        if binding is not None:
            key = binding.session if binding.session is not None else "(anonymous)"
            text.append(f" ← {key} {binding.cursor}/{binding.length} {binding.status}",
                        style=STATUS_STYLE[binding.status])
        calls = len(script.entries)
        text.append(f" · {calls} call{'s' if calls != 1 else ''}", style="dim")
        source = source_label(script)
        text.append(f" · {source}" if source else " · sidecar only", style="dim")
        text.append(f" · createdAt {script.created_at:.0f} · seedLength {script.seed_length:g}",
                    style="dim")
        if full and script.file:
            text.append(f"\nfile {script.file}")
        return text
