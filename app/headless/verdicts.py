"""What the debugger says about a replay: the header's few words on calls in flight, paused,
hanging, aborted, cut or refused, and the quit verdict with its exit code (both read the
engine's one verdict). Nothing here reports success when nothing was served."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from replay_engine import (
    EXIT_FAILED,
    EXIT_NOT_CONSUMED,
    EXIT_NOT_SERVING,
    EXIT_OK,
    ReplayEngine,
    ReplayError,
    RunState,
    verdict,
)


def flight_summary(state: RunState) -> str:
    """A few words for the header: ``1 paused, 1 aborted, 1 refused`` (empty: nothing to say)."""
    counts: Counter[str] = Counter()
    for b in state.bindings:
        if b.call_index is not None:
            counts["in flight" if b.status == "streaming" else b.status] += 1
        counts["aborted"] += len(b.aborted)
    counts["cut"] += sum(1 for b in state.bindings for i in b.unfinished if i not in b.aborted)
    counts["refused"] += state.refused
    order = ("in flight", "paused", "hanging", "aborted", "cut", "refused")
    return ", ".join(f"{counts[k]} {k}" for k in order if counts[k])


@dataclass(frozen=True, slots=True)
class QuitVerdict:
    """What ``q`` prints and the exit status of ``dsh-replay-tui``."""

    code: int
    lines: list[str]

    @property
    def text(self) -> str:
        """The printed verdict."""
        return "\n".join(self.lines)


def quit_verdict(engine: ReplayEngine, *, load_error: ReplayError | None, loaded: bool,
                 serve_error: str | None) -> QuitVerdict:
    """The verdict on quit: ``dsh-replay serve``'s verdict (``presentation.verdict``: per run
    that bound a session or refused a call, every problem and the first divergence); or why
    nothing was served.

    Exit status: 0 consumed, 3 not consumed, 1 the scenario never loaded, 4 the server could
    not listen (it wins over 1: both lines are printed).
    """
    lines: list[str] = []
    code: int | None = None
    if serve_error is not None:
        lines.append(f"replay NOT served: {serve_error}")
        code = EXIT_NOT_SERVING
    if not loaded:
        why = f" [{load_error.code}]: {load_error.message}" if load_error is not None else ""
        lines.append(f"replay NOT served: the scenario never loaded{why}")
        code = code if code is not None else EXIT_FAILED
    if code is not None:
        return QuitVerdict(code, lines)
    ok, lines = verdict(engine)
    return QuitVerdict(EXIT_OK if ok else EXIT_NOT_CONSUMED, lines)
