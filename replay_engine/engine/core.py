"""The replay engine: binds live sessions to scripts and streams their entries.

The rules: docs/format.md#binding and #serving-entries.

One engine serves any number of runs; each run has its own bindings, cursors
and call journal over the same scripts. Streams are anyio-cancellable, paced,
and pass through a step gate the debugger (or the control API) drives. This
module holds the engine and its serving loop; the call handle, binding, the
gate, pacing, cancellation, ready files and the consumed check live in their
own modules beside it.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from ..context import ContextItem
from ..errors import (
    AbortedError,
    ConfigError,
    NotConsumedError,
    PlaceholderError,
    ReplayError,
    ScenarioNotLoadedError,
    SessionTokenError,
)
from ..models import SessionScript
from . import events as ev
from .binding import PlaceholderScan, bind_call
from .cancel import calls_to_cancel, cancel_call, cancel_run
from .claims import BindMode
from .events import Observer
from .gate import StepGates, StepHow, pause, release
from .handle import CallHandle
from .pacing import Pace
from .recorded import RecordedContexts
from .resolving import PLACEHOLDER_WORKERS, PlaceholderPool
from .serving import HANG_PREFIX, CallServing
from .staging import StagedScripts, stage_scripts
from .state import (
    DEFAULT_JOURNAL_LIMIT,
    DEFAULT_RUN_LIMIT,
    Call,
    CallRecord,
    GoLive,
    Run,
    RunState,
    StepMode,
    diff_scripts,
    runs_to_evict,
    session_label,
    snapshot,
)
from .verdict import consumed_problems, first_divergence, first_divergence_json, verdict_problems

__all__ = ["DEFAULT_RUN", "HANG_PREFIX", "CallHandle", "Observer", "ReplayEngine"]

DEFAULT_RUN = "default"


class ReplayEngine:
    """Serves scripts to live sessions, per run, with observers, pacing and a step gate."""

    def __init__(
        self,
        scripts: Sequence[SessionScript],
        pace_ms: int = 0,
        *,
        pace: Pace | None = None,
        ready_dir: str | Path | None = None,
        journal_limit: int = DEFAULT_JOURNAL_LIMIT,
        placeholder_workers: int = PLACEHOLDER_WORKERS,
        placeholder_workers_per_run: int = 1,
        strict: bool = False,
        bind: BindMode = "content",
        run_limit: int = DEFAULT_RUN_LIMIT,
    ) -> None:
        """``run_limit``: runs kept at most; past it the least recently used one with no call
        in flight (never the default run) is evicted."""
        for what, limit in (("journal", journal_limit), ("run", run_limit)):
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise ConfigError(f"the {what} limit must be a positive integer, got {limit!r}")
        self.journal_limit = journal_limit
        self.run_limit = run_limit
        self._pool = PlaceholderPool(placeholder_workers, placeholder_workers_per_run)
        if isinstance(pace_ms, bool) or not isinstance(pace_ms, int) or pace_ms < 0:
            raise ConfigError(f"paceMs must be a non-negative integer, got {pace_ms!r}")
        self._scripts: list[SessionScript] = list(scripts)
        self._pace = pace or Pace("fixed", pace_ms)
        self.ready_dir = Path(ready_dir) if ready_dir is not None else Path.cwd()
        self._ready_dirs: dict[str, Path] = {}
        self._runs: dict[str, Run] = {}
        self._recent: dict[str, None] = {}
        """Run names, the least recently used first (what eviction goes by)."""
        self._hub = ev.EventHub()
        self._emit = self._hub.emit
        self._ids = itertools.count(1)
        self._gates = StepGates()
        self._calls: dict[int, Call] = {}
        self._scan = PlaceholderScan()
        self._ready_created: list[Path] = []
        self._contexts = RecordedContexts(self._scripts)
        self.strict = strict
        """Whether a call that left the recording (or an unrecorded retry) fails the verdict."""
        if bind not in ("content", "order"):
            raise ConfigError(f"bind must be 'content' or 'order', got {bind!r}")
        self.bind: BindMode = bind
        self._not_loaded: ReplayError | None = None
        self._serving = CallServing(
            runs=self._runs, calls=self._calls, gates=self._gates, hub=self._hub,
            pace=lambda: self._pace, ready_dir=lambda run: self._ready_dirs.get(run, self.ready_dir),
            ready_created=self._ready_created)
        self._end = self._serving.end

    # -- observation -------------------------------------------------------------------

    def subscribe(self, callback: Observer, *, chunks: bool = True) -> Callable[[], None]:
        """Call ``callback`` with every event; returns a function that unsubscribes.

        ``chunks=False`` skips the per-chunk ``ChunkServed`` events: streams stay cheaper
        when no observer needs them.
        """
        return self._hub.subscribe(callback, chunks=chunks)

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
        """The step mode of the default run (``mode_of`` for another)."""
        return self.mode_of(DEFAULT_RUN)

    @property
    def breakpoints(self) -> frozenset[tuple[int, int]]:
        """(script index, call index) pairs the default run's gate stops at."""
        return self.breakpoints_of(DEFAULT_RUN)

    def mode_of(self, run: str) -> StepMode:
        """The run's step mode (each run steps on its own)."""
        return self._gates.peek(run).mode

    def breakpoints_of(self, run: str) -> frozenset[tuple[int, int]]:
        """(script index, call index) pairs the run's gate stops at."""
        return frozenset(self._gates.peek(run).breakpoints)

    def runs(self) -> list[str]:
        """Names of the runs seen so far."""
        return list(self._runs)

    def verdict_runs(self) -> list[str]:
        """The runs a verdict speaks of: those that bound a session or refused a call, the
        default run first (the default run alone when none did)."""
        names = [name for name, run in self._runs.items() if run.bindings or run.refused_count]
        return sorted(names, key=lambda r: r != DEFAULT_RUN) or [DEFAULT_RUN]

    def bound_runs(self) -> list[str]:
        """Names of the runs where a session is bound now, in the order they were first seen."""
        return [name for name, run in self._runs.items() if run.bindings]

    @property
    def created_ready_files(self) -> list[Path]:
        """Hang readyFiles this engine created (not those that already existed), oldest first."""
        return list(self._ready_created)

    def set_ready_dir(self, run: str, directory: str | Path | None) -> None:
        """Where the run's relative hang readyFiles go (None: back to ``ready_dir``), so that
        parallel tests sharing one server never share a marker."""
        if directory is None:
            self._ready_dirs.pop(run, None)
        else:
            self._ready_dirs[run] = Path(directory)

    def _run(self, name: str) -> Run:
        run = self._runs.get(name)
        if run is None:
            run = self._runs[name] = Run(name, journal=deque(maxlen=self.journal_limit))
            if len(self._runs) > self.run_limit:
                self._evict(keep=name)
        self._recent.pop(name, None)
        self._recent[name] = None
        return run

    def _evict(self, keep: str) -> None:
        """Forget the least recently used runs not in use until within ``run_limit``."""
        pinned = {keep, DEFAULT_RUN, *self._ready_dirs}
        for name in runs_to_evict(self._runs, self._recent, self.run_limit, pinned):
            self.forget(name, evicted=True)

    def _peek(self, name: str) -> Run:
        """The run if it exists, else an empty one that is not kept (reads create no run)."""
        run = self._runs.get(name)
        return run if run is not None else Run(name, journal=deque(maxlen=1))

    def state(self, run: str = DEFAULT_RUN) -> RunState:
        """A read-only snapshot of a run's bindings."""
        return snapshot(self._peek(run), self._scripts, not self.verdict_problems(run),
                        self.mode_of(run), self._pace)

    def journal(self, run: str = DEFAULT_RUN) -> list[CallRecord]:
        """The run's calls, oldest first (the newest ``journal_limit`` of them)."""
        return list(self._peek(run).journal)

    # -- binding -----------------------------------------------------------------------

    def open_call(
        self,
        session_id: str | None,
        messages: Any = None,
        *,
        run: str = DEFAULT_RUN,
        model: str | None = None,
        retry: bool = False,
        dialect: str | None = None,
    ) -> CallHandle:
        """Bind one model call now (claim or advance); raises binding errors immediately.

        ``retry`` marks a client library's retry of an earlier request and ``dialect`` names
        the wire it arrived on (both kept in the journal and the events).
        """
        call = self._bind_call(session_id, messages, run, model, retry, dialect)
        try:
            call.entry = self._scan.resolve(call.entry, messages, self._run(run).live_ids)
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
        retry: bool = False,
        dialect: str | None = None,
    ) -> CallHandle:
        """``open_call`` that evaluates ``fromRequest`` patterns in a worker thread.

        Binding still happens at once; a slow pattern (up to its timeout) then holds only
        this call instead of every stream on the event loop.
        """
        call = self._bind_call(session_id, messages, run, model, retry, dialect)
        entry = call.entry
        try:
            if self._scan.needs_resolving(entry):
                entry = self._scan.tokens(entry, self._run(run).live_ids)
                call.entry = await self._pool.resolve(self._runs, call, entry, messages)
        except ReplayError as exc:
            self._open_failed(call, exc)
            raise
        except BaseException:
            self._end(call, "cancelled", AbortedError())
            raise
        return self._armed(call)

    @property
    def placeholder_limiter(self) -> anyio.CapacityLimiter | None:
        """The worker pool placeholder patterns run in (None until the first one ran)."""
        return self._pool.limiter

    def _open_failed(self, call: Call, exc: ReplayError) -> None:
        if isinstance(exc, PlaceholderError | SessionTokenError):  # which call needed it
            exc.message += (f" [{session_label(call.key)}, script {call.script_index}, "
                            f"call {call.call_index}, run {call.run}]")
        self._end(call, "failed", exc)

    def _armed(self, call: Call) -> CallHandle:
        self._gates.of(call.run).arm(call)
        return CallHandle(self._serving, call)

    def _bind_call(self, session_id: str | None, messages: Any, run: str,
                   model: str | None, retry: bool = False, dialect: str | None = None) -> Call:
        if self._not_loaded is not None:  # observers see the refusal (the debugger logs it)
            self._emit(ev.BindingFailed(run, session_id, ScenarioNotLoadedError.code,
                                        f"answered 503: the scenario is not loaded "
                                        f"[{self._not_loaded.code}]", retry, messages,
                                        dialect=dialect))
            raise ScenarioNotLoadedError(
                "the scenario is not loaded, so no call can be served: "
                f"[{self._not_loaded.code}] {self._not_loaded.message} — fix it and reload")
        return bind_call(self._run(run), self._scripts, session_id, messages, model,
                         ids=self._ids, calls=self._calls, emit=self._emit, retry=retry,
                         dialect=dialect, contexts=self._contexts, bind=self.bind)

    def set_not_loaded(self, error: ReplayError | None) -> None:
        """Say the scenario failed to load (every model call then answers 503
        ``SCENARIO_NOT_LOADED`` naming ``error``), or, with None, that it loaded again."""
        self._not_loaded = error

    @property
    def not_loaded(self) -> ReplayError | None:
        """Why the scenario is not loaded (None when it is)."""
        return self._not_loaded

    def prepare(self) -> None:
        """Scan every entry for placeholders now, so that no first call pays for the scan."""
        self._scan.prepare(self._scripts)

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

    # -- control -----------------------------------------------------------------------

    def cancel(self, session_id: str | None = None, *, run: str = DEFAULT_RUN,
               all_hanging: bool = False) -> int:
        """Cancel one session's in-flight call, or (``all_hanging``) every hanging call.

        A call cancelled here before its last chunk is recorded as aborted (``CallRecord.aborted``,
        ``BindingState.aborted``); a hang's cancel is its normal end.
        """
        calls = calls_to_cancel(self._peek(run), session_id, all_hanging)
        for call in calls:
            call.user_cancelled = True
            cancel_call(call)
        return len(calls)

    def cancel_hanging(self) -> int:
        """Cancel every hanging call of every run; returns how many."""
        return sum(self.cancel(run=name, all_hanging=True) for name in list(self._runs))

    def cancel_all(self) -> int:
        """Cancel every in-flight call of every run (server shutdown)."""
        calls = list(self._calls.values())
        for call in calls:
            cancel_call(call)
        return len(calls)

    def set_pace(self, pace: Pace) -> None:
        """Change the pace; streams in flight pick it up at their next chunk."""
        self._pace = pace
        self._emit(ev.SettingsChanged(DEFAULT_RUN, self._settings(), self._pace))

    def set_mode(self, mode: StepMode, *, run: str = DEFAULT_RUN) -> None:
        """Change the run's step mode; ``run`` releases every paused call of that run."""
        self._run(run)  # kept (and counted, evicted) with the run's other state
        self._gates.of(run).set_mode(mode, list(self._calls.values()))
        self._emit(ev.SettingsChanged(run, self._settings(run), self._pace))

    def toggle_breakpoint(self, script_index: int, call_index: int, *,
                          run: str = DEFAULT_RUN) -> bool:
        """Add or remove a breakpoint of the run; returns whether it is now set."""
        self._run(run)
        now_set = self._gates.of(run).toggle(script_index, call_index)
        self._emit(ev.SettingsChanged(run, self._settings(run), self._pace))
        return now_set

    def _settings(self, run: str = DEFAULT_RUN) -> dict[str, Any]:
        return self._gates.peek(run).settings(self._pace)

    def _find(self, run: str, session_id: str | None) -> Call | None:
        binding = self._peek(run).bindings.get(session_id)
        return binding.call if binding is not None else None

    def pause(self, session_id: str | None, *, run: str = DEFAULT_RUN) -> bool:
        """Hold the session's in-flight call before its next chunk."""
        call = self._find(run, session_id)
        if call is None:
            return False
        pause(call)
        return True

    def step(self, session_id: str | None, *, run: str = DEFAULT_RUN,
             how: StepHow = "chunk") -> bool:
        """Release a paused call: one chunk, to the end of the call, or ``continue`` (mode run)."""
        call = self._find(run, session_id)
        if call is None:
            return False
        release(call, how)
        if how == "continue" and self.mode_of(run) != "run":
            self.set_mode("run", run=run)
        self._emit(ev.CallResumed(run, call.key, call.script_index, call.call_index, call.id))
        call.wake.set()
        return True

    def paused_sessions(self, run: str = DEFAULT_RUN) -> list[str | None]:
        """Sessions whose call is held by the gate."""
        return [b.key for b in self._peek(run).bindings.values()
                if b.call is not None and b.call.status == "paused"]

    def reset(self, run: str = DEFAULT_RUN) -> None:
        """Forget the run's bindings, cursors and journal (in-flight calls are cancelled)."""
        r = self._runs.get(run)
        if r is not None:
            cancel_run(r)
            r.clear()
        self._emit(ev.RunReset(run))

    def forget(self, run: str, *, evicted: bool = False) -> bool:
        """Delete the run (in-flight calls are cancelled); False when there was no such run."""
        r = self._runs.pop(run, None)
        self._recent.pop(run, None)
        self._gates.forget(run)
        self._ready_dirs.pop(run, None)
        if r is None:
            return False
        cancel_run(r)
        self._emit(ev.RunForgotten(run, evicted))
        return True

    def configure_run(self, run: str, *, overflow: frozenset[str] | None = None,
                      scrub: Callable[[Any], Any] | None = None) -> None:
        """Set what is given (``forget`` clears both). ``overflow``: the wires whose calls past
        the recording go back to the server unrefused (to forward and record); ``scrub`` is
        applied to live requests before they are compared with the recording."""
        r = self._run(run)
        r.overflow = r.overflow if overflow is None else overflow
        r.scrub = scrub or r.scrub

    def set_go_live(self, run: str, rule: GoLive | None) -> None:
        """Which of ``run``'s bound calls on its overflow wires leave the recording for the
        upstream, with every later call of their session (``GoneLiveError``; None: none)."""
        self._run(run).go_live = rule

    def stage(self, scripts: Sequence[SessionScript]) -> StagedScripts:
        """Do a reload's slow part now (the placeholder scan, the diff): safe in a worker
        thread while the loop serves; ``reload`` of the result then swaps at once."""
        return stage_scripts(self._scripts, scripts)

    def reload(self, scripts: Sequence[SessionScript] | StagedScripts) -> list[dict[str, Any]]:
        """Swap in new scripts (or ``stage``'s result); bindings keep their cursors, calls in
        flight keep their entry."""
        old = self._scripts
        if isinstance(scripts, StagedScripts):
            self._scripts, self._scan = scripts.scripts, scripts.scan
            changes = scripts.changes if scripts.base is old else diff_scripts(old, self._scripts)
        else:
            self._scripts = list(scripts)
            self._scan.clear()
            changes = diff_scripts(old, self._scripts)
        self._contexts.replace(self._scripts)
        self._not_loaded = None
        for name in list(self._runs) or [DEFAULT_RUN]:
            self._emit(ev.ScriptsReloaded(name, changes))
        return changes

    def consumed_problems(self, run: str = DEFAULT_RUN) -> list[str]:
        """The binding check alone, in the words of docs/format.md#binding; ``verdict_problems`` is
        the verdict."""
        return consumed_problems(self._scripts, self._peek(run))

    def verdict_problems(self, run: str = DEFAULT_RUN, *, strict: bool | None = None,
                         unconsumed: bool = True, refused: bool = True) -> list[str]:
        """Every reason the run did not replay the recording (docs/format.md#binding, refused calls, calls in
        flight or cut, and with ``strict`` (default: the engine's) divergences); empty: it did."""
        return verdict_problems(self._scripts, self._peek(run),
                                strict=self.strict if strict is None else strict,
                                unconsumed=unconsumed, refused=refused)

    def recorded_context(self, script_index: int, call_index: int) -> tuple[ContextItem, ...] | None:
        """What the recording held before a call: the content each live request is compared
        with (None: a sidecar entry, or no such call)."""
        return self._contexts.at(script_index, call_index)

    def first_divergence(self, run: str = DEFAULT_RUN) -> str | None:
        """Where the run first left the recording, on one line (None: it never did)."""
        return first_divergence(self._scripts, self._peek(run))

    def first_divergence_json(self, run: str = DEFAULT_RUN) -> dict[str, Any] | None:
        """The same first divergence as JSON (``verdict.first_divergence_json``)."""
        return first_divergence_json(self._peek(run))

    def assert_consumed(self, run: str = DEFAULT_RUN) -> None:
        """Raise NotConsumedError listing every problem unless the run replayed the recording."""
        problems = self.verdict_problems(run)
        if problems:
            raise NotConsumedError(problems)
