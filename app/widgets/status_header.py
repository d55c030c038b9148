"""The header: scenario, server URL, run, bound sessions, consumed, pace and step mode."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widget import Widget

from replay_engine import RunState


class StatusHeader(Widget):
    """Two lines of facts about the run, repainted when they change (never re-lays out)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = Text()

    def render(self) -> Text:
        return self.text

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
        text.append(f"  pace {state.pace.describe()}")
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
