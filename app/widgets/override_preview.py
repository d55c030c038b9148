"""Preview of an override draft: the effective primary script beside the derived one, with the
chunk-level difference of every edited call."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static

from replay_engine import EntryComparison, ScriptEntry, summarize_entry

CHANGED = "bold black on yellow"
SELECTED = "reverse"
_KEEP_CONTEXT = 1


Summaries = dict[int, tuple[object, dict[str, Any]]]
"""Cache of ``summarize_entry`` by entry object (the object is kept so its id stays unique)."""


def _summary(item: ScriptEntry, cache: Summaries | None) -> dict[str, Any]:
    if cache is None:
        return summarize_entry(item, width=40)
    hit = cache.get(id(item.entry))
    if hit is None or hit[0] is not item.entry or hit[1]["origin"] != item.origin:
        hit = (item.entry, summarize_entry(item, width=40))
        cache[id(item.entry)] = hit
    return {**hit[1], "callKey": item.call_key}


def _line(item: ScriptEntry | None, index: int, changed: bool, cache: Summaries | None) -> str:
    mark = "*" if changed else " "
    if item is None:
        return f"{mark} #{index:<3} —"
    s = _summary(item, cache)
    key = s["callKey"] or "-"
    return (f"{mark} #{index:<3} {key:<6} {s['kind']:<6} {s['chunks']:>4}ch "
            f"{s['finish'] or '-'}  {s['summary']}")


WINDOW = 150
"""Calls shown on each side of the selected one: a script of thousands of calls is laid out in
a fraction of the time (laying out every row took seconds), the rest is counted."""


def window_bounds(count: int, selected: int | None, window: int | None) -> tuple[int, int]:
    """The rows ``[lo, hi)`` a side shows: all of them, or ``window`` each side of ``selected``."""
    if window is None or count <= 2 * window + 1:
        return 0, count
    centre = min(max(selected or 0, 0), count - 1)
    lo = max(centre - window, 0)
    hi = min(lo + 2 * window + 1, count)
    return max(hi - 2 * window - 1, 0), hi


def script_text(rows: list[EntryComparison], side: str, selected: int | None,
                cache: Summaries | None = None, window: int | None = None) -> Text:
    """One line per call of one side (``derived`` or ``effective``); changed calls highlighted.
    With ``window``, only that many calls each side of the selected one (the others counted)."""
    if not rows:
        return Text("(no calls)", style="dim")
    lo, hi = window_bounds(len(rows), selected, window)
    lines: list[str] = []
    marks: list[tuple[int, int, str]] = []
    offset = 0
    if lo:
        lines.append(f"  … {lo} call(s) above")
        marks.append((0, len(lines[0]), "dim"))
        offset = len(lines[0]) + 1
    for row in rows[lo:hi]:
        item = row.derived if side == "derived" else row.effective
        line = _line(item, row.index, row.changed, cache)
        if item is None:
            marks.append((offset, offset + len(line), "dim"))
        if row.changed:
            marks.append((offset, offset + len(line), CHANGED))
        if row.index == selected:
            marks.append((offset, offset + len(line), SELECTED))
        lines.append(line)
        offset += len(line) + 1
    if hi < len(rows):
        below = f"  … {len(rows) - hi} call(s) below"
        lines.append(below)
        marks.append((offset, offset + len(below), "dim"))
    out = Text("\n".join(lines), no_wrap=True, overflow="ellipsis")
    for begin, finish, style in marks:
        out.stylize(style, begin, finish)
    return out


def _chunk(chunk: dict[str, Any], width: int = 96) -> str:
    text = json.dumps(chunk, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


def diff_text(rows: list[EntryComparison]) -> Text:
    """Entry- and chunk-level differences of every changed call (unchanged runs collapsed)."""
    out = Text(no_wrap=True, overflow="ellipsis")
    for row in rows:
        if not row.changed:
            continue
        out.append(f"call #{row.index}", style="bold")
        if row.notes:
            out.append(": " + "; ".join(row.notes))
        out.append("\n")
        changes = row.chunk_changes
        i = 0
        while i < len(changes):
            change = changes[i]
            if change.op == "same":
                j = i
                while j < len(changes) and changes[j].op == "same":
                    j += 1
                head = changes[i : i + _KEEP_CONTEXT] if i else []
                tail = changes[j - _KEEP_CONTEXT : j] if j < len(changes) else []
                hidden = (j - i) - len(head) - len(tail)
                shown = [*head, *tail] if hidden > 1 else changes[i:j]
                for k, c in enumerate(shown):
                    if hidden > 1 and k == len(head):
                        out.append(f"    … {hidden} unchanged chunk(s)\n", style="dim")
                    out.append(f"    {_chunk(c.chunk)}\n", style="dim")
                if hidden > 1 and not tail:
                    out.append(f"    … {hidden} unchanged chunk(s)\n", style="dim")
                i = j
                continue
            sign, style = ("-", "red") if change.op == "removed" else ("+", "green")
            out.append(f"  {sign} {_chunk(change.chunk)}\n", style=style)
            i += 1
    if not out.plain:
        out.append("No call differs from the derived script.", style="dim")
    return out


def diff_line(diff: Text, index: int) -> int | None:
    """The line of ``diff`` (from :func:`diff_text`) where call ``index``'s difference starts."""
    head = f"call #{index}"
    for number, line in enumerate(diff.plain.split("\n")):
        if line == head or line.startswith(head + ":"):
            return number
    return None


