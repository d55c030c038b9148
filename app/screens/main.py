"""The main screen: header, banner, scripts, call and live panes, the context footer; the
debugger's stepping keys (step gate, breakpoints, cancel, pace, reset, verdict) and the pane keys
(Tab, F2-F4, zoom).

Each key calls public engine methods only; engine events are applied at a bounded rate
(``feed``)."""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.events import DescendantBlur, DescendantFocus
from textual.widgets import Input

from replay_engine import BindingState, CallRecord, Pace, ReplayError, Scenario, divergence_note
from replay_engine import events as ev

from ..headless.moments import SEARCH, moments
from ..headless.pace import step_pace
from ..headless.screenfacts import (
    connect_hint,
    empty_scripts,
    nothing_selected,
    record_facts,
    replay_facts,
    situation,
    target_binding,
)
from ..headless.scriptinfo import ignored_note, live_ids, script_facts, show_tokens
from ..headless.state import DebugState
from ..keymap import APP_KEYS, LIST_KEYS, LIVE_KEYS, MAIN_KEYS, SEARCH_BAR_KEYS, bindings
from ..widgets.call_pane import CallPane, CallView
from ..widgets.context_footer import ContextFooter
from ..widgets.error_banner import ErrorBanner
from ..widgets.line_list import LineList
from ..widgets.live_pane import LivePane
from ..widgets.scripts_view import ScriptsView
from ..widgets.search_bar import SearchBar
from ..widgets.status_header import StatusHeader
from .detail import DetailScreen
from .feed import FeedScreen
from .panes import Panes
from .search import Search
from .verdict import VerdictScreen, verdict_lines

SIDE_BY_SIDE = 140
"""From this width the scripts sit beside the call and Live panes: a whole call row
(``ROW_WIDTH``) within 55% of the width, and the rest for the call pane. Narrower, side by side
would cut the summaries to a few characters, so the panes stack and each gets the full width."""
FOOTER_KEYS = LIST_KEYS + LIVE_KEYS + MAIN_KEYS + APP_KEYS + SEARCH_BAR_KEYS
"""The keys the context footer picks from."""


