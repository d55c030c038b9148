"""What the main screen shows, computed from the debugger's state without Textual: the header's
facts, Live's hint while no session is bound, the moment the footer follows, and the session a
stepping key acts on."""

from __future__ import annotations

from collections.abc import Sequence

from replay_engine import BindingState, RunState, ScenarioNotFoundError, shown_url

from .header import RecordFacts, ReplayFacts
from .loading import EDITOR_FIXES
from .moments import Situation
from .state import DebugState
from .verdicts import flight_summary


def replay_facts(state: DebugState, run: RunState) -> ReplayFacts:
    """The replay header's facts for the followed run."""
    engine = state.engine
    return ReplayFacts(
        scenario=str(state.options.scenario), url=state.url_label, state=run,
        breakpoints=len(engine.breakpoints_of(run.run)),
        paused=len(engine.paused_sessions(run.run)), untimed=state.untimed_logs(),
        loaded=state.scenario is not None, flight=flight_summary(run), runs=state.runs(),
        strict=state.options.strict, serving=state.serve_error is None)


LIVE_STOP = "V: review, keep or discard"
"""The header's key after going live: short enough that 80 columns keep it beside the path."""


def record_facts(state: DebugState) -> RecordFacts | None:
    """The record-mode header's facts while recording (None otherwise)."""
    recording = state.recording
    if recording is None or not recording.active:
        recording = state.live
        if recording is None or not recording.active:
            return None
        return RecordFacts(upstream=shown_url(recording.upstream), url=state.url_label,
                           scenario=str(state.options.scenario), calls=recording.counts(),
                           title=recording.title, stop=LIVE_STOP)
    return RecordFacts(upstream=shown_url(recording.upstream), url=state.url_label,
                       scenario=str(state.options.scenario), calls=recording.counts())


def connect_hint(state: DebugState) -> list[str]:
    """What Live says while no session is bound: how to connect one."""
    if state.url is None:
        return ["no session bound yet: nothing is served (the banner says why)"]
    url = state.url_label
    if state.recording is not None and state.recording.active:
        return [f"recording: agent → {url}/v1 with its real API key",
                "(Anthropic SDKs: no /v1) or d: the demo agent"]
    if state.scenario is None:
        return [f"nothing loaded: model calls to {url}/v1 answer 503 SCENARIO_NOT_LOADED",
                "until the scenario loads (the banner says why)"]
    return [f"no session bound: agent → {url}/v1",
            "(X-Session-Id per session) or d: the demo agent"]


def empty_scripts(state: DebugState) -> str:
    """What the scripts pane says while it has no script."""
    if state.recording is not None and state.recording.active:
        return "recording: the calls load here to replay when you stop (s)"
    return "no scripts: nothing is loaded (the banner above says why)"


def nothing_selected(state: DebugState) -> str:
    """What the call pane says while no scenario is loaded."""
    if state.recording is not None and state.recording.active:
        return ("Recording: Live shows each call as it is recorded; s stops, loads them here "
                "and replays them.")
    if state.record_refused is not None:
        return ("Nothing recorded: the banner above says why (Enter on it shows all of it); "
                "quit with q and start again as it says.")
    if state.load_error is not None:
        return "No scenario loaded: the banner above says why (Enter on it shows all of it)."
    return "Loading…"


def situation(state: DebugState, focus: str | None, *, zoomed: bool = False) -> Situation:
    """The moment the footer follows (the focused pane among it, when there is one). A file
    given as the scenario is no failed load a reload or an edit fixes (the banner says to
    start on its directory)."""
    error = state.load_error
    loaded = state.scenario is not None
    a_file = isinstance(error, ScenarioNotFoundError) and state.options.scenario.is_file()
    return Situation(
        recording=state.recording is not None and state.recording.active,
        live=state.live is not None and state.live.active,
        can_go_live=state.live is not None and loaded,
        load_failed=error is not None and not a_file,
        unfinished=error is not None and error.code in EDITOR_FIXES,
        loaded=loaded, serving=state.url is not None, state=state.last_state,
        focus=focus if loaded or focus in ("banner", "live") else None, zoomed=zoomed)


def target_binding(run: RunState, selected: tuple[int, int | None] | None,
                   want: str | None = None) -> BindingState | None:
    """The session a key acts on: the one bound to the selected script, else the first whose
    call is ``want`` (e.g. paused), else the first with a call in flight."""
    bound: Sequence[BindingState] = [b for b in run.bindings if b.call_index is not None]
    if selected is not None:
        for b in bound:
            if b.script_index == selected[0] and (want is None or b.status == want):
                return b
    return next((b for b in bound if want is None or b.status == want), None)
