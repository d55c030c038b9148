"""The replay engine: binds live sessions to scripts and streams their entries (SPEC 5-6).

One engine serves any number of runs; each run has its own bindings, cursors
and call journal over the same scripts. Streams are anyio-cancellable, paced,
and pass through a step gate the debugger (or the control API) drives.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import msgspec

from ..errors import (
    AbortedError,
    InputError,
    NotConsumedError,
    PlaceholderError,
    ReplayError,
    ScriptedFailure,
    ScriptExhaustedError,
    UnrecordedSessionError,
)
from ..models import (
    AnyEntry,
    ChunksEntry,
    HangEntry,
    ScriptEntry,
    SessionScript,
    ThrowEntry,
    entry_to_json,
)
from ..placeholders import MARKER, resolve_scripted_entry
from . import events as ev
from .state import (
    BindingState,
    CallRecord,
    Pace,
    RunState,
    Status,
    StepMode,
    diff_scripts,
    session_label,
)

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_RUN",
    "HANG_PREFIX",
    "BindingState",
    "CallHandle",
    "CallRecord",
    "Observer",
    "Pace",
    "ReplayEngine",
    "RunState",
    "Status",
    "StepMode",
    "diff_scripts",
    "session_label",
]

DEFAULT_RUN = "default"
HANG_PREFIX: tuple[dict[str, Any], ...] = (
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "partial"},
)
MAX_RECORDED_GAP_S = 5.0
_MARKER_BYTES = MARKER.encode()
_encode = msgspec.json.Encoder().encode
Observer = Callable[[ev.EngineEvent], None]


class _Call:
    """An in-flight call: its entry, cancellation and step-gate state."""

    __slots__ = (
        "id", "run", "key", "script_index", "call_index", "entry", "times", "record",
        "cancelled", "wake", "budget", "status", "served", "ready_file", "run_to_end",
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


@dataclass(slots=True)
class _Binding:
    key: str | None
    script_index: int
    cursor: int = 0
    call: _Call | None = None


@dataclass(slots=True)
class _Run:
    name: str
    bindings: dict[str | None, _Binding] = field(default_factory=dict)
    claimed: int = 0
    journal: list[CallRecord] = field(default_factory=list)


class CallHandle:
    """A bound call: iterate ``chunks()`` to serve it; ``cancel()`` ends it as aborted."""

    def __init__(self, engine: ReplayEngine, call: _Call) -> None:
        self._engine = engine
        self._call = call

    @property
    def entry(self) -> AnyEntry:
        """The entry being served (placeholders resolved)."""
        return self._call.entry

    @property
    def call_index(self) -> int:
        """0-based index of the call in its script."""
        return self._call.call_index

    @property
    def script_index(self) -> int:
        """Index of the script the session is bound to."""
        return self._call.script_index

    @property
    def call_id(self) -> int:
        """Engine-wide id of the call."""
        return self._call.id

    def cancel(self) -> None:
        """Cancel the call; its stream fails with AbortedError at the next check."""
        self._engine._cancel_call(self._call)

    def chunks(self) -> AsyncIterator[dict[str, Any]]:
        """The chunks of the entry; raises ScriptedFailure / AbortedError as the entry says."""
        return self._engine._serve(self._call)

    def ready(self) -> bool:
        """True when the next step of ``chunks()`` will not wait (no pace delay, gate or hang).

        Servers use it to coalesce chunks into one write only while nothing would hold them.
        """
        return self._engine._next_is_immediate(self._call)


class ReplayEngine:
    """Serves scripts to live sessions, per run, with observers, pacing and a step gate."""

    def __init__(
        self,
        scripts: Sequence[SessionScript],
        pace_ms: int = 0,
        *,
        pace: Pace | None = None,
        ready_dir: str | Path | None = None,
    ) -> None:
        if isinstance(pace_ms, bool) or not isinstance(pace_ms, int) or pace_ms < 0:
            raise InputError(
                f"paceMs must be a non-negative integer, got {pace_ms!r}", code="CONFIG"
            )
        self._scripts: list[SessionScript] = list(scripts)
        self._pace = pace or Pace("fixed", pace_ms)
        self.ready_dir = Path(ready_dir) if ready_dir is not None else Path.cwd()
        self._runs: dict[str, _Run] = {}
        self._observers: list[Observer] = []
        self._call_observers: list[Observer] = []
        self._next_call_id = 1
        self._mode: StepMode = "run"
        self._breakpoints: set[tuple[int, int]] = set()
        self._calls: dict[int, _Call] = {}
        self._plain: dict[int, AnyEntry] = {}

    # -- observation -------------------------------------------------------------------

    def subscribe(self, callback: Observer, *, chunks: bool = True) -> Callable[[], None]:
        """Call ``callback`` with every event; returns a function that unsubscribes.

        ``chunks=False`` skips the per-chunk ``ChunkServed`` events: streams stay cheaper
        when no observer needs them.
        """
        target = self._observers if chunks else self._call_observers
        target.append(callback)

        def unsubscribe() -> None:
            if callback in target:
                target.remove(callback)

        return unsubscribe

    def _emit(self, event: ev.EngineEvent) -> None:
        self._deliver([*self._observers, *self._call_observers], event)

    def _deliver(self, callbacks: list[Observer], event: ev.EngineEvent) -> None:
        for callback in callbacks:
            try:
                callback(event)
            except Exception:  # an observer's bug must not break a stream
                log.exception("replay observer %r failed on %r", callback, event)

    @property
    def scripts(self) -> list[SessionScript]:
        """The scripts being served (read-only by convention)."""
        return list(self._scripts)

    @property
    def pace(self) -> Pace:
        """The current pace."""
        return self._pace

    @property
    def mode(self) -> StepMode:
        """The current step mode."""
        return self._mode

    @property
    def breakpoints(self) -> frozenset[tuple[int, int]]:
        """(script index, call index) pairs the gate stops at."""
        return frozenset(self._breakpoints)

    def runs(self) -> list[str]:
        """Names of the runs seen so far."""
        return list(self._runs)

    def _run(self, name: str) -> _Run:
        run = self._runs.get(name)
        if run is None:
            run = self._runs[name] = _Run(name)
        return run

    def state(self, run: str = DEFAULT_RUN) -> RunState:
        """A read-only snapshot of a run's bindings."""
        r = self._run(run)
        out: list[BindingState] = []
        for b in r.bindings.values():
            length = len(self._scripts[b.script_index].entries) if b.script_index < len(
                self._scripts
            ) else 0
            call = b.call
            out.append(
                BindingState(
                    session=b.key,
                    script_index=b.script_index,
                    cursor=b.cursor,
                    length=length,
                    status=call.status if call is not None else "idle",
                    call_index=call.call_index if call is not None else None,
                    chunks_served=call.served if call is not None else 0,
                    ready_file=call.ready_file if call is not None else None,
                )
            )
        return RunState(
            run, tuple(out), len(self._scripts), not self.consumed_problems(run), self._mode,
            self._pace,
        )

    def journal(self, run: str = DEFAULT_RUN) -> list[CallRecord]:
        """Every call of the run so far, oldest first."""
        return list(self._run(run).journal)

    # -- binding -----------------------------------------------------------------------

    def open_call(
        self,
        session_id: str | None,
        messages: Any = None,
        *,
        run: str = DEFAULT_RUN,
        model: str | None = None,
    ) -> CallHandle:
        """Bind one model call now (claim or advance); raises binding errors immediately."""
        call = self._bind_call(session_id, messages, run, model)
        try:
            call.entry = self._resolve(call.entry, messages)
        except ReplayError as exc:
            self._open_failed(call, exc)
            raise
        return self._armed(call)

    async def open_call_async(
        self,
        session_id: str | None,
        messages: Any = None,
        *,
        run: str = DEFAULT_RUN,
        model: str | None = None,
    ) -> CallHandle:
        """``open_call`` that evaluates ``fromRequest`` patterns in a worker thread.

        Binding still happens at once; a slow pattern (up to its timeout) then holds only
        this call instead of every stream on the event loop.
        """
        call = self._bind_call(session_id, messages, run, model)
        entry = call.entry
        try:
            if self._needs_resolving(entry):
                call.entry = await anyio.to_thread.run_sync(resolve_scripted_entry, entry, messages)
        except ReplayError as exc:
            self._open_failed(call, exc)
            raise
        except BaseException:
            self._end(call, "cancelled", AbortedError())
            raise
        return self._armed(call)

    def _needs_resolving(self, entry: AnyEntry) -> bool:
        if isinstance(entry, HangEntry):
            return entry.readyFile is not None and MARKER in entry.readyFile
        return not (self._plain.get(id(entry)) is entry or self._check_plain(entry))

    def _open_failed(self, call: _Call, exc: ReplayError) -> None:
        if isinstance(exc, PlaceholderError):  # say which recorded call needed the value
            exc.message += (f" [{session_label(call.key)}, script {call.script_index}, "
                            f"call {call.call_index}, run {call.run}]")
        self._end(call, "failed", exc)

    def _armed(self, call: _Call) -> CallHandle:
        if self._mode != "run" or (call.script_index, call.call_index) in self._breakpoints:
            call.budget = 0
        return CallHandle(self, call)

    def _bind_call(self, session_id: str | None, messages: Any, run: str,
                   model: str | None) -> _Call:
        r = self._run(run)
        binding = r.bindings.get(session_id)
        if binding is None:
            if r.claimed >= len(self._scripts):
                err = UnrecordedSessionError(
                    f"a model call arrived from an unrecorded session (#{len(r.bindings) + 1}); "
                    f"the scenario recorded only {len(self._scripts)} session(s) "
                    f"[{session_label(session_id)}, run {run}]"
                )
                self._emit(ev.BindingFailed(run, session_id, err.code, err.message))
                raise err
            binding = _Binding(session_id, r.claimed)
            r.claimed += 1
            r.bindings[session_id] = binding
            self._emit(ev.SessionBound(run, session_id, binding.script_index))
        script = self._scripts[binding.script_index] if binding.script_index < len(
            self._scripts
        ) else None
        length = len(script.entries) if script is not None else 0
        if script is None or binding.cursor >= length:
            err2 = ScriptExhaustedError(
                f"script exhausted — session requested model call #{binding.cursor + 1} but its "
                f"script has only {length} [{session_label(session_id)}, script "
                f"{binding.script_index}, run {run}]"
            )
            self._emit(ev.BindingFailed(run, session_id, err2.code, err2.message))
            raise err2
        call_index = binding.cursor
        binding.cursor += 1
        scripted: ScriptEntry = script.entries[call_index]
        call_id = self._next_call_id
        self._next_call_id += 1
        record = CallRecord(
            call_id, run, session_id, binding.script_index, call_index, scripted.entry.kind,
            messages, model, time.time(),
        )
        r.journal.append(record)
        call = _Call(
            call_id, run, session_id, binding.script_index, call_index, scripted.entry,
            scripted.times, record,
        )
        binding.call = call
        self._calls[call_id] = call
        self._emit(
            ev.CallStarted(run, session_id, binding.script_index, call_index, call_id,
                           scripted.entry.kind)
        )
        return call

    def _resolve(self, entry: AnyEntry, messages: Any) -> AnyEntry:
        """Resolve placeholders; entries known to hold none skip the (slow) walk."""
        return resolve_scripted_entry(entry, messages) if self._needs_resolving(entry) else entry

    def _check_plain(self, entry: AnyEntry) -> bool:
        if isinstance(entry, ChunksEntry | ThrowEntry):
            try:
                plain = _MARKER_BYTES not in _encode(entry_to_json(entry))
            except (TypeError, msgspec.EncodeError):
                plain = False
            if plain:
                self._plain[id(entry)] = entry
                return True
        return False

    def prepare(self) -> None:
        """Scan every entry for placeholders now, so that no first call pays for the scan."""
        for script in self._scripts:
            for item in script.entries:
                if self._plain.get(id(item.entry)) is not item.entry:
                    self._check_plain(item.entry)

    async def stream(
        self,
        session_id: str | None,
        messages: Any = None,
        *,
        run: str = DEFAULT_RUN,
        model: str | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Bind and serve one call: yields its chunks, raises typed errors."""
        handle = self.open_call(session_id, messages, run=run, model=model)
        async for chunk in handle.chunks():
            yield chunk

    # -- serving -----------------------------------------------------------------------

    def _end(self, call: _Call, outcome: Literal["finished", "failed", "cancelled"],
             exc: ReplayError | None = None) -> None:
        if call.record.outcome != "streaming":
            return
        rec = call.record
        rec.outcome = outcome
        rec.ended_at = time.time()
        rec.chunks_served = call.served
        if exc is not None:
            rec.code, rec.message = exc.code, exc.message
        call.status = "idle"
        self._calls.pop(call.id, None)
        binding = self._runs[call.run].bindings.get(call.key)
        if binding is not None and binding.call is call:
            binding.call = None
        args = (call.run, call.key, call.script_index, call.call_index, call.id)
        if outcome == "finished":
            self._emit(ev.CallFinished(*args, call.served))
        elif outcome == "cancelled":
            self._emit(ev.CallCancelled(*args))
        else:
            assert exc is not None
            self._emit(ev.CallFailed(*args, exc.code, exc.message))

    async def _wait(self, call: _Call, seconds: float | None) -> None:
        """Sleep (or, with None, wait for a wake-up); returns early when woken."""
        if call.cancelled:
            raise AbortedError()
        wake = call.wake
        if seconds is None:
            await wake.wait()
        elif seconds > 0:
            with anyio.move_on_after(seconds):
                await wake.wait()
        if call.cancelled:
            raise AbortedError()
        if wake.is_set() and call.wake is wake:
            call.wake = anyio.Event()  # a wake-up ends this wait only, not every later pace wait

    def _delay(self, call: _Call, index: int) -> float:
        pace = self._pace
        if pace.mode == "recorded" and call.times is not None and index < len(call.times):
            if index == 0:
                return 0.0
            gap = float(call.times[index] - call.times[index - 1]) / 1000.0 / pace.speed
            return min(max(gap, 0.0), MAX_RECORDED_GAP_S)
        return pace.ms / 1000.0

    def _next_is_immediate(self, call: _Call) -> bool:
        if call.budget is None and self._mode == "run" and not self._pace.ms and (
                self._pace.mode == "fixed" and not isinstance(call.entry, HangEntry)):
            return True  # the common burst case, checked per chunk
        if call.cancelled:
            return True
        if isinstance(call.entry, HangEntry):
            return call.served < len(HANG_PREFIX)
        if (call.budget == 0 or self._mode == "chunk") and not call.run_to_end:
            return False
        return self._delay(call, call.served) <= 0.0

    async def _gate(self, call: _Call) -> None:
        while call.budget == 0 and not call.run_to_end:
            call.status = "paused"
            call.wake = anyio.Event()
            self._emit(ev.CallPaused(call.run, call.key, call.script_index, call.call_index,
                                     call.id, call.served))
            await self._wait(call, None)
            call.wake = anyio.Event()
        call.status = "streaming"

    async def _serve(self, call: _Call) -> AsyncIterator[dict[str, Any]]:
        entry = call.entry
        outcome: Literal["finished", "failed", "cancelled"] = "cancelled"
        error: ReplayError | None = None
        try:
            if isinstance(entry, HangEntry):
                chunks: Sequence[dict[str, Any]] = HANG_PREFIX
                paced = False
            else:
                assert isinstance(entry, ChunksEntry | ThrowEntry)
                chunks = entry.chunks
                paced = True
            for index, chunk in enumerate(chunks):
                # Hot loop: only await the gate / the pace when they can hold the chunk.
                if call.budget == 0 and not call.run_to_end:
                    await self._gate(call)
                if paced:
                    delay = self._delay(call, index)
                    if delay > 0:
                        await self._wait(call, delay)
                if call.cancelled:
                    raise AbortedError()
                call.served += 1
                if call.budget is not None and not call.run_to_end:
                    call.budget = max(call.budget - 1, 0)
                if self._mode == "chunk" and not call.run_to_end:
                    call.budget = 0
                if self._observers:
                    self._deliver(list(self._observers), ev.ChunkServed(
                        call.run, call.key, call.script_index, call.call_index, call.id, index))
                yield chunk
            if isinstance(entry, ThrowEntry):
                if not entry.chunks:
                    await self._gate(call)
                if call.cancelled:
                    raise AbortedError()
                raise ScriptedFailure(entry.message, entry.code)
            if isinstance(entry, HangEntry):
                if entry.readyFile is not None:
                    call.ready_file = str(self._touch_ready_file(entry.readyFile))
                call.status = "hanging"
                self._emit(ev.HangWaiting(call.run, call.key, call.script_index, call.call_index,
                                          call.id, call.ready_file))
                while True:
                    await self._wait(call, None)
            outcome = "finished"
        except AbortedError as exc:
            outcome, error = "cancelled", exc
            raise
        except ReplayError as exc:
            outcome, error = "failed", exc
            raise
        finally:
            self._end(call, outcome, error)

    def _touch_ready_file(self, name: str) -> Path:
        path = Path(name)
        if not path.is_absolute():
            path = self.ready_dir / path
        try:
            if path.exists() and path.stat().st_size > 0:
                raise InputError(
                    f"{path}: the hang entry's readyFile already exists and is not empty; it "
                    "is a marker the replay creates empty. Point readyFile at a new path.",
                    file=str(path),
                    code="READY_FILE",
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "ab"):
                pass
        except OSError as exc:
            raise InputError(
                f"{path}: cannot create the hang entry's readyFile ({exc.strerror}).",
                file=str(path),
                code="READY_FILE",
            ) from None
        return path

    # -- control -----------------------------------------------------------------------

    def _cancel_call(self, call: _Call) -> None:
        call.cancelled = True
        call.wake.set()

    def cancel(self, session_id: str | None = None, *, run: str = DEFAULT_RUN,
               all_hanging: bool = False) -> int:
        """Cancel one session's in-flight call, or (``all_hanging``) every hanging call."""
        count = 0
        r = self._run(run)
        for binding in r.bindings.values():
            call = binding.call
            if call is None:
                continue
            if (all_hanging and call.status == "hanging") or (
                not all_hanging and binding.key == session_id
            ):
                self._cancel_call(call)
                count += 1
        return count

    def cancel_all(self) -> int:
        """Cancel every in-flight call of every run (server shutdown)."""
        calls = list(self._calls.values())
        for call in calls:
            self._cancel_call(call)
        return len(calls)

    def set_pace(self, pace: Pace) -> None:
        """Change the pace; streams in flight pick it up at their next chunk."""
        self._pace = pace
        self._emit(ev.SettingsChanged(DEFAULT_RUN, self._settings()))

    def set_mode(self, mode: StepMode) -> None:
        """Change the step mode; ``run`` releases every paused call."""
        self._mode = mode
        if mode == "run":
            for call in list(self._calls.values()):
                if call.status == "paused" or call.budget == 0:
                    call.budget = None
                    call.wake.set()
        self._emit(ev.SettingsChanged(DEFAULT_RUN, self._settings()))

    def toggle_breakpoint(self, script_index: int, call_index: int) -> bool:
        """Add or remove a breakpoint; returns whether it is now set."""
        key = (script_index, call_index)
        if key in self._breakpoints:
            self._breakpoints.discard(key)
        else:
            self._breakpoints.add(key)
        self._emit(ev.SettingsChanged(DEFAULT_RUN, self._settings()))
        return key in self._breakpoints

    def _settings(self) -> dict[str, Any]:
        return {
            "mode": self._mode,
            "pace": self._pace.describe(),
            "breakpoints": sorted(self._breakpoints),
        }

    def _find(self, run: str, session_id: str | None) -> _Call | None:
        binding = self._run(run).bindings.get(session_id)
        return binding.call if binding is not None else None

    def pause(self, session_id: str | None, *, run: str = DEFAULT_RUN) -> bool:
        """Hold the session's in-flight call before its next chunk."""
        call = self._find(run, session_id)
        if call is None:
            return False
        call.budget = 0
        call.run_to_end = False
        return True

    def step(self, session_id: str | None, *, run: str = DEFAULT_RUN,
             how: Literal["chunk", "call", "continue"] = "chunk") -> bool:
        """Release a paused call: one chunk, to the end of the call, or ``continue`` (mode run)."""
        call = self._find(run, session_id)
        if call is None:
            return False
        if how == "chunk":
            call.budget = 1
        else:
            call.budget = None
            call.run_to_end = True
        if how == "continue" and self._mode != "run":
            self.set_mode("run")
        self._emit(ev.CallResumed(run, session_id, call.id))
        call.wake.set()
        return True

    def paused_sessions(self, run: str = DEFAULT_RUN) -> list[str | None]:
        """Sessions whose call is held by the gate."""
        return [b.key for b in self._run(run).bindings.values()
                if b.call is not None and b.call.status == "paused"]

    def reset(self, run: str = DEFAULT_RUN) -> None:
        """Forget the run's bindings and cursors (in-flight calls are cancelled)."""
        r = self._run(run)
        for binding in r.bindings.values():
            if binding.call is not None:
                self._cancel_call(binding.call)
        r.bindings.clear()
        r.claimed = 0
        self._emit(ev.RunReset(run))

    def reload(self, scripts: Sequence[SessionScript]) -> list[dict[str, Any]]:
        """Swap in new scripts; bindings keep their cursors, calls in flight keep their entry."""
        old = self._scripts
        self._scripts = list(scripts)
        self._plain.clear()
        changes = diff_scripts(old, self._scripts)
        for name in list(self._runs) or [DEFAULT_RUN]:
            self._emit(ev.ScriptsReloaded(name, changes))
        return changes

    def consumed_problems(self, run: str = DEFAULT_RUN) -> list[str]:
        """Every reason the run is not consumed (section 5 wording); empty when it is."""
        r = self._run(run)
        problems: list[str] = []
        unbound = len(self._scripts) - len(r.bindings)
        if unbound > 0:
            problems.append(f"{unbound} recorded script(s) never bound to a live session")
        for b in r.bindings.values():
            total = len(self._scripts[b.script_index].entries) if b.script_index < len(
                self._scripts
            ) else 0
            if b.cursor < total:
                problems.append(f"{session_label(b.key)} consumed {b.cursor}/{total} "
                                "recorded call(s)")
        return problems

    def assert_consumed(self, run: str = DEFAULT_RUN) -> None:
        """Raise NotConsumedError listing every problem unless the run drained every script."""
        problems = self.consumed_problems(run)
        if problems:
            raise NotConsumedError(problems)