class MainScreen(FeedScreen):
    """Watch, step and steer the replay of the loaded scenario."""

    BINDINGS = bindings(MAIN_KEYS)
    """From the key table (dsh_replay_tui.keymap); the app adds reload, demo, override, help and quit."""
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (SIDE_BY_SIDE, "-wide")]
    """Below SIDE_BY_SIDE columns the panes stack (scripts on top) so no column is cut away."""

    def __init__(self, state: DebugState) -> None:
        super().__init__(state.engine)
        self.state = state
        self.panes_ready = asyncio.Event()
        """Set once the panes exist (loading shows its result in them)."""
        self._record_key: tuple[int, int] | None = None
        self._record_cache: CallRecord | None = None
        self._panes: Panes | None = None
        self._widgets: tuple[StatusHeader, ContextFooter] | None = None

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
        yield ContextFooter(FOOTER_KEYS, id="footer")

    @property
    def panes(self) -> Panes:
        """The panes (kept from mount: a modal on top must not hide them)."""
        if self._panes is None:
            raise RuntimeError("the debugger is not mounted")
        return self._panes

    @property
    def header(self) -> StatusHeader:
        """The header."""
        assert self._widgets is not None, "the debugger is not mounted"
        return self._widgets[0]

    @property
    def footer(self) -> ContextFooter:
        """The context footer."""
        assert self._widgets is not None, "the debugger is not mounted"
        return self._widgets[1]

    @property
    def banner(self) -> ErrorBanner:
        """The error banner."""
        return self.panes.banner

    @property
    def scripts_view(self) -> ScriptsView:
        """The scripts pane."""
        return self.panes.scripts

    @property
    def call_pane(self) -> CallPane:
        """The call pane."""
        return self.panes.call

    @property
    def live_pane(self) -> LivePane:
        """The live pane."""
        return self.panes.live

    def on_mount(self) -> None:
        self._panes = Panes(self.query_one(ErrorBanner), self.query_one(ScriptsView),
                            self.query_one(CallPane), self.query_one(LivePane),
                            self.query_one("#right"))
        self.search = Search(self._panes, self.query_one(SearchBar), self.show_selected)
        self.watch(self.scripts_view, "cursor", self._cursor_moved, init=False)
        self._widgets = (self.query_one(StatusHeader), self.query_one(ContextFooter))
        self.scripts_view.focus()
        self.scripts_view.border_title = "Scripts"
        self.call_pane.border_title = "Call"
        self.live_pane.border_title = "Live"
        self.panes_ready.set()

    def on_screen_suspend(self) -> None:
        # A screen over this one (the palette, a dialog) takes the keys: the footer's would not
        # act, so it goes until this screen is back in front (dialogs show their own keys).
        if self._widgets is not None:
            self.footer.visible = False

    def on_screen_resume(self) -> None:
        if self._widgets is not None:
            self.footer.visible = True

    # -- what the feed needs ---------------------------------------------------------------

    def log_line(self, line: str | Text, *, key: object = None) -> None:
        """Append a line to the event log."""
        self.live_pane.log_event(line, key=key)

    def log_lines(self, lines: list[tuple[str | Text, object]]) -> None:
        self.live_pane.log_events(lines)

    def followed_run(self) -> str:
        return self.state.run_name

    def script_names(self) -> list[str]:
        return self.state.names()

    def ready_to_paint(self) -> bool:
        return self._panes is not None

    def forget_record(self, event: ev.EngineEvent) -> None:
        # The cached journal record of the selected call is stale once that call moves.
        call_index = getattr(event, "call_index", None)
        if call_index is None or (getattr(event, "script_index", -1), call_index) == self._record_key:
            self._record_key = None

    # -- what a load shows (headless.loading.LoadView) -----------------------------------

    def show_scenario(self, scenario: Scenario) -> None:
        """Show freshly loaded scripts; the error banner goes away (and the focus it held moves to
        the scripts, else no pane would have it and the arrows would do nothing)."""
        orphaned = self.focused is None or self.panes.focused(self.focused) == "banner"
        self.banner.clear()
        if orphaned and not self.banner.showing:
            self.panes.focus("scripts")
        self.scripts_view.set_scripts(scenario.scripts)
        self.call_pane.forget_context()
        self.show_selected()
        note = None if self.state.ready_dir_noted else self.state.ready_dir_note()
        if note is not None:
            self.state.ready_dir_noted = True
            self.log_line(note)
        ignored = ignored_note(scenario)
        if ignored is not None:
            self.log_line(Text(ignored, style="yellow"))
        self._focus_moved()

    def show_load_error(self, title: str, error: ReplayError) -> None:
        """Show why the scenario did not load (focus goes to the banner when nothing loaded,
        unless the user took it to the call pane or Live, e.g. to pick a log line for E)."""
        self.banner.show_error(title, error)
        if self._banner_takes_focus():
            # after the refresh that displays it: a banner still hidden cannot take the focus
            self.call_after_refresh(self._focus_banner)
        self._focus_moved()

    def _banner_takes_focus(self) -> bool:
        """Whether the error banner should hold the focus: nothing loaded, and the user has not
        taken the focus to the call pane or Live."""
        return (self.state.scenario is None and self.banner.showing
                and self.panes.focused(self.focused) in (None, "scripts"))

    def _focus_banner(self) -> None:
        if self._banner_takes_focus():
            self.banner.focus()
            self._focus_moved()

    # -- repaint ---------------------------------------------------------------------------

    def paint(self, names: list[str], events: list[ev.EngineEvent]) -> None:
        engine, state = self.state.engine, self.state
        self._follow_first_bound_run()
        run = engine.state(state.run_name)
        state.last_state = run
        recording = record_facts(state)
        if recording is not None:
            self.header.show_recording(recording)
        else:
            self.header.show(replay_facts(state, run))
        self.scripts_view.set_live(run, engine.breakpoints_of(run.run))
        self.live_pane.set_state(run, names, [engine.state(r) for r in engine.bound_runs()])
        self.live_pane.set_hint(connect_hint(state))
        self.show_selected()
        self._update_footer()

    def _update_footer(self) -> None:
        """The keys that act now: from the state, the focused pane and the zoom."""
        if isinstance(self.focused, Input):
            self.footer.set_moments((SEARCH,), always=False)
            return
        now = situation(self.state, self.panes.focused(self.focused), zoomed=self.panes.zoomed is not None)
        self.footer.set_moments(moments(now), {"zoom": "Restore"} if self.panes.zoomed else {})

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        self._focus_moved()

    def on_descendant_blur(self, event: DescendantBlur) -> None:
        self._focus_moved()

    def _focus_moved(self) -> None:
        if self._panes is not None and self._widgets is not None:
            self._update_footer()
            self.banner.refresh()

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

    # -- selection -------------------------------------------------------------------------

    def _cursor_moved(self) -> None:
        # Watched, not messaged: the call pane changes in the same step as the scripts'
        # cursor, so one screen update paints both (a key is on screen one frame sooner).
        self.input_seen()
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
        """Show the selected call in the call pane (the script's facts on its header row); the
        pane's title names it, so keys acting on the selection say on screen what they act on."""
        selected = self.scripts_view.selected()
        pane = self.call_pane
        scenario = self.state.scenario
        s, j = selected if selected is not None else (0, None)
        if scenario is None:
            pane.set_title("Call")
            pane.show_about(Text(nothing_selected(self.state)))
            self.scripts_view.set_empty_text(empty_scripts(self.state))
            return
        if s >= len(scenario.scripts):
            pane.set_title("Call")
            pane.show(None)
            return
        state = self.state.last_state
        ids = live_ids(state) if state is not None else {}
        script = scenario.scripts[s]
        if j is None:
            binding = next((b for b in state.bindings if b.script_index == s), None) \
                if state is not None else None
            pane.set_title(f"Script [{s}] {show_tokens(script.recorded_id, ids) or '(no id)'}")
            pane.show_about(script_facts(scenario, s, binding))
            return
        pane.set_title(f"Call #{j} of [{s}] {show_tokens(script.recorded_id, ids) or '(no id)'}")
        pane.show(CallView(script, s, j, self._record(s, j), self.state.chunks_served(s, j), ids))

    # -- panes -----------------------------------------------------------------------------

    def action_focus_pane(self, step: int) -> None:
        """Focus the next (1) or previous (-1) pane, straight to its list."""
        self.panes.cycle(self.focused, step)

    def action_pane(self, pane: str) -> None:
        """Focus one pane by name."""
        self.panes.focus(pane)

    def action_zoom(self) -> None:
        """Maximise the focused pane, or restore the layout."""
        self.panes.toggle_zoom(self.focused)
        self._update_footer()

    # -- stepping keys ---------------------------------------------------------------------

    def _target(self, *, want: str | None = None) -> BindingState | None:
        """The session a key acts on (see ``screenfacts.target_binding``)."""
        return target_binding(self.state.engine.state(self.state.run_name),
                              self.scripts_view.selected(), want)

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
        target = self._target(want="streaming")
        if target is None or not self.state.engine.pause(target.session, run=self.state.run_name):
            self.notify("No call is streaming.", severity="warning")

    def action_step(self, how: str) -> None:
        """Release a paused call by one chunk, or to the end of the call; the call pane follows
        the call stepped (by chunk: its chunks, the one released highlighted)."""
        target = self._target(want="paused")
        if target is None or not self.state.engine.step(target.session, run=self.state.run_name,
                                                         how=how):  # type: ignore[arg-type]
            self.notify("No call is paused.", severity="warning")
            return
        assert target.call_index is not None
        if self.scripts_view.selected() != (target.script_index, target.call_index):
            self.scripts_view.select(target.script_index, target.call_index)
        if how == "chunk":
            self.call_pane.show_tab("chunks")
        self.request_flush()

    def action_resume(self) -> None:
        """Continue: the followed run back to run mode, every paused call released."""
        self.state.engine.set_mode("run", run=self.state.run_name)

    def action_cancel(self) -> None:
        """Cancel the selected session's in-flight call (a hang or a paused stream)."""
        target = self._target()
        if target is None or not self.state.engine.cancel(target.session, run=self.state.run_name):
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
        """One rung faster (-1) or slower (+1) on the pace ladder."""
        self.state.engine.set_pace(step_pace(self.state.engine.pace, direction))

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
        note = divergence_note(engine, run)
        notes = [note] if note is not None else []
        loaded = self.state.scenario is not None
        text, _ = verdict_lines(problems, len(engine.scripts), notes, run=run, loaded=loaded)
        self.log_line(text.splitlines()[0])
        self.app.push_screen(VerdictScreen(problems, len(engine.scripts), notes, run=run,
                                           loaded=loaded))

    # -- search and detail -----------------------------------------------------------------

    def action_search(self) -> None:
        """Open the search box (it filters the scripts and marks matches as you type)."""
        self.search.open()

    @on(Input.Changed, "#search")
    def _search_changed(self, event: Input.Changed) -> None:
        self.search.apply(event.value)

    @on(SearchBar.Closed)
    def _search_closed(self, event: SearchBar.Closed) -> None:
        self.search.closed(event.cleared)

    def action_search_next(self, step: int = 1) -> None:
        """Go to the next match in the focused list (the scripts unless another list has focus)."""
        warning = self.search.step(self.focused, step)
        if warning is not None:
            self.notify(warning, severity="warning", timeout=2)

    def action_search_previous(self) -> None:
        """Go to the previous match in the focused list."""
        self.action_search_next(-1)

    @on(LineList.DetailRequested)
    def _detail(self, event: LineList.DetailRequested) -> None:
        event.stop()
        self.app.push_screen(DetailScreen(event.title, event.text))

