"""Preview of an override draft: the effective primary script beside the derived one, with the
chunk-level difference of every edited call."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static

from replay_engine.authoring import EntryComparison
from replay_engine.cli import summarize_entry
from replay_engine.models import ScriptEntry

CHANGED = "bold black on yellow"
SELECTED = "reverse"
_KEEP_CONTEXT = 1


def _row(item: ScriptEntry | None, index: int, changed: bool, selected: bool) -> Text:
    mark = "*" if changed else " "
    if item is None:
        line = Text(f"{mark} #{index:<3} —", style="dim")
    else:
        s = summarize_entry(item, width=40)
        key = s["callKey"] or "-"
        line = Text(f"{mark} #{index:<3} {key:<6} {s['kind']:<6} {s['chunks']:>4}ch "
                    f"{s['finish'] or '-'}  {s['summary']}")
    if changed:
        line.stylize(CHANGED)
    if selected:
        line.stylize(SELECTED)
    return line


def script_text(rows: list[EntryComparison], side: str, selected: int | None) -> Text:
    """One line per call of one side (``derived`` or ``effective``); changed calls highlighted."""
    out = Text(no_wrap=True, overflow="ellipsis")
    for row in rows:
        item = row.derived if side == "derived" else row.effective
        out.append_text(_row(item, row.index, row.changed, row.index == selected))
        out.append("\n")
    if not rows:
        out.append("(no calls)", style="dim")
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


class OverridePreview(Vertical):
    """Derived and effective scripts side by side, and the differences below them."""

    DEFAULT_CSS = """
    OverridePreview { height: 1fr; }
    OverridePreview #oe-sides { height: 1fr; }
    OverridePreview .oe-side { width: 1fr; border: round $primary; }
    OverridePreview #oe-diff-box { height: 1fr; border: round $secondary; }
    OverridePreview Static { text-wrap: nowrap; text-overflow: ellipsis; }
    """

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
        """Redraw from a fresh comparison."""
        self.query_one("#oe-derived", Static).update(script_text(rows, "derived", selected))
        self.query_one("#oe-effective", Static).update(script_text(rows, "effective", selected))
        self.query_one("#oe-diff", Static).update(diff_text(rows))
