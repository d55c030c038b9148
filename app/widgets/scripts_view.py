"""The scripts pane: every session script in bind order, one row per call (virtual)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable
from typing import Any

from rich.text import Text

from replay_engine import BindingState, RunState, SessionScript, summarize_entry

from ..messages import CallSelected
from .line_list import LineList

KIND_STYLE = {"chunks": "green", "throw": "bold red", "hang": "bold magenta"}
ORIGIN_STYLE = {"derived": "dim", "patched": "yellow", "replaced": "cyan", "appended": "blue"}
STATUS_STYLE = {"streaming": "bold green", "paused": "bold yellow", "hanging": "bold red",
                "idle": "cyan"}


class ScriptsView(LineList):
    """Rows: a header per script, then its calls with kind, origin, finish and summary."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.scripts: list[SessionScript] = []
        self._offsets: list[int] = []
        self._live: dict[int, BindingState] = {}
        self._breakpoints: frozenset[tuple[int, int]] = frozenset()
        self._summaries: dict[tuple[int, int], dict[str, Any]] = {}

    # -- data in -----------------------------------------------------------------------

    def set_scripts(self, scripts: list[SessionScript]) -> None:
        """New scripts (load or reload); the selected call stays selected when it still exists."""
        selected = self.selected()
        self.scripts = scripts
        self._summaries.clear()
        self._strips.clear()
        self._offsets = []
        total = 0
        for script in scripts:
            self._offsets.append(total)
            total += 1 + len(script.entries)
        self.set_rows(total)
        if selected is not None:
            self.select(*selected)

    def set_live(self, state: RunState, breakpoints: frozenset[tuple[int, int]]) -> None:
        """The run's bindings and the breakpoints; repaints only what is on screen."""
        live = {b.script_index: b for b in state.bindings}
        signature = {s: (b.session, b.cursor, b.call_index, b.status, b.aborted) for s, b in live.items()}
        old = {s: (b.session, b.cursor, b.call_index, b.status, b.aborted) for s, b in self._live.items()}
        self._live = live
        if signature != old or breakpoints != self._breakpoints:
            self._breakpoints = breakpoints
            self.refresh()

    # -- selection ---------------------------------------------------------------------

    def locate(self, row: int) -> tuple[int, int | None]:
        """(script index, call index or None for the header) of a row."""
        s = bisect_right(self._offsets, row) - 1
        j = row - self._offsets[s] - 1
        return s, (j if j >= 0 else None)

    def row_of(self, script_index: int, call_index: int | None) -> int | None:
        """The row of a call (or of a script header)."""
        if not 0 <= script_index < len(self.scripts):
            return None
        if call_index is None:
            return self._offsets[script_index]
        if not 0 <= call_index < len(self.scripts[script_index].entries):
            return None
        return self._offsets[script_index] + 1 + call_index

    def selected(self) -> tuple[int, int | None] | None:
        """The selected (script, call), if any rows exist."""
        return self.locate(self.cursor) if self.row_count else None

    def select(self, script_index: int, call_index: int | None) -> bool:
        """Move the cursor to a call; False when it does not exist (the nearest row is used)."""
        row = self.row_of(script_index, call_index)
        if row is None:
            row = self.row_of(min(script_index, len(self.scripts) - 1), None)
            if row is None:
                return False
            self.move_to(row)
            return False
        self.move_to(row)
        return True

    def on_line_list_highlighted(self, message: LineList.Highlighted) -> None:
        message.stop()
        if self.row_count:
            self.post_message(CallSelected(*self.locate(message.index)))

    # -- rendering ---------------------------------------------------------------------

    def summary(self, s: int, j: int) -> dict[str, Any]:
        """The (cached) one-line summary of a call."""
        key = (s, j)
        cached = self._summaries.get(key)
        if cached is None:
            cached = self._summaries[key] = summarize_entry(self.scripts[s].entries[j], width=50)
        return cached

    def row_key(self, index: int) -> Hashable:
        s, j = self.locate(index)
        b = self._live.get(s)
        live = (b.session, b.cursor, b.call_index, b.status, b.aborted) if b is not None else None
        return (live, j is not None and (s, j) in self._breakpoints)

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
        if served and binding is not None and j in binding.aborted:
            text.append("✗", style="bold red")  # cancelled before its last chunk: not served
        else:
            text.append("✓" if served else " ", style="green")
        text.append(f" #{j:<3}", style="bold")
        text.append(f"{info['kind']:<7}", style=KIND_STYLE.get(info["kind"], ""))
        text.append(f"{info['origin']:<9}", style=ORIGIN_STYLE.get(info["origin"], ""))
        text.append(f"{(info['finish'] or '-'):<11}", style="italic")
        text.append(info["summary"])
        return text

    def _header_text(self, s: int, script: SessionScript, binding: BindingState | None) -> Text:
        text = Text()
        role = "primary" if script.primary else "child"
        text.append(f"[{s}] {role} ", style="bold")
        text.append(script.recorded_id or "(no id)", style="bold cyan")
        text.append(f"  createdAt {script.created_at:.0f}  seedLength {script.seed_length:g}"
                    f"  {len(script.entries)} call(s)", style="dim")
        if binding is not None:
            key = binding.session if binding.session is not None else "(anonymous)"
            text.append(f"  ← {key} {binding.cursor}/{binding.length} {binding.status}",
                        style=STATUS_STYLE[binding.status])
        return text
