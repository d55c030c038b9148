"""What the debugger says about a replay beyond the consumed check (SPEC 5 advances cursors at
call time): calls still in flight, paused, hanging or aborted by the user, and the quit verdict
with its exit code. Nothing here reports success when nothing was served."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from replay_engine import (
    DEFAULT_RUN,
    EXIT_FAILED,
    EXIT_NOT_CONSUMED,
    EXIT_NOT_SERVING,
    EXIT_OK,
    BindingState,
    ReplayEngine,
    ReplayError,
    RunState,
    printable,
)


def who(session: str | None) -> str:
    """How a session key reads in a note."""
    return "the anonymous session" if session is None else f"session {session}"


def binding_notes(b: BindingState) -> list[str]:
    """What is in flight or was aborted for one bound session (empty when neither)."""
    notes: list[str] = []
    if b.call_index is not None:
        if b.status == "paused":
            notes.append(f"{who(b.session)}: call #{b.call_index} paused before chunk "
                         f"{b.chunks_served} (in flight)")
        elif b.status == "hanging":
            notes.append(f"{who(b.session)}: call #{b.call_index} hanging until cancelled")
        else:
            notes.append(f"{who(b.session)}: call #{b.call_index} in flight "
                         f"({b.chunks_served} chunk(s) served)")
    notes.extend(f"{who(b.session)}: call #{j} aborted by the user before its last chunk"
                 for j in b.aborted)
    return notes


def flight_notes(state: RunState) -> list[str]:
    """Every session's notes for one run."""
    return [note for b in state.bindings for note in binding_notes(b)]


def flight_summary(state: RunState) -> str:
    """A few words for the header: ``1 paused, 1 aborted`` (empty when nothing to say)."""
    counts: Counter[str] = Counter()
    for b in state.bindings:
        if b.call_index is not None:
            counts["in flight" if b.status == "streaming" else b.status] += 1
        counts["aborted"] += len(b.aborted)
    order = ("in flight", "paused", "hanging", "aborted")
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
    """The verdict on quit: one line per run that bound a session (the default run when none
    did), with what was in flight or aborted; or why nothing was served.

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
    ok = True
    # the default run first, then the others in the order they were first seen
    for run in sorted(engine.bound_runs(), key=lambda r: r != DEFAULT_RUN) or [DEFAULT_RUN]:
        problems = engine.consumed_problems(run)
        notes = flight_notes(engine.state(run))
        label = printable(f"run {run}")
        if problems:
            ok = False
            lines.append(f"replay NOT consumed ({label}):")
            lines.extend(f"  - {printable(p)}" for p in problems)
        elif notes:
            lines.append(f"replay consumed ({label}), but not every call was served in full:")
        else:
            lines.append(f"replay consumed ({label})")
        lines.extend(f"  - {printable(n)}" for n in notes)
    return QuitVerdict(EXIT_OK if ok else EXIT_NOT_CONSUMED, lines)