class OverridePreview(Vertical):
    """Derived and effective scripts side by side, and the differences below them; each keeps
    the call being edited in view."""

    DEFAULT_CSS = """
    OverridePreview { height: 1fr; }
    OverridePreview #oe-sides { height: 1fr; min-height: 5; }
    OverridePreview .oe-side { width: 1fr; border: round $primary; overflow-y: scroll; }
    OverridePreview #oe-diff-box { height: 1fr; min-height: 4; border: round $secondary; }
    OverridePreview Static { text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._summaries: Summaries = {}

    def compose(self) -> ComposeResult:
        with Horizontal(id="oe-sides"):
            with VerticalScroll(classes="oe-side") as derived:
                derived.border_title = "derived (recorded)"
                yield Static(id="oe-derived")
            with VerticalScroll(classes="oe-side") as effective:
                effective.border_title = "effective (with the draft)"
                yield Static(id="oe-effective")
        with VerticalScroll(id="oe-diff-box") as diff:
            diff.border_title = "differences"
            yield Static(id="oe-diff")

    def show(self, rows: list[EntryComparison], selected: int | None) -> None:
        """Redraw from a fresh comparison, scrolled to the selected call."""
        cache = self._summaries
        self.query_one("#oe-derived", Static).update(
            script_text(rows, "derived", selected, cache, WINDOW))
        self.query_one("#oe-effective", Static).update(
            script_text(rows, "effective", selected, cache, WINDOW))
        diff = diff_text(rows)
        self.query_one("#oe-diff", Static).update(diff)
        line = diff_line(diff, selected) if selected is not None else None
        lo = window_bounds(len(rows), selected, WINDOW)[0]
        row = None if selected is None else selected - lo + (1 if lo else 0)
        self.call_after_refresh(self._scroll, row, line)

    def _scroll(self, row: int | None, line: int | None) -> None:
        """Keep the selected call's row in the middle of both sides, its difference on top."""
        if row is not None:
            for side in self.query(".oe-side").results(VerticalScroll):
                side.scroll_to(y=max(row - side.scrollable_content_region.height // 2, 0),
                               animate=False, immediate=True)
        if line is not None:
            self.query_one("#oe-diff-box", VerticalScroll).scroll_to(y=line, animate=False,
                                                                     immediate=True)
