"""The main screen: header, banner, scripts, call and live panes; the debugger's stepping keys
(step gate, breakpoints, cancel, pace, reset, verdict) and the repaint from engine events.

Each key calls public engine methods only; events are buffered and applied to the widgets at
a bounded rate."""

from __future__ import annotations

import asyncio
from collections import Counter

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input

from replay_engine import CallRecord, Pace, ReplayError, Scenario
from replay_engine import events as ev

from ..headless.eventlog import format_event
from ..headless.state import DebugState
from ..headless.verdicts import flight_summary
from ..keymap import MAIN_KEYS, bindings
from ..messages import CallSelected
from ..widgets.call_pane import CallPane, CallView
from ..widgets.chunk_list import ChunkList
from ..widgets.error_banner import ErrorBanner
from ..widgets.event_log import EventLog
from ..widgets.line_list import LineList
from ..widgets.live_pane import LivePane
from ..widgets.scripts_view import ScriptsView
from ..widgets.search_bar import SearchBar
from ..widgets.status_header import StatusHeader
from .detail import DetailScreen
from .verdict import VerdictScreen, verdict_lines

FLUSH_S = 1 / 30
"""Engine events are applied to the screen at most this often (chunk floods coalesce)."""
BUSY_FLUSH_S = 1 / 8
"""The repaint period while a flood is streaming (more than BUSY_EVENTS events per repaint)."""
BUSY_EVENTS = 500
MAX_LOG_EVENTS = 40
"""Event-log lines written per repaint; older events of a flood are only counted."""
PACE_STEPS_MS = (0, 5, 20, 50, 100, 250, 1000)

Parts = tuple[StatusHeader, ErrorBanner, ScriptsView, CallPane, LivePane]


