"""Run state: the records the engine keeps per run and the read-only views it hands out.

``Call``, ``Binding`` and ``Run`` are the engine's own mutable records; ``CallRecord`` is a
journal entry; ``BindingState`` / ``RunState`` are snapshots for observers and the server;
``diff_scripts`` says what a reload changed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import anyio

from ..context import ContextItem
from ..divergence import Divergence
from ..models import AnyEntry, SessionScript
from .pacing import Pace

StepMode = Literal["run", "call", "chunk"]
Status = Literal["idle", "streaming", "paused", "hanging"]


def session_label(key: str | None) -> str:
    """How a session key reads in messages."""
    return "the anonymous session" if key is None else f"session {key}"


@dataclass(slots=True)
class CallRecord:
    """One model call as the journal keeps it."""

    call_id: int
    run: str
    session: str | None
    script_index: int | None
    """None for a call refused before any script was bound to its session."""
    call_index: int | None
    """None for a call refused before any script was bound to its session."""
    kind: str
    messages: Any
    """The request's messages as the journal keeps them: a bounded excerpt (``excerpt``)."""
    model: str | None
    started_at: float
    outcome: Literal["streaming", "finished", "failed", "cancelled", "refused"] = "streaming"
    code: str | None = None
    message: str | None = None
    ended_at: float | None = None
    chunks_served: int = 0
    retry: bool = False
    """The request was a client library's retry of an earlier one."""
    aborted: bool = False
    """Cancelled through ``ReplayEngine.cancel`` (debugger or control API) before it was served
    in full; a hang's cancel is its normal end and does not count."""
    dialect: str | None = None
    """The wire the call arrived on (openai, native, anthropic, responses; None in process)."""
    divergence: Divergence | None = None
    """Where the request's new content first differs from the recorded context (None: it does
    not, or the entry has no recorded context)."""
    bound_by: str | None = None
    """How the session claimed its script (announced, content, order)."""
    retry_detected: bool = False
    """The server saw a retry: the same new content as the session's previous call, which was a
    scripted failure (whatever the client's headers said)."""
    unfinished: str | None = None
    """Why a stream ended before its last chunk (``the client went away``, ``cancelled``)."""
    messages_digest: str | None = None
    """SHA-256 of the whole messages' compact JSON (None: the call carried none)."""
    messages_bytes: int = 0
    """Size of the whole messages' compact JSON."""
    messages_cut: bool = False
    """``messages`` is cut: long strings shortened, the oldest items dropped past the budget."""

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
            "retry": self.retry or self.retry_detected,
            "dialect": self.dialect,
            "divergence": self.divergence.to_json() if self.divergence is not None else None,
            "boundBy": self.bound_by,
            "unfinished": self.unfinished,
            "messagesDigest": self.messages_digest,
            "messagesBytes": self.messages_bytes,
            "messagesCut": self.messages_cut,
        }


class Call:
    """An in-flight call: its entry, cancellation and step-gate state."""

    __slots__ = (
        "id", "run", "key", "script_index", "call_index", "entry", "times", "record",
        "cancelled", "wake", "budget", "status", "served", "ready_file", "run_to_end",
        "user_cancelled",
    )

    def __init__(
        self, call_id: int, run: str, key: str | None, script_index: int, call_index: int,
        entry: AnyEntry, times: Any, record: CallRecord,
    ) -> None:
        self.id = call_id
        self.run = run
        self.key = key
        self.script_index = script_index
        self.call_index = call_index
        self.entry = entry
        self.times = times
        self.record = record
        self.cancelled = False
        self.wake = anyio.Event()
        self.budget: int | None = None
        self.status: Status = "streaming"
        self.served = 0
        self.ready_file: str | None = None
        self.run_to_end = False
        self.user_cancelled = False


class Unfinished(NamedTuple):
    """A call of a session that did not end as recorded."""

    call_index: int
    served: int
    """Chunks served before it ended."""
    total: int
    """Chunks the call records (0 for a failure)."""
    why: str
    failed: bool = False
    """It failed with an error the recording does not script (else it was cut short)."""


@dataclass(slots=True)
class Binding:
    """A live session key bound to a script: where its cursor is and its call in flight."""

    key: str | None
    script_index: int
    cursor: int = 0
    call: Call | None = None
    aborted: list[int] = field(default_factory=list)
    """Indices of this session's calls that ``cancel`` aborted before their last chunk."""
    rule: str = "order"
    """How the session claimed its script: ``announced`` (its parent named it), ``content``
    (its first request matched one script's recorded context) or ``order`` (docs/format.md#binding)."""
    unfinished: list[Unfinished] = field(default_factory=list)
    """Calls whose stream ended before its last chunk, or that failed unscripted."""
    diverged: list[tuple[int, Divergence, int]] = field(default_factory=list)
    """Calls whose request left the recording, in call order: (call index, where it left
    (``CallRecord.divergence``), call id)."""
    retries: list[tuple[int, bool]] = field(default_factory=list)
    """Calls the server saw as retries, and whether the recording has that retry."""
    last_live: tuple[ContextItem, ...] | None = None
    """The new content of the session's previous request (to see a retry)."""
    last_failed: bool = False
    """The session's previous call ended in a scripted failure."""
    live_from: int | None = None
    """The call where the session went live (``Run.go_live``): it and later calls go upstream."""


def first_diverged(bindings: Iterable[Binding]) -> tuple[Binding, int, Divergence] | None:
    """The run's first call whose request left the recording: the session, the call index and
    where it left. The one rule of every front end (verdicts, the control API, the debugger's
    header): the lowest call id among each session's first divergence. Call ids count the
    calls as the engine took them, so the rule needs no journal and holds past its limit."""
    firsts = [b for b in bindings if b.diverged]
    if not firsts:
        return None
    first = min(firsts, key=lambda b: b.diverged[0][2])
    index, found, _ = first.diverged[0]
    return first, index, found

