"""The debugger App: layout, key bindings, and the wiring between engine, server and widgets.

The engine is observed only through ``engine.subscribe`` and driven only through its
public methods; events are buffered and applied to the widgets at a bounded rate.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.timer import Timer
from textual.widgets import Footer

from replay_engine import events as ev
from replay_engine.cli_serve import EXIT_NOT_CONSUMED, write_atomic
from replay_engine.cli_serve import verdict as serve_verdict
from replay_engine.engine import DEFAULT_RUN, CallRecord, Pace, ReplayEngine
from replay_engine.errors import ReplayError
from replay_engine.models import ProviderConfig
from replay_engine.scenario import Scenario
from replay_engine.server import ReplayServer, is_loopback

from .actions import DebuggerActions
from .editing import EditorActions
from .eventlog import format_event
from .loading import ScenarioLoading
from .messages import CallSelected
from .widgets.call_pane import CallPane, CallView
from .widgets.error_banner import ErrorBanner
from .widgets.live_pane import LivePane
from .widgets.scripts_view import ScriptsView
from .widgets.status_header import StatusHeader

FLUSH_S = 1 / 30
"""Engine events are applied to the screen at most this often (chunk floods coalesce)."""
BUSY_FLUSH_S = 1 / 8
"""The repaint period while a flood is streaming (more than BUSY_EVENTS events per repaint)."""
BUSY_EVENTS = 500
MAX_LOG_EVENTS = 40
"""Event-log lines written per repaint; older events of a flood are only counted."""


@dataclass(slots=True)
class AppOptions:
    """What the command line (or a test) asks of the debugger."""

    scenario: Path
    host: str = "127.0.0.1"
    port: int = 8765
    pace: Pace = field(default_factory=Pace)
    providers: list[ProviderConfig] | None = None
    ready_dir: Path | None = None
    serve: bool = True
    watch: bool = True
    url_label: str | None = None
    """Shown instead of the real URL (snapshots use a fixed one)."""
    url_file: Path | None = None
    """Where the base URL is written (atomically) once the server is up."""


class ReplayApp(DebuggerActions, EditorActions, ScenarioLoading, App[str]):
    """dsh-replay-tui: serve a scenario and watch, step and steer its replay."""

    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = False
    TITLE = "dsh-replay"
    BINDINGS = [
        Binding("1", "mode('run')", "Run"),
        Binding("2", "mode('call')", "Brk call"),
        Binding("3", "mode('chunk')", "Brk chunk"),
        Binding("b", "breakpoint", "Brkpt"),
        Binding("p", "pause", "Pause"),
        Binding("n", "step('chunk')", "Step"),
        Binding("e", "step('call')", "End call"),
        Binding("c", "resume", "Continue"),
        Binding("x", "cancel", "Cancel"),
        Binding("X", "cancel_hanging", "Cancel hangs"),
        Binding("plus,equals_sign", "pace(-1)", "Faster", show=False),
        Binding("minus", "pace(1)", "Slower", show=False),
        Binding("t", "pace_recorded", "Rec pace", show=False),
        Binding("R", "reset", "Reset"),
        Binding("a", "assert_consumed", "Assert"),
        Binding("l", "reload", "Reload"),
        Binding("d", "demo", "Demo"),
        Binding("o", "override", "Override"),
        Binding("right_square_bracket", "tab(1)", "Next tab", show=False),
        Binding("left_square_bracket", "tab(-1)", "Previous tab", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, options: AppOptions) -> None:
        super().__init__()
        self.options = options
        self.run_name = DEFAULT_RUN
        self.engine = ReplayEngine([], pace=options.pace, ready_dir=options.ready_dir)
        self.scenario: Scenario | None = None
        self.server: Any = None
        self.url: str | None = None
        self.load_error: ReplayError | None = None
        self.ready = asyncio.Event()
        self.watching = asyncio.Event()
        """Set once the hot-reload watch is in place."""
        self._flushed = asyncio.Event()
        self._pending: list[ev.EngineEvent] = []
        self._chunks_pending = 0
        self._last_burst = 0
        self._flush_timer: Timer | None = None
        self._stop_watch = anyio.Event()
        self._load_lock = asyncio.Lock()
        """One load at a time, so the watcher can tell a change it already loaded."""
        self._sidecar_digest: str | None = None
        """Fingerprint of the sidecar as read by the last load (before it read the scenario)."""
        self._reload_deferred = False
        self._asking_quit = False
        self._unsubscribe = self.engine.subscribe(self._on_engine_event)
        self._demo_running = False
        self._closed = False
        self._record_key: tuple[int, int] | None = None
        self._record_cache: CallRecord | None = None
        self._widgets: tuple[StatusHeader, ErrorBanner, ScriptsView, CallPane, LivePane] | None = None

    # -- layout --------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="status")
        yield ErrorBanner(id="banner")
        with Horizontal(id="main"):
            yield ScriptsView(id="scripts")
            with Vertical(id="right"):
                yield CallPane(id="call")
                yield LivePane(id="live")
        yield Footer(compact=True)

    def _parts(self) -> tuple[StatusHeader, ErrorBanner, ScriptsView, CallPane, LivePane]:
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
        self.live_pane.border_title = "Live"
        self.run_worker(self._startup(), name="startup", group="startup")

    async def _startup(self) -> None:
        await self.load(initial=True)
        if self.options.serve:
            await self._start_server()
        self.flush()
        if self.options.watch and self.options.scenario.is_dir():
            self.run_worker(self._watch(), name="watch", group="watch", exclusive=True)
        self.ready.set()

    # -- the embedded server ---------------------------------------------------------------

    async def _start_server(self) -> None:
        try:
            # The scripts route asks for the scenario on every request, so hot reloads show.
            self.server = ReplayServer(
                self.engine, host=self.options.host, port=self.options.port,
                providers=self.options.providers, scenario=lambda: self.scenario,
                reload=self.reload_from_api,
            )
            self.url = await self.server.start()
        except (OSError, ReplayError) as exc:
            self.server = None
            self.banner.show_error(
                f"Cannot serve on {self.options.host}:{self.options.port}",
                f"{exc}. Pick another port with --port (0 picks a free one).")
            return
        self.live_pane.log_event(f"serving on {self.url_label}")
        if self.options.url_file is not None:
            await self._write_url_file(self.options.url_file)
        if not is_loopback(self.options.host):
            self.live_pane.log_event(Text(f"warning: listening on {self.options.host}, not loopback: "
                                          "anyone who can reach it can drive the replay",
                                          style="bold yellow"))

    async def _write_url_file(self, path: Path) -> None:
        try:
            await asyncio.to_thread(write_atomic, path, f"{self.url}\n")
        except OSError as exc:
            self.banner.show_error(f"Cannot write the URL file {path}",
                                   f"{exc.strerror or exc}; the server runs on {self.url}. Check "
                                   "that the directory exists and is writable.")
            return
        self.live_pane.log_event(f"wrote the URL to {path}")

    @property
    def url_label(self) -> str:
        """The URL shown in the header."""
        if self.options.url_label is not None:
            return self.options.url_label
        return self.url or "not serving"

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
        names = self._names()
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
                if event.run != self.run_name:
                    line = Text.assemble(f"[run {event.run}] ", line)
                self.live_pane.log_event(line)
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
        state = self.engine.state(self.run_name)
        self.header.show(
            scenario=str(self.options.scenario), url=self.url_label, state=state,
            breakpoints=len(self.engine.breakpoints),
            paused=len(self.engine.paused_sessions(self.run_name)),
            untimed=self._untimed_logs(),
        )
        self.scripts_view.set_live(state, self.engine.breakpoints)
        self.live_pane.set_state(state, names)
        self._show_selected()

    async def next_flush(self) -> None:
        """Wait for the next repaint (tests await this instead of sleeping)."""
        await self._flushed.wait()

    def _untimed_logs(self) -> list[str]:
        """File names of the loaded logs that leave chunk times out (projected logs)."""
        if self.scenario is None:
            return []
        return [Path(s.file).name for s in self.scenario.scripts if s.untimed and s.file]

    def _names(self) -> list[str]:
        return [s.recorded_id for s in self.scenario.scripts] if self.scenario else []

    # -- selection -------------------------------------------------------------------------

    @on(CallSelected)
    def _call_selected(self, message: CallSelected) -> None:
        self._show_selected()

    def _record(self, script_index: int, call_index: int) -> CallRecord | None:
        key = (script_index, call_index)
        if key == self._record_key:
            return self._record_cache  # the journal is read again only when this call moved
        found = None
        for record in reversed(self.engine.journal(self.run_name)):
            if record.script_index == script_index and record.call_index == call_index:
                found = record
                break
        self._record_key, self._record_cache = key, found
        return found

    def _show_selected(self) -> None:
        selected = self.scripts_view.selected()
        pane = self.call_pane
        if self.scenario is None or selected is None or selected[1] is None:
            pane.show(None)
            return
        s, j = selected
        served = None
        for b in self.engine.state(self.run_name).bindings:
            if b.script_index == s and b.call_index == j:
                served = b.chunks_served
        script = self.scenario.scripts[s]
        pane.show(CallView(script, s, j, self._record(s, j), served))

    async def quit_with_verdict(self) -> None:
        """Stop serving and exit with the verdict ``dsh-replay serve`` prints (exit 3: not consumed)."""
        await self.shutdown()
        ok, lines = serve_verdict(self.engine)
        self.exit("\n".join(lines), return_code=0 if ok else EXIT_NOT_CONSUMED)

    async def shutdown(self) -> None:
        """Stop the watcher and the server (idempotent)."""
        self._stop_watch.set()
        server, self.server = self.server, None
        if server is not None:
            self.engine.cancel_all()
            await server.stop()

    async def on_unmount(self) -> None:
        self._closed = True
        self._unsubscribe()
        await self.shutdown()
