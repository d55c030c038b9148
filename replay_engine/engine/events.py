"""Events the engine emits to observers (the debugger, loggers, tests), and their hub.

Observers receive these synchronously, in order, on the event loop that runs
the engine; they must not block. Every event names its run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .pacing import Pace

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EngineEvent:
    """Base of every engine event."""

    run: str


@dataclass(frozen=True, slots=True)
class SessionEvent(EngineEvent):
    """Base of the events of one live session key (None: requests without a session id)."""

    session: str | None


@dataclass(frozen=True, slots=True)
class CallEvent(SessionEvent):
    """Base of the events of one bound call: which script, call and live call."""

    script_index: int
    call_index: int
    """The call's position in its script, from 0."""
    call_id: int
    """The live call's id, unique in the engine (one per request)."""


@dataclass(frozen=True, slots=True)
class SessionBound(SessionEvent):
    """A live session key claimed a recorded script."""

    script_index: int
    rule: str = "order"
    """How it claimed the script: ``announced`` (its parent named it), ``content`` (its first
    request matched the script's first call) or ``order`` (the first unclaimed script); the
    journal's ``boundBy``."""


@dataclass(frozen=True, slots=True)
class CallStarted(CallEvent):
    """A model call was bound to its entry and starts streaming."""

    kind: str
    retry: bool = False
    """The request was a client library's retry of an earlier one."""
    dialect: str | None = None
    """The wire the call arrived on (openai, native, anthropic, responses; None in process)."""


@dataclass(frozen=True, slots=True)
class ChunkServed(CallEvent):
    """One chunk went to the agent; ``chunk_index`` counts from 0 within the call."""

    chunk_index: int


@dataclass(frozen=True, slots=True)
class CallPaused(CallEvent):
    """The step gate holds the call before chunk ``chunk_index``."""

    chunk_index: int


@dataclass(frozen=True, slots=True)
class CallResumed(CallEvent):
    """A paused call was released."""


@dataclass(frozen=True, slots=True)
class HangWaiting(CallEvent):
    """A hang entry served its prefix and waits for cancellation."""

    ready_file: str | None


@dataclass(frozen=True, slots=True)
class CallFinished(CallEvent):
    """The call served all its chunks."""

    chunks: int


@dataclass(frozen=True, slots=True)
class CallFailed(CallEvent):
    """The call failed: a throw entry, a placeholder or ready-file problem."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class CallCancelled(CallEvent):
    """The call was cancelled (client disconnect, debugger, control API)."""


@dataclass(frozen=True, slots=True)
class BindingFailed(SessionEvent):
    """A call could not be bound: unrecorded session or exhausted script."""

    code: str
    message: str
    retry: bool = False
    """The refused request was a client library's retry of an earlier one."""
    messages: Any = None
    """The refused request's messages, as the client sent them."""
    script_index: int | None = None
    """The script the session is bound to (None: it arrived from an unrecorded session)."""
    call_index: int | None = None
    """The call number the session asked for, from 0 (None: an unrecorded session)."""
    dialect: str | None = None
    """The wire the refused request arrived on (how its messages are read)."""


@dataclass(frozen=True, slots=True)
class RunReset(EngineEvent):
    """The run's bindings and cursors were forgotten."""


@dataclass(frozen=True, slots=True)
class RunForgotten(EngineEvent):
    """The run was deleted: its bindings, cursors and journal are gone."""

    evicted: bool = False
    """The engine let it go itself: the least recently used finished run past its run limit."""


@dataclass(frozen=True, slots=True)
class JournalTrimmed(EngineEvent):
    """The run's journal reached its limit and dropped its oldest call (emitted once per run,
    the first time; later drops are counted in ``RunState.journal_dropped``)."""

    limit: int


@dataclass(frozen=True, slots=True)
class ScriptsReloaded(EngineEvent):
    """New scripts replaced the old ones; ``changes`` says what changed per script."""

    changes: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SettingsChanged(EngineEvent):
    """Pace, step mode or breakpoints changed."""

    settings: dict[str, Any] = field(default_factory=dict)
    """The run's mode, pace (described) and breakpoints, as JSON."""
    pace: Pace = field(default_factory=Pace)
    """The pace now (typed: observers word it without reading ``settings``)."""


Observer = Callable[[EngineEvent], None]


class EventHub:
    """The engine's observers: those that want every chunk and those that want calls only."""

    __slots__ = ("call_observers", "chunk_observers")

    def __init__(self) -> None:
        self.chunk_observers: list[Observer] = []
        self.call_observers: list[Observer] = []

    def subscribe(self, callback: Observer, *, chunks: bool = True) -> Callable[[], None]:
        """Add ``callback``; returns a function that removes it."""
        target = self.chunk_observers if chunks else self.call_observers
        target.append(callback)

        def unsubscribe() -> None:
            if callback in target:
                target.remove(callback)

        return unsubscribe

    def emit(self, event: EngineEvent) -> None:
        """Deliver ``event`` to every observer."""
        self.deliver([*self.chunk_observers, *self.call_observers], event)

    def deliver(self, callbacks: list[Observer], event: EngineEvent) -> None:
        """Call each of ``callbacks`` with ``event``; an observer that raises is logged, not fatal."""
        for callback in callbacks:
            try:
                callback(event)
            except Exception:  # an observer's bug must not break a stream
                log.exception("replay observer %r failed on %r", callback, event)