class MainScreen(Screen[None]):
    """Watch, step and steer the replay of the loaded scenario."""

    BINDINGS = bindings(MAIN_KEYS)
    """From the key table (dsh_replay_tui.keymap); the app adds reload, demo, override, help and quit."""
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    """Below 120 columns the panes stack (scripts on top) so no column is cut away."""

    def __init__(self, state: DebugState) -> None:
        super().__init__()
        self.state = state
        self.panes_ready = asyncio.Event()
        """Set once the panes exist (loading shows its result in them)."""
        self._flushed = asyncio.Event()
        self._pending: list[ev.EngineEvent] = []
        self._chunks_pending = 0
        self._last_burst = 0
        self._flush_timer: Timer | None = None
        self._closed = False
        self._record_key: tuple[int, int] | None = None
        self._record_cache: CallRecord | None = None
        self._widgets: Parts | None = None
        self._unsubscribe = state.engine.subscribe(self._on_engine_event)

    # -- layout --------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="status")
        yield ErrorBanner(id="banner")
        with Horizontal(id="main"):
            yield ScriptsView(id="scripts")
            with Vertical(id="right"):
                yield CallPane(id="call")
                yield LivePane(id="live")
        yield SearchBar(id="search")
        yield Footer(compact=True)

    def _parts(self) -> Parts:
        # Kept from mount: a modal on top must not hide the main screen's widgets.
        if self._widgets is None:
            raise RuntimeError("the debugger is not mounted")
        return self._widgets

    @property
    def header(self) -> StatusHeader:
        """The header."""
        return self._parts()[0]

    @property
    def banner(self) -> ErrorBanner:
        """The error banner."""
        return self._parts()[1]

    @property
    def scripts_view(self) -> ScriptsView:
        """The scripts pane."""
        return self._parts()[2]

    @property
    def call_pane(self) -> CallPane:
        """The call pane."""
        return self._parts()[3]

    @property
    def live_pane(self) -> LivePane:
        """The live pane."""
        return self._parts()[4]

    def on_mount(self) -> None:
        self._widgets = (self.query_one(StatusHeader), self.query_one(ErrorBanner),
                         self.query_one(ScriptsView), self.query_one(CallPane),
                         self.query_one(LivePane))
        self.scripts_view.focus()
        self.scripts_view.border_title = "Scripts"
        self.call_pane.border_title = "Call"
        self.live_pane.border_title = "Live"
        self.panes_ready.set()

    def on_unmount(self) -> None:
        self._closed = True
        self._unsubscribe()

    # -- what a load shows (headless.loading.LoadView) -----------------------------------

    def log_line(self, line: str | Text) -> None:
        """Append a line to the event log."""
        self.live_pane.log_event(line)

    def show_scenario(self, scenario: Scenario) -> None:
        """Show freshly loaded scripts; the error banner goes away."""
        self.banner.clear()
        self.scripts_view.set_scripts(scenario.scripts)
        self.call_pane.forget_context()
        self.show_selected()
        note = None if self.state.ready_dir_noted else self.state.ready_dir_note()
        if note is not None:
            self.state.ready_dir_noted = True
            self.log_line(note)

    def show_load_error(self, title: str, error: ReplayError) -> None:
        """Show why the scenario did not load."""
        self.banner.show_error(title, error)

    # -- engine events -> screen -----------------------------------------------------------

    def _on_engine_event(self, event: ev.EngineEvent) -> None:
        if isinstance(event, ev.ChunkServed):
            self._chunks_pending += 1
        else:
            self._pending.append(event)
            # The cached journal record of the selected call is stale once that call moves.
            call_index = getattr(event, "call_index", None)
            if call_index is None or (getattr(event, "script_index", -1), call_index) == self._record_key:
                self._record_key = None
        self.request_flush()

    def request_flush(self) -> None:
        """Schedule a repaint from the engine's state (at most every FLUSH_S)."""
        if self._flush_timer is None and self.is_running:
            delay = BUSY_FLUSH_S if self._last_burst > BUSY_EVENTS else FLUSH_S
            self._flush_timer = self.set_timer(delay, self.flush, name="flush")

    def flush(self) -> None:
        """Apply buffered events: log lines, header, cursors, sessions, the selected call."""
        self._flush_timer = None
        if self._closed or self._widgets is None:
            return  # not mounted yet, or shutting down
        events, self._pending = self._pending, []
        self._last_burst = self._chunks_pending + len(events)
        self._chunks_pending = 0
        names = self.state.names()
        if len(events) > MAX_LOG_EVENTS:
            # A flood (many sessions at full speed): count what is skipped, show the newest.
            skipped = Counter(type(e).__name__ for e in events[:-MAX_LOG_EVENTS])
            self.live_pane.log_event(Text("… " + ", ".join(f"{n} {name}" for name, n in skipped.items()),
                                          style="dim"))
            events = events[-MAX_LOG_EVENTS:]
        for event in events:
            if isinstance(event, ev.ScriptsReloaded):
                continue  # the loader logs what changed
            line = format_event(event, names)
            if line is not None:
                if event.run != self.state.run_name:
                    line = Text.assemble(f"[run {event.run}] ", line)
                # Stepping chunk by chunk pauses before every chunk: one line per call, updated.
                key = (("paused", event.run, event.session, event.call_index)
                       if isinstance(event, ev.CallPaused) else None)
                self.live_pane.log_event(line, key=key)
        try:
            self._paint(names)
        except NoMatches:
            return  # the main screen's widgets only go away while the app shuts down
        waiters, self._flushed = self._flushed, asyncio.Event()
        waiters.set()

    def log_in_order(self, line: str | Text) -> None:
        """Log a line after the engine events still buffered, so the event log reads in order."""
        if self._pending:
            if self._flush_timer is not None:
                self._flush_timer.stop()
            self.flush()
        self.live_pane.log_event(line)

    def _paint(self, names: list[str]) -> None:
        engine = self.state.engine
        self._follow_first_bound_run()
        run = self.state.run_name
        state = engine.state(run)
        self.header.show(
            scenario=str(self.state.options.scenario), url=self.state.url_label, state=state,
            breakpoints=len(engine.breakpoints_of(run)), paused=len(engine.paused_sessions(run)),
            untimed=self.state.untimed_logs(), loaded=self.state.scenario is not None,
            flight=flight_summary(state), runs=self.state.runs(),
        )
        self.scripts_view.set_live(state, engine.breakpoints_of(run))
        self.live_pane.set_state(state, names, [engine.state(r) for r in engine.bound_runs()])
        self.show_selected()

    def _follow_first_bound_run(self) -> None:
        """Until the user picks a run, follow the first run that binds a session when the
        followed one has none (an agent on ``/runs/NAME/`` routes is then seen at once)."""
        state = self.state
        if state.run_chosen or state.engine.state(state.run_name).bindings:
            return
        bound = state.engine.bound_runs()
        if bound:
            self.follow_run(bound[0], chosen=False)

    def follow_run(self, run: str, *, chosen: bool = True) -> None:
        """Show (and steer) ``run``: header, scripts cursors, call pane and the stepping keys."""
        state = self.state
        state.run_chosen = state.run_chosen or chosen
        if run == state.run_name:
            return
        state.run_name = run
        self._record_key = None
        self.log_line(Text(f"following run {run}", style="bold"))
        self.request_flush()

    async def next_flush(self) -> None:
        """Wait for the next repaint (tests await this instead of sleeping)."""
        await self._flushed.wait()

    # -- selection -------------------------------------------------------------------------

    @on(CallSelected)
    def _call_selected(self, message: CallSelected) -> None:
        self.show_selected()

    def _record(self, script_index: int, call_index: int) -> CallRecord | None:
        key = (script_index, call_index)
        if key == self._record_key:
            return self._record_cache  # the journal is read again only when this call moved
        found = None
        for record in reversed(self.state.engine.journal(self.state.run_name)):
            if record.script_index == script_index and record.call_index == call_index:
                found = record
                break
        self._record_key, self._record_cache = key, found
        return found

    def show_selected(self) -> None:
        """Show the selected call in the call pane (nothing on a script header row); the pane's
        title names it, so keys acting on the selection say on screen what they act on."""
        selected = self.scripts_view.selected()
        pane = self.call_pane
        scenario = self.state.scenario
        s, j = selected if selected is not None else (0, None)
        if scenario is None or j is None or s >= len(scenario.scripts):
            pane.border_title = "Call"
            pane.show(None)
            return
        pane.border_title = f"Call #{j} of [{s}] {scenario.scripts[s].recorded_id or '(no id)'}"
        pane.show(CallView(scenario.scripts[s], s, j, self._record(s, j), self.state.chunks_served(s, j)))

    # -- stepping keys ---------------------------------------------------------------------

    def _target(self, *, want: str | None = None) -> tuple[bool, str | None]:
        """The session a key acts on: the one bound to the selected script, else the first
        whose call is ``want`` (e.g. paused), else the first with a call in flight."""
        bindings = [b for b in self.state.engine.state(self.state.run_name).bindings
                    if b.call_index is not None]
        selected = self.scripts_view.selected()
        if selected is not None:
            for b in bindings:
                if b.script_index == selected[0] and (want is None or b.status == want):
                    return True, b.session
        for b in bindings:
            if want is None or b.status == want:
                return True, b.session
        return False, None

    def action_tab(self, step: int) -> None:
        """Show the next or previous tab of the call pane."""
        self.call_pane.cycle_tab(step)

    def action_mode(self, mode: str) -> None:
        """Step mode of the followed run: run, break at every call, break at every chunk."""
        self.state.engine.set_mode(mode, run=self.state.run_name)  # type: ignore[arg-type]

    def action_breakpoint(self) -> None:
        """Toggle a breakpoint on the selected call."""
        selected = self.scripts_view.selected()
        if selected is None or selected[1] is None:
            self.notify("Select a call to put a breakpoint on.", severity="warning")
            return
        run = self.state.run_name
        self.state.engine.toggle_breakpoint(selected[0], selected[1], run=run)
        on = selected in self.state.engine.breakpoints_of(run)
        self.notify(f"Breakpoint {'set on' if on else 'removed from'} call #{selected[1]} of "
                    f"[{selected[0]}].", timeout=2)

    def action_pause(self) -> None:
        """Hold the selected session's streaming call before its next chunk."""
        found, key = self._target(want="streaming")
        if not found or not self.state.engine.pause(key, run=self.state.run_name):
            self.notify("No call is streaming.", severity="warning")

    def action_step(self, how: str) -> None:
        """Release a paused call by one chunk, or to the end of the call."""
        found, key = self._target(want="paused")
        if not found or not self.state.engine.step(key, run=self.state.run_name,
                                                   how=how):  # type: ignore[arg-type]
            self.notify("No call is paused.", severity="warning")

    def action_resume(self) -> None:
        """Continue: the followed run back to run mode, every paused call of it released."""
        self.state.engine.set_mode("run", run=self.state.run_name)

    def action_cancel(self) -> None:
        """Cancel the selected session's in-flight call (a hang or a paused stream)."""
        found, key = self._target()
        if not found or not self.state.engine.cancel(key, run=self.state.run_name):
            self.notify("No call in flight to cancel.", severity="warning")

    def action_cancel_hanging(self) -> None:
        """Cancel every hanging call of every run."""
        count = self.state.engine.cancel_hanging()
        self.notify(f"Cancelled {count} hanging call(s).")

    def action_next_run(self) -> None:
        """Follow the next run: the default run, then each run that bound a session."""
        runs = self.state.runs()
        if len(runs) < 2:
            self.notify(f"Only run {self.state.run_name} so far; an agent picks another with "
                        "the /runs/NAME/ routes.", severity="warning")
            return
        self.follow_run(runs[(runs.index(self.state.run_name) + 1) % len(runs)])

    def action_pace(self, direction: int) -> None:
        """Step the fixed pace faster (-1) or slower (+1)."""
        ms = self.state.engine.pace.ms
        steps = list(PACE_STEPS_MS)
        index = min(range(len(steps)), key=lambda i: abs(steps[i] - ms))
        index = min(max(index + direction, 0), len(steps) - 1)
        self.state.engine.set_pace(Pace("fixed", steps[index]))

    def action_set_pace(self, mode: str, value: float) -> None:
        """Set the pace from the palette: fixed ``value`` ms, or recorded gaps at ``value`` speed."""
        engine = self.state.engine
        if mode == "recorded":
            engine.set_pace(Pace("recorded", engine.pace.ms, float(value)))
        else:
            engine.set_pace(Pace("fixed", int(value)))

    def action_pace_recorded(self) -> None:
        """Switch between the recorded gaps and a fixed pace."""
        pace = self.state.engine.pace
        self.state.engine.set_pace(Pace("fixed", pace.ms) if pace.mode == "recorded"
                                   else Pace("recorded", pace.ms, 1.0))

    def action_reset(self) -> None:
        """Forget the run's bindings and cursors (the agent is about to start again)."""
        self.state.engine.reset(self.state.run_name)

    def action_assert_consumed(self) -> None:
        """Show the followed run's assert-consumed verdict with every problem, and what is in
        flight or was aborted by the user."""
        engine, run = self.state.engine, self.state.run_name
        problems = engine.verdict_problems(run)  # in-flight, cut and refused calls included
        diverged = engine.first_divergence(run)
        notes = [f"first divergence: {diverged}"] if diverged is not None else []
        loaded = self.state.scenario is not None
        text, _ = verdict_lines(problems, len(engine.scripts), notes, run=run, loaded=loaded)
        self.live_pane.log_event(text.splitlines()[0])
        self.app.push_screen(VerdictScreen(problems, len(engine.scripts), notes, run=run,
                                           loaded=loaded))

    # -- search and detail -----------------------------------------------------------------

    def action_search(self) -> None:
        """Open the search box (it filters the scripts and marks matches as you type)."""
        bar = self.query_one(SearchBar)
        bar.add_class("open")
        bar.focus()

    @on(Input.Changed, "#search")
    def _search_changed(self, event: Input.Changed) -> None:
        self.apply_search(event.value)

    def apply_search(self, text: str) -> int:
        """Filter the scripts by ``text`` and mark it in the chunks and the event log; returns
        the number of matching calls."""
        text = text.strip()
        matched = self.scripts_view.set_filter(text)
        self.scripts_view.border_title = (f"Scripts — / {text} ({matched} call{'s' if matched != 1 else ''})"
                                          if text else "Scripts")
        self.query_one(ChunkList).set_search(text)
        self.query_one(EventLog).set_search(text)
        self.show_selected()
        return matched

    @on(SearchBar.Closed)
    def _search_closed(self, event: SearchBar.Closed) -> None:
        bar = self.query_one(SearchBar)
        if event.cleared:
            self.apply_search("")
        bar.remove_class("open")
        self.scripts_view.focus()

    def _search_target(self) -> LineList:
        focused = self.focused
        if isinstance(focused, ChunkList | EventLog | ScriptsView):
            return focused
        return self.scripts_view

    def action_search_next(self, step: int = 1) -> None:
        """Go to the next match in the focused list (the scripts unless chunks or log have focus)."""
        target = self._search_target()
        if not target.search_text:
            self.notify("No search: press / first.", severity="warning", timeout=2)
        elif not target.next_match(step):
            self.notify(f"No match for {target.search_text!r} here.", severity="warning", timeout=2)

    def action_search_previous(self) -> None:
        """Go to the previous match in the focused list."""
        self.action_search_next(-1)

    @on(LineList.DetailRequested)
    def _detail(self, event: LineList.DetailRequested) -> None:
        event.stop()
        self.app.push_screen(DetailScreen(event.title, event.text))