GoLive = Callable[[int, int, Divergence | None], bool]
"""``Run.go_live``: (script index, call index, the call's divergence) → send it upstream."""

DEFAULT_JOURNAL_LIMIT = 10_000
"""Calls a run's journal keeps by default; beyond it the oldest are dropped."""
DEFAULT_RUN_LIMIT = 1_000
"""Runs an engine keeps by default; past it the least recently used finished run is evicted."""


@dataclass(slots=True)
class Run:
    """One run's bindings, how many scripts it claimed, and its call journal (the newest
    ``journal.maxlen`` calls; ``dropped`` counts the older ones it let go)."""

    name: str
    bindings: dict[str | None, Binding] = field(default_factory=dict)
    journal: deque[CallRecord] = field(
        default_factory=lambda: deque(maxlen=DEFAULT_JOURNAL_LIMIT))
    dropped: int = 0
    limiter: anyio.CapacityLimiter | None = None
    """How many of the run's placeholder patterns may run at once (made on first use)."""
    refused: list[CallRecord] = field(default_factory=list)
    """Calls refused at binding (409): each is a verdict problem, whatever the journal kept."""
    refused_count: int = 0
    """Every refusal, also those beyond the ones ``refused`` keeps."""
    live_ids: dict[int, str] = field(default_factory=dict)
    """Per script index, the live id of the session bound to it or announced for it
    (``started subagent ID``): what ``{{session:N}}`` tokens become (docs/format.md#session-tokens)."""
    overflow: frozenset[str] = frozenset()
    """Wires (dialect names) whose calls past the recording are not refused here: their binding
    error goes back to the server, which forwards them upstream to be recorded."""
    scrub: Callable[[Any], Any] | None = None
    """Applied to a live request's messages before they are compared with the recording
    (the scrub its recording went through)."""
    go_live: GoLive | None = None
    """Whether a bound call goes live instead of being served (script, call, its divergence):
    recording from the divergence. Only for calls on the ``overflow`` wires."""


    def in_use(self) -> bool:
        """Whether the run may not be evicted: a call in flight, or a harness configured it
        (an overflow or a scrub: the harness deletes the run itself when its test ends)."""
        return bool(self.overflow) or self.scrub is not None or any(
            b.call is not None for b in self.bindings.values())

    def clear(self) -> None:
        """Forget bindings, live ids, journal and refusals (a reset: settings stay)."""
        self.bindings.clear()
        self.live_ids.clear()
        self.journal.clear()
        self.refused.clear()
        self.refused_count = 0
        self.dropped = 0


def runs_to_evict(runs: dict[str, Run], recent: dict[str, None], limit: int,
                  pinned: set[str]) -> list[str]:
    """The runs to let go, least recently used first (``recent``), so that at most ``limit``
    stay: never a pinned one nor one in use (``Run.in_use``)."""
    out: list[str] = []
    for name in recent:
        if len(runs) - len(out) <= limit:
            break
        run = runs.get(name)
        if run is not None and name not in pinned and not run.in_use():
            out.append(name)
    return out


def script_length(scripts: Sequence[SessionScript], index: int) -> int:
    """How many calls script ``index`` holds (0 when a reload removed it)."""
    return len(scripts[index].entries) if index < len(scripts) else 0


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
    aborted: tuple[int, ...] = ()
    """Indices of the session's calls aborted by ``cancel`` before their last chunk (the
    cursor still counts them: it advances at call time, docs/format.md#binding)."""
    diverged: tuple[int, ...] = ()
    """Indices of the session's calls whose request left the recording."""
    rule: str = "order"
    """How the session claimed its script (announced, content, order)."""
    unfinished: tuple[int, ...] = ()
    """Indices of calls whose stream ended before its last chunk (user aborts and clients that
    went away)."""

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
            "diverged": list(self.diverged),
            "boundBy": self.rule,
            "unfinished": list(self.unfinished),
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
    journal_dropped: int = 0
    """Oldest calls the run's journal let go to stay within its limit."""
    refused: int = 0
    """Calls the run refused at binding (each fails the verdict)."""
    first_divergence: tuple[int, int] | None = None
    """(script, call) of the run's first call whose request left the recording
    (``first_diverged``; None: none did)."""

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "run": self.run,
            "bindings": [b.to_json() for b in self.bindings],
            "scripts": self.scripts,
            "consumed": self.consumed,
            "mode": self.mode,
            "pace": self.pace.describe(),
            "journalDropped": self.journal_dropped,
            "refused": self.refused,
        }


def snapshot(run: Run, scripts: Sequence[SessionScript], consumed: bool, mode: StepMode,
             pace: Pace) -> RunState:
    """The read-only view of ``run``: each binding's cursor and in-flight call."""
    out: list[BindingState] = []
    for b in run.bindings.values():
        call = b.call
        out.append(
            BindingState(
                session=b.key,
                script_index=b.script_index,
                cursor=b.cursor,
                length=script_length(scripts, b.script_index),
                status=call.status if call is not None else "idle",
                call_index=call.call_index if call is not None else None,
                chunks_served=call.served if call is not None else 0,
                ready_file=call.ready_file if call is not None else None,
                aborted=tuple(b.aborted),
                diverged=tuple(d[0] for d in b.diverged),
                rule=b.rule,
                unfinished=tuple(u.call_index for u in b.unfinished),
            )
        )
    first = first_diverged(run.bindings.values())
    return RunState(run.name, tuple(out), len(scripts), consumed, mode, pace, run.dropped,
                    run.refused_count,
                    (first[0].script_index, first[1]) if first is not None else None)


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
