"""Read-only views the engine hands out: pace, journal records, run state, script diffs.

Kept apart from the engine so observers and the server can use them without the
machinery that serves calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import InputError
from ..models import SessionScript

StepMode = Literal["run", "call", "chunk"]
Status = Literal["idle", "streaming", "paused", "hanging"]


def session_label(key: str | None) -> str:
    """How a session key reads in messages."""
    return "the anonymous session" if key is None else f"session {key}"


@dataclass(frozen=True, slots=True)
class Pace:
    """How long to wait before each chunk: a fixed delay, or the recorded gaps scaled."""

    mode: Literal["fixed", "recorded"] = "fixed"
    ms: int = 0
    speed: float = 1.0

    def describe(self) -> str:
        """Short human form: ``burst``, ``20ms`` or ``recorded x2``."""
        if self.mode == "recorded":
            return f"recorded x{self.speed:g} (else {self.ms}ms)"
        return f"{self.ms}ms" if self.ms else "burst"

    @staticmethod
    def parse(text: str, ms: int = 0) -> Pace:
        """Parse ``recorded`` / ``recorded:SPEED`` (as given to ``--pace``)."""
        name, _, speed = text.partition(":")
        if name != "recorded":
            raise InputError(f"--pace {text!r}: expected recorded or recorded:SPEED", code="CONFIG")
        try:
            value = float(speed) if speed else 1.0
        except ValueError:
            value = -1
        if not value > 0:
            raise InputError(f"--pace {text!r}: SPEED must be a positive number", code="CONFIG")
        return Pace("recorded", ms, value)


@dataclass(slots=True)
class CallRecord:
    """One model call as the journal keeps it."""

    call_id: int
    run: str
    session: str | None
    script_index: int
    call_index: int
    kind: str
    messages: Any
    model: str | None
    started_at: float
    outcome: Literal["streaming", "finished", "failed", "cancelled"] = "streaming"
    code: str | None = None
    message: str | None = None
    ended_at: float | None = None
    chunks_served: int = 0

    def to_json(self) -> dict[str, Any]:
        """JSON form (served by ``GET /replay/v1/journal``)."""
        return {
            "callId": self.call_id,
            "sessionKey": self.session,
            "scriptIndex": self.script_index,
            "callIndex": self.call_index,
            "kind": self.kind,
            "model": self.model,
            "messages": self.messages,
            "outcome": self.outcome,
            "code": self.code,
            "message": self.message,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            "chunksServed": self.chunks_served,
        }


@dataclass(frozen=True, slots=True)
class BindingState:
    """Read-only view of one bound session."""

    session: str | None
    script_index: int
    cursor: int
    length: int
    status: Status
    call_index: int | None
    chunks_served: int
    ready_file: str | None

    def to_json(self) -> dict[str, Any]:
        """JSON form (served by ``GET /replay/v1/state``)."""
        return {
            "sessionKey": self.session,
            "scriptIndex": self.script_index,
            "cursor": self.cursor,
            "length": self.length,
            "status": self.status,
            "callIndex": self.call_index,
            "chunksServed": self.chunks_served,
            "readyFile": self.ready_file,
        }


@dataclass(frozen=True, slots=True)
class RunState:
    """Read-only snapshot of one run."""

    run: str
    bindings: tuple[BindingState, ...]
    scripts: int
    consumed: bool
    mode: StepMode
    pace: Pace

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "run": self.run,
            "bindings": [b.to_json() for b in self.bindings],
            "scripts": self.scripts,
            "consumed": self.consumed,
            "mode": self.mode,
            "pace": self.pace.describe(),
        }


def diff_scripts(old: Sequence[SessionScript], new: Sequence[SessionScript]) -> list[dict[str, Any]]:
    """Per script: calls added, removed and changed between two loads."""
    out: list[dict[str, Any]] = []
    for i in range(max(len(old), len(new))):
        a = old[i].entries if i < len(old) else []
        b = new[i].entries if i < len(new) else []
        changed = sum(
            1 for x, y in zip(a, b, strict=False)
            if x.entry is not y.entry and x.to_json() != y.to_json()
        )
        added = max(len(b) - len(a), 0)
        removed = max(len(a) - len(b), 0)
        if changed or added or removed or i >= len(old) or i >= len(new):
            out.append({"script": i, "added": added, "removed": removed, "changed": changed})
    return out
