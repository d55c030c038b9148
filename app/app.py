"""The debugger App: the engine, the embedded server, loading and the override editor's guard,
with the keys that reach beyond the main screen (reload, demo agent, override editor, quit).

The engine is observed only through ``engine.subscribe`` (by the main screen) and driven only
through its public methods.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import anyio
from rich.text import Text
from textual import events
from textual.app import App, SystemCommand
from textual.screen import Screen

from replay_engine import (
    DEFAULT_RUN,
    EXIT_FAILED,
    LoadProgress,
    ReplayEngine,
    ReplayError,
    ReplayServer,
    Scenario,
    atomic_write,
    loopback_warning,
    run_verdict,
)

from . import keymap, stop_signals
from .demo_mode import DemoRunner
from .editor_guard import EditorGuard
from .external_editor import OpenInEditorKey
from .headless.loading import EDITOR_FIXES, NO_SIDECAR, ScenarioLoader
from .headless.pace import PACE_STEPS_MS, RECORDED_SPEEDS
from .headless.state import AppOptions, DebugState, remove_ready_files
from .headless.verdicts import QuitVerdict, quit_verdict
from .idle_gc import TICK_S, IdleCollector
from .live_from import LiveFrom, LiveFromKeys
from .record_mode import RecordMode
from .screens.dialect_choice import DemoDialect, DialectChoiceScreen
from .screens.help import HelpScreen
from .screens.main import MainScreen
from .screens.override_confirm import ConfirmDiscardScreen
from .screens.override_editor import OverrideEditorScreen
from .widgets.call_pane import CallPane
from .widgets.error_banner import ErrorBanner
from .widgets.live_pane import LivePane
from .widgets.scripts_view import ScriptsView
from .widgets.status_header import StatusHeader

__all__ = ["AppOptions", "ReplayApp"]


class ReplayApp(LiveFromKeys, OpenInEditorKey, App[str]):
    """dsh-replay-tui: serve a scenario and watch, step and steer its replay."""

    CSS_PATH = "app.tcss"
    TITLE = "dsh-replay"
    BINDINGS = keymap.bindings(keymap.APP_KEYS)
    """From the key table (dsh_replay_tui.keymap), after the main screen's keys."""

    def __init__(self, options: AppOptions) -> None:
        super().__init__()
        self.options = options
        ready_dir = options.ready_dir
        own = None if ready_dir is not None else Path(tempfile.mkdtemp(prefix="dsh-replay-tui-ready-"))
        self.state = DebugState(options, options.new_engine(ready_dir=own), own_ready_dir=own)
        self.main = MainScreen(self.state)
        self.guard = EditorGuard(lambda: self.screen_stack, self.main)
        self.loader = ScenarioLoader(self.state, self.main, self.guard, self._show_partial)
        self.server: ReplayServer | None = None
        self.ready = asyncio.Event()
        self.replay_ready = asyncio.Event()
        """Set once startup is over: the scenario loaded and served (in record mode, after the
        recording stopped), or it could not be."""
        self.first_rows = asyncio.Event()
        """Set once the scripts pane first holds rows: the primary's first calls while the
        first load still reads it (nothing is served yet), else as ``ready``."""
        self.watching = asyncio.Event()
        """Set once the hot-reload watch is in place."""
        self.awaiting_directory = asyncio.Event()
        """Set once a watch for a scenario directory that does not exist yet is in place."""
        self._stop_watch = anyio.Event()
        self.demo = DemoRunner(self.main.log_in_order)
        self._quitting = False
        self._unsignal: Callable[[], None] | None = None
        self.record: RecordMode | None = (
            RecordMode(options, self.main.log_in_order, self.main.request_flush)
            if options.upstream is not None and not options.live_from else None)
        """Record mode: the recording that runs before the scenario loads (None otherwise)."""
        self.state.recording = self.record
        self.live_from = (LiveFrom(options, self.main.log_in_order, self.main.request_flush)
                          if options.live_from else None)
        """Going live from a call (``--upstream`` without ``--record``; None otherwise)."""
        self.state.live = self.live_from
        self.collector = IdleCollector()
        self._url_file_due = False
        """The URL file waits for a scenario to load (a client told the URL earlier would be
        refused 503; pytest --dsh-replay-debug holds the test until it is written)."""
        self.loader.on_loaded = self._scenario_loaded
        self.verdict_document: dict[str, Any] | None = None
        """The default run's verdict as ``--verdict-file`` writes it, taken when quitting began
        (as the printed verdict: a call paused then is paused, not a client gone away)."""

    # -- what tests and the command line read --------------------------------------------

    @property
    def engine(self) -> ReplayEngine:
        """The replay engine (one for the app's lifetime; reloads swap its scripts)."""
        return self.state.engine

    @property
    def run_name(self) -> str:
        """The run the screens show."""
        return self.state.run_name

    @property
    def scenario(self) -> Scenario | None:
        """The scenario last loaded (None until one loads)."""
        return self.state.scenario

    @property
    def load_error(self) -> ReplayError | None:
        """Why the last load failed (None after a good load)."""
        return self.state.load_error

    @property
    def url(self) -> str | None:
        """The embedded server's base URL (None when not serving)."""
        return self.state.url

    @property
    def url_label(self) -> str:
        """The URL shown in the header."""
        return self.state.url_label

    @property
    def header(self) -> StatusHeader:
        """The header."""
        return self.main.header

    @property
    def banner(self) -> ErrorBanner:
        """The error banner."""
        return self.main.banner

    @property
    def scripts_view(self) -> ScriptsView:
        """The scripts pane."""
        return self.main.scripts_view

    @property
    def call_pane(self) -> CallPane:
        """The call pane."""
        return self.main.call_pane

    @property
    def live_pane(self) -> LivePane:
        """The live pane."""
        return self.main.live_pane

    def _show_partial(self, progress: LoadProgress | None) -> bool:
        """The first load's progress in the scripts pane (None: rows away); False unmounted."""
        if not self.main.ready_to_paint():
            return False
        self.scripts_view.show_loading(progress)
        if progress is not None and progress.primary.entries:
            self.first_rows.set()
        return True

    async def next_flush(self) -> None:
        """Wait for the next repaint (tests await this instead of sleeping)."""
        await self.main.next_flush()

    # -- start and stop --------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return self.main

    def on_mount(self) -> None:
        if not self.is_headless:  # a real terminal: kill quits as q does
            self._unsignal = stop_signals.install(
                lambda: self.run_worker(self.quit_now(), group="quit", exclusive=True))
        self.collector.start()
        self.set_interval(TICK_S, self.collector.tick, name="idle-gc")
        if self.record is None:
            self.loader.prefetch()  # reading a big scenario overlaps the screen's start
        self.run_worker(self._startup(), name="startup", group="startup")

    async def _startup(self) -> None:
        await self.main.panes_ready.wait()
        self.loader.show_progress()  # what the first load read before the panes existed
        if self.record is not None and not await self._record_first(self.record):
            self.first_rows.set()
            self.ready.set()
            self.replay_ready.set()
            return
        await self.loader.load(initial=True)
        if self.options.serve:
            await self._start_server(self.record.port if self.record is not None else None)
            if self.live_from is not None:
                self.watch_divergence()
            if self.options.from_divergence and self.server is not None \
                    and self.scenario is not None:
                assert self.live_from is not None
                self.live_from.start(self.server, self.scenario)
        self.main.flush()
        if self.options.watch and self.options.scenario.is_dir():
            self.run_worker(self.loader.watch(self._stop_watch, self.watching.set),
                            name="watch", group="watch", exclusive=True)
        elif self.options.watch and not self.options.scenario.exists():
            self.run_worker(self._await_directory(), name="watch", group="watch", exclusive=True)
        self.first_rows.set()
        self.ready.set()
        self.replay_ready.set()

    async def _await_directory(self) -> None:
        """Watch for the scenario directory to appear, load it, then watch it as usual."""
        if await self.loader.await_directory(self._stop_watch, self.awaiting_directory.set):
            await self.loader.watch(self._stop_watch, self.watching.set)

    async def _record_first(self, record: RecordMode) -> bool:
        """Record until stopped, showing each call in Live; False when the recording could
        not start or the app quit while recording (nothing is loaded then)."""
        worker = asyncio.ensure_future(record.run())
        await record.started.wait()
        if record.error is not None:
            await worker
            message = record.error.message
            self.state.record_refused = message
            self.banner.show_error("Cannot record — nothing recorded or served; q quits",
                                   message, source="record")
            self.live_pane.log_event(f"not recording: {message}")
            self.main.flush()
            return False
        assert record.recording is not None
        self.state.url = record.recording.url
        self.main.flush()
        if self.options.url_file is not None:
            await self._write_url_file(self.options.url_file)
        self.ready.set()
        if not await worker or self._quitting:
            return False
        self.state.url = None
        self.live_pane.log_event(f"recording stopped: loading {self.options.scenario} to replay")
        return True

    async def action_stop_recording(self) -> None:
        """Record mode: stop recording and load the directory as a scenario to replay."""
        if self.record is None or not self.record.active:
            self.notify("Not recording (start with --record --upstream URL DIR).",
                        severity="warning")
            return
        await self.record.stop()

    async def _start_server(self, port: int | None = None) -> None:
        try:
            # The scripts route asks for the scenario on every request, so hot reloads show.
            self.server = ReplayServer.serving(
                self.engine, self.options, scenario=lambda: self.state.scenario,
                reload=self.loader.reload_from_api, port=port)
            self.state.url = await self.server.start()
        except ReplayError as error:  # CannotListenError: the port cannot be had
            self.server = None
            where = f"{self.options.host}:{self.options.port}"
            self.state.serve_error = error.message
            self.banner.show_error(
                f"Cannot serve on {where} — nothing is served; quitting exits 4", error.message,
                source="serve")
            self.live_pane.log_event(f"not serving: {self.state.serve_error}")
            return
        self.live_pane.log_event(f"serving on {self.url_label}")
        if self.options.url_file is not None and self.state.scenario is None:
            self._url_file_due = True
            self.live_pane.log_event(f"the URL goes to {self.options.url_file} once the scenario "
                                     "loads")
        elif self.options.url_file is not None:
            await self._write_url_file(self.options.url_file)
        warning = loopback_warning(self.options.host)
        if warning is not None:
            self.live_pane.log_event(Text(warning, style="bold yellow"))

    def _scenario_loaded(self) -> None:
        """A load succeeded: write the URL file that waited for it."""
        if self._url_file_due and self.options.url_file is not None and self.url is not None:
            self._url_file_due = False
            self.run_worker(self._write_url_file(self.options.url_file), group="url-file")

    async def _write_url_file(self, path: Path) -> None:
        try:
            await asyncio.to_thread(atomic_write, path, f"{self.url}\n".encode())
        except OSError as exc:
            self.banner.show_error(f"Cannot write the URL file {path}",
                                   f"{exc.strerror or exc}; the server runs on {self.url}. Check "
                                   "that the directory exists and is writable.", source="url-file")
            return
        self.live_pane.log_event(f"wrote the URL to {path}")

    def verdict(self) -> QuitVerdict:
        """What quitting now prints, and the exit status (see ``quit_verdict``)."""
        if self.state.record_refused is not None:
            return QuitVerdict(EXIT_FAILED, [f"NOT recorded: {self.state.record_refused}"])
        return quit_verdict(self.engine, load_error=self.load_error,
                            loaded=self.scenario is not None, serve_error=self.state.serve_error)

    async def quit_with_verdict(self) -> None:
        """Stop serving and exit with the verdict: one line per run that bound a session, with
        what was in flight or aborted (exit 0 consumed, 3 not, 1 never loaded, 4 not serving)."""
        verdict = self.verdict()  # before shutdown cancels what is still in flight
        self.verdict_document = run_verdict(self.engine, DEFAULT_RUN)  # the same moment
        await self.shutdown()
        note = self.live_from.unreviewed_note() if self.live_from is not None else None
        self.exit(verdict.text + (f"\n{note}" if note else ""), return_code=verdict.code)

    async def shutdown(self) -> None:
        """Stop a recording, the watcher and the server, and remove the ready files made
        (idempotent)."""
        if self.record is not None and self.record.active:
            self._quitting = True
            await self.record.stop()
        self._stop_watch.set()
        if self.live_from is not None and self.live_from.repair is not None:
            await self.live_from.finish()  # the attempt stays beside the scenario, unreviewed
        server, self.server = self.server, None
        if server is not None:
            self.engine.cancel_all()
            await server.stop()
        await asyncio.to_thread(remove_ready_files, self.engine.created_ready_files,
                                self.state.own_ready_dir)

    async def on_unmount(self) -> None:
        if self._unsignal is not None:
            self._unsignal()
        self.collector.stop()
        await self.shutdown()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.collector.input_seen()
        await super().on_event(event)

    # -- keys beyond the main screen -------------------------------------------------------

    def action_help(self) -> None:
        """Show every key of the screen in front, by area."""
        screen = self.screen
        if isinstance(screen, HelpScreen):
            return
        keys = getattr(screen, "HELP_KEYS", None)
        if keys is None:
            keys = (keymap.LIST_KEYS + keymap.LIVE_KEYS + keymap.MAIN_KEYS + keymap.SEARCH_BAR_KEYS
                    + keymap.APP_KEYS if screen is self.main else ())
        self.push_screen(HelpScreen(screen, keys))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The palette: every action of the key table for the screen it opened over, any other
        binding of that screen, the theme, and each fixed and recorded pace."""
        yield SystemCommand("Theme", "Change the colour theme", self.action_change_theme)
        own = getattr(screen, "HELP_KEYS", None)
        tables = ([(own, screen)] if own is not None else
                  [(keymap.MAIN_KEYS, self.main), (keymap.APP_KEYS, self)])
        known = {key.action for key in keymap.TABLE}
        for keys, namespace in tables:
            for key in keys:
                if key.palette:
                    yield SystemCommand(f"{key.label} ({key.display or key.keys.split(',')[0]})",
                                        key.help, self._runner(key.action, namespace))
        for active in screen.active_bindings.values():
            binding = active.binding
            if (binding.system or binding.action in known or not binding.description
                    or keymap.textual_builtin(active.node, binding)):
                continue
            yield SystemCommand(f"{binding.description} ({self.get_key_display(binding)})",
                                binding.tooltip or binding.description,
                                self._runner(binding.action, active.node))
        if own is None:
            for run in self.state.runs():
                yield SystemCommand(f"Follow run {run}", f"Show and steer the sessions of run {run}",
                                    lambda run=run: self.main.follow_run(run))
            for ms in PACE_STEPS_MS:
                yield SystemCommand(f"Pace: fixed {ms} ms per chunk" if ms else "Pace: no delay",
                                    "Serve chunks at a fixed pace.",
                                    self._runner(f"set_pace('fixed', {ms})", self.main))
            for speed in RECORDED_SPEEDS:
                yield SystemCommand(f"Pace: recorded gaps x{speed:g}",
                                    f"Replay the recorded gaps between chunks at {speed:g} times "
                                    "their speed.", self._runner(f"set_pace('recorded', {speed})", self.main))
        yield SystemCommand("Screenshot", "Save an SVG screenshot of the screen",
                            lambda: self.set_timer(0.1, self.deliver_screenshot))

    def _runner(self, action: str, namespace: Any) -> Callable[[], Awaitable[bool]]:
        return lambda: self.run_action(action, namespace)

    def action_reload(self) -> None:
        """Reload the scenario from disk now."""
        self.run_worker(self.loader.load(), group="reload", exclusive=True)

    def action_demo(self) -> None:
        """Ask which dialect, then run the bundled demo agent against the embedded server (while
        recording: a fixed conversation through the recorder)."""
        if self.url is None:
            self.notify("The server is not running.", severity="error")
            return
        if self.demo.running:
            self.notify("The demo agent is already running.", severity="warning")
            return

        def chosen(dialect: DemoDialect | None) -> None:
            if dialect is None or self.demo.running or self.url is None:
                return
            recording = self.record is not None and self.record.active
            self.demo.running = True
            self.run_worker(self.demo.run(self.url, self.url_label, dialect,
                                          ready_dir=str(self.engine.ready_dir),
                                          recording=recording), group="demo")

        self.push_screen(DialectChoiceScreen(self.demo.dialect), chosen)

    def action_override(self) -> None:
        """Edit the override sidecar at the selected primary call, or decide the unfinished call
        of a scenario that does not load."""
        error, scenario = self.load_error, self.scenario
        if self.options.scenario.is_file():  # a persisted session: no sidecar to edit
            self.notify(NO_SIDECAR, severity="error")
            return
        if scenario is None or (error is not None and error.code in EDITOR_FIXES):
            if not self.options.scenario.is_dir():
                self.notify(f"{self.options.scenario} does not exist yet: nothing to edit.",
                            severity="error")
                return
            self.push_screen(OverrideEditorScreen.for_directory(self.options.scenario),
                             self._editor_closed)
            return
        s, j = self.scripts_view.selected() or (0, None)
        if j is None:
            self.notify("Select a call of the primary script.", severity="warning")
            return
        if not scenario.scripts[s].primary:
            self.notify("Sidecars apply to the primary session only; select a primary call.",
                        severity="warning")
            return
        self.push_screen(OverrideEditorScreen(scenario, j, self.state.chunks_served(s, j)),
                         self._editor_closed)

    def _editor_closed(self, saved: bool | None) -> None:
        """Reload once after a save (the watcher skips the write it then sees), or run a reload
        deferred while the editor had unsaved changes."""
        deferred = self.guard.take_deferred()
        if saved and not deferred:
            self.run_worker(self.loader.reload_sidecar("override saved"), group="reload")
        elif deferred:
            self.live_pane.log_event("override editor closed: running the deferred reload")
            self.run_worker(self.loader.load(), group="reload")

    async def quit_now(self) -> None:
        """Quit as ``q`` does, without asking about unsaved editor changes (on a signal there
        is no one to answer): finish a recording and print what it recorded, else the verdict."""
        if self.record is not None and self.record.active:
            self._quitting = True
            await self.record.stop()
            problems = bool(self.record.recording and self.record.recording.problems)
            await self.shutdown()
            self.exit(self.record.summary(), return_code=1 if problems else 0)
            return
        await self.quit_with_verdict()

    async def action_quit(self) -> None:
        """Quit with the verdict (while recording: finish the logs and print what was
        recorded); asks first when an override editor holds unsaved changes."""
        if self.record is not None and self.record.active:
            await self.quit_now()
            return
        editor = self.guard.open_editor()
        if editor is None or not editor.has_unsaved_changes:
            await self.quit_with_verdict()
            return
        if self.guard.asking_quit:
            return
        self.guard.asking_quit = True

        def answered(discard: bool | None) -> None:
            self.guard.asking_quit = False
            if discard:
                self.run_worker(self.quit_with_verdict(), group="quit")

        self.push_screen(ConfirmDiscardScreen(editor.sidecar_name, quitting=True), answered)
