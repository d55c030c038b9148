"""What the recorder keeps of one call while it streams, and what it reports once written.

A :class:`Call` collects the rebuilt chunks with their arrival times; its session's log writes
it when it ends, in the slot of its start (the call reports its end to its :class:`CallOwner`,
the recorder, which this module names only by that protocol). A :class:`CallReport` per
written call goes to the listeners (the CLI's stderr line, the debugger's record mode).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..errors import RECORD_WRITE, InputError, ReplayError
from .dialect import Chunk, RequestMessage


def recorder_version() -> str:
    """``dsh-replay <version>`` for the ``recordedBy`` header key."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"dsh-replay {version('dsh-replay-tui')}"
    except PackageNotFoundError:
        return "dsh-replay"


def now_ms() -> int:
    """Wall-clock milliseconds."""
    return time.time_ns() // 1_000_000


def write_error(path: Path, exc: OSError, calls: int) -> InputError:
    """The typed error of a write that failed: the file, the system's reason, what is kept."""
    reason = exc.strerror or type(exc).__name__
    return InputError(f"{path}: cannot write the recording ({reason}); the recording stopped. "
                      f"The scenario holds every call written before this one ({calls} in this "
                      "file); free space or fix the permissions, then record again.",
                      file=str(path), code=RECORD_WRITE)


@dataclass(frozen=True, slots=True)
class CallReport:
    """One recorded call, as the recorder reports it to its listeners."""

    session: str | None
    """The live session id (None: anonymous)."""
    file: str
    """The log it was written to."""
    index: int
    """0-based call number in that log."""
    key: str
    """Its ``turn/step``."""
    chunks: int
    finish: str | None
    """The finish kind, or None when the call failed."""
    code: str | None = None
    message: str | None = None
    problem: str | None = None
    """Why the scenario will not load, or replay, as recorded (a child's failed call), if so."""
    notes: tuple[str, ...] = ()
    """What of the answer was recorded differently (usage that was no token count)."""
    reached: bool = True
    """False when the upstream gave no answer at all (unreachable, refused, timed out): the
    call is recorded as the 502 the agent got, but nothing came from the provider."""

    @property
    def failed(self) -> bool:
        """True when the upstream failed this call."""
        return self.code is not None


Listener = Callable[[CallReport], None]


class CallOwner(Protocol):
    """What a call reports its end to (the scenario recorder)."""

    def end_call(self, call: Call, failure: tuple[str, str] | None) -> CallReport | None:
        """The call ended (``failure``: the upstream's message and code); its report once
        written."""

    def drop_call(self, call: Call) -> None:
        """The call will never be written (the recording stopped while it streamed)."""


@dataclass(slots=True, eq=False)
class Call:
    """A call in flight: its session, key, new request messages and chunks with arrival times."""

    owner: CallOwner
    session: str | None
    """The live session id it belongs to (None: anonymous), which names its log."""
    turn: int
    step: int
    new_turn: bool
    started: int
    new_messages: list[RequestMessage]
    timed: list[tuple[Chunk, int]] = field(default_factory=list)
    done: bool = False
    """Written, or abandoned at stop."""
    ended: bool = False
    """Its answer ended (it is written once every earlier call of its session is)."""
    failure: tuple[str, str] | None = None
    """The upstream's message and code when it failed."""
    notes: list[str] = field(default_factory=list)
    """What of the answer its dialect recorded differently, for the report's warnings."""
    reached: bool = True
    """False when the upstream gave no answer at all."""

    @property
    def key(self) -> str:
        """The call key ``turn/step``."""
        return f"{self.turn}/{self.step}"

    def add(self, chunks: Iterable[Chunk], at: int | None = None) -> None:
        """Chunks that arrived at ``at`` ms (now when omitted)."""
        stamp = now_ms() if at is None else at
        self.timed.extend((chunk, stamp) for chunk in chunks)

    @property
    def chunks(self) -> list[Chunk]:
        """The chunks so far."""
        return [chunk for chunk, _ in self.timed]

    def finish(self) -> CallReport | None:
        """The call ended with its stream's end marker: write it whole (its report, or None
        while an earlier call of its session is still streaming)."""
        return self.owner.end_call(self, None)

    def fail(self, message: str, code: str) -> CallReport | None:
        """The upstream failed the call (before any chunk, or its stream broke)."""
        return self.owner.end_call(self, (message, code))

    def abandon(self) -> None:
        """The recording stopped while the call streamed: nothing of it is written."""
        self.done = True
        self.owner.drop_call(self)


FailureListener = Callable[[ReplayError], None]
"""Called once with the error that stopped a recording (a write that failed)."""
