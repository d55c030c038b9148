"""The header: scenario, server URL, run, bound sessions, consumed, pace and step mode."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widget import Widget

from replay_engine import Pace, RunState


def pace_label(pace: Pace) -> str:
    """The pace in words: no delay, a fixed delay per chunk, or the recorded gaps at a speed."""
    if pace.mode == "recorded":
        fallback = f", {pace.ms}ms where none recorded" if pace.ms else ""
        return f"recorded gaps x{pace.speed:g}{fallback}"
    return f"{pace.ms}ms per chunk" if pace.ms else "no delay"


class StatusHeader(Widget):
    """Two lines of facts about the run, repainted when they change (never re-lays out)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = Text()
        self._scenario = ""

    def render(self) -> Text:
        """Each line fits the width: the scenario path loses its start first, then lines end in …."""
        width = self.size.width
        lines = list(self.text.split("\n", allow_blank=True))
        if width < 2 or all(line.cell_len <= width for line in lines):
            return self.text
        first = lines[0]
        start = first.plain.find(self._scenario) if self._scenario else -1
        excess = first.cell_len - width
        if excess > 0 and start >= 0 and excess + 1 < len(self._scenario):
            lines[0] = Text.assemble(first[:start], "…", first[start + excess + 1:])
        out = Text()
        for i, line in enumerate(lines):
            line.truncate(width, overflow="ellipsis")
            out.append_text(line)
            if i < len(lines) - 1:
                out.append("\n")
        return out

    def show(self, *, scenario: str, url: str, state: RunState, breakpoints: int,
             paused: int, untimed: Sequence[str] = (), loaded: bool = True, flight: str = "",
             runs: Sequence[str] = ()) -> None:
        """Render the facts (nothing here reads a clock, so snapshots are stable).

        ``untimed`` names the logs without recorded chunk times: recorded pace has no gaps
        to replay there, and the pace label says so. ``loaded`` is False while no scenario
        ever loaded (nothing is served); ``flight`` says what is in flight or was aborted
        (``consumed ✓`` shows only when it is empty); ``runs`` are the runs the user can follow.
        """
        bound = len(state.bindings)
        self._scenario = scenario
        text = Text()
        text.append("dsh-replay ", style="bold")
        text.append(scenario, style="bold cyan")
        text.append("  ")
        text.append(url, style="underline")
        text.append(f"  run {state.run}")
        if len(runs) > 1:
            text.append(f" ({runs.index(state.run) + 1} of {len(runs)} runs, r: next)",
                        style="bold")
        text.append("\n")
        text.append(f"bound {bound}/{state.scripts}  ")
        if not loaded:
            text.append("nothing loaded", style="bold red")
        elif state.consumed and not flight:
            text.append("consumed ✓", style="bold green")
        elif state.consumed:
            text.append(f"consumed, but {flight}", style="bold yellow")
        else:
            text.append("not consumed", style="yellow")
            if flight:
                text.append(f" ({flight})", style="yellow")
        diverged = next((b for b in state.bindings if b.diverged), None)
        if diverged is not None:
            where = "" if diverged.script_index == 0 else f" of script {diverged.script_index}"
            text.append(f"  diverged at #{diverged.diverged[0]}{where}", style="bold red")
        text.append(f"  pace {pace_label(state.pace)}")
        if state.pace.mode == "recorded" and untimed:
            text.append(f" — {', '.join(untimed)}: no recorded times, so no gaps", style="yellow")
        text.append("  mode ")
        text.append(state.mode, style="bold" if state.mode == "run" else "bold yellow")
        if breakpoints:
            text.append(f"  breakpoints {breakpoints}", style="red")
        if paused:
            text.append(f"  PAUSED {paused}", style="bold black on yellow")
        hanging = sum(1 for b in state.bindings if b.status == "hanging")
        if hanging:
            text.append(f"  HANGING {hanging}", style="bold white on red")
        if text != self.text:
            self.text = text
            self.refresh()
