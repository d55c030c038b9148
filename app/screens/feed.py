"""The engine's events, buffered and applied to a screen at a bounded rate: a flood of chunks
coalesces into one repaint, and the event log gets one line per event (the newest of a flood,
the rest counted).

The engine is observed only through ``engine.subscribe``."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from rich.text import Text
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.timer import Timer

from replay_engine import ReplayEngine
from replay_engine import events as ev

from ..headless.eventlog import format_event

FLUSH_S = 1 / 30
"""Engine events are applied to the screen at most this often (chunk floods coalesce)."""
BUSY_FLUSH_S = 1 / 5
"""The repaint period while a flood is streaming (more than BUSY_EVENTS events per repaint):
each repaint of a busy screen holds the loop for a while, and keys come first."""
BUSY_EVENTS = 500
INPUT_QUIET_S = 0.15
"""While keys arrive on a busy screen, its repaint waits this long after the last one (keys
come first); never longer than INPUT_WAIT_MAX_S in all."""
INPUT_WAIT_MAX_S = 0.5
MAX_LOG_EVENTS = 40
"""Event-log lines written per repaint; older events of a flood are only counted."""


class FeedScreen(Screen[None]):
    """A screen repainted from engine events: subclasses say how to log a line (``log_line``),
    which run they follow (``followed_run``), the names of the scripts (``script_names``) and how
    to repaint (``paint``)."""

    def __init__(self, engine: ReplayEngine) -> None:
        super().__init__()
        self._flushed = asyncio.Event()
        self._pending: list[ev.EngineEvent] = []
        self._chunks_pending = 0
        self._last_burst = 0
        self._flush_timer: Timer | None = None
        self._closed = False
        self._input_at = 0.0
        self._waited = 0.0
        self._unsubscribe = engine.subscribe(self._on_engine_event)

    # -- what subclasses provide ------------------------------------------------------------

    def log_line(self, line: str | Text, *, key: object = None) -> None:
        """Append a line to the event log (``key``: replace the newest line when it has it)."""
        raise NotImplementedError

    def log_lines(self, lines: list[tuple[str | Text, object]]) -> None:
        """Append lines (each with its key, as ``log_line``) in one repaint."""
        raise NotImplementedError

    def followed_run(self) -> str:
        """The run the screen shows."""
        raise NotImplementedError

    def script_names(self) -> list[str]:
        """The recorded session id of each script."""
        raise NotImplementedError

    def ready_to_paint(self) -> bool:
        """Whether the widgets exist (not before mount, not while shutting down)."""
        raise NotImplementedError

    def paint(self, names: list[str], events: list[ev.EngineEvent]) -> None:
        """Repaint from the engine's state (``events``: those applied now)."""
        raise NotImplementedError

    def forget_record(self, event: ev.EngineEvent) -> None:
        """An event arrived: drop what was cached about the call it moved."""

    # -- the feed ---------------------------------------------------------------------------

    def on_unmount(self) -> None:
        self._closed = True
        self._unsubscribe()

    def _on_engine_event(self, event: ev.EngineEvent) -> None:
        # Called for every chunk of every session: the common case first, and cheap.
        if type(event) is ev.ChunkServed:
            self._chunks_pending += 1
            if self._flush_timer is not None:
                return
        else:
            self._pending.append(event)
            self.forget_record(event)
        self.request_flush()

    def request_flush(self) -> None:
        """Schedule a repaint from the engine's state (at most every FLUSH_S)."""
        if self._flush_timer is None and self.is_running:
            delay = BUSY_FLUSH_S if self._busy else FLUSH_S
            self._flush_timer = self.set_timer(delay, self._flush_when_quiet, name="flush")

    @property
    def _busy(self) -> bool:
        return self._last_burst > BUSY_EVENTS

    def input_seen(self) -> None:
        """The user pressed a key that moved the screen: a busy repaint waits a little."""
        self._input_at = time.monotonic()

    def _flush_when_quiet(self) -> None:
        self._flush_timer = None
        quiet = time.monotonic() - self._input_at
        if self._busy and quiet < INPUT_QUIET_S and self._waited < INPUT_WAIT_MAX_S \
                and self.is_running:
            wait = INPUT_QUIET_S - quiet
            self._waited += wait
            self._flush_timer = self.set_timer(wait, self._flush_when_quiet, name="flush")
            return
        self.flush()

    def flush(self) -> None:
        """Apply buffered events: log lines, then the repaint."""
        self._waited = 0.0
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        if self._closed or not self.ready_to_paint():
            return  # not mounted yet, or shutting down
        events, self._pending = self._pending, []
        self._last_burst = self._chunks_pending + len(events)
        self._chunks_pending = 0
        names = self.script_names()
        shown = events
        lines: list[tuple[str | Text, object]] = []
        if len(events) > MAX_LOG_EVENTS:
            # A flood (many sessions at full speed): count what is skipped, show the newest.
            skipped = Counter(type(e).__name__ for e in events[:-MAX_LOG_EVENTS])
            lines.append((Text("… " + ", ".join(f"{n} {name}" for name, n in skipped.items()),
                               style="dim"), None))
            shown = events[-MAX_LOG_EVENTS:]
        run = self.followed_run()
        for event in shown:
            if isinstance(event, ev.ScriptsReloaded):
                continue  # the loader logs what changed
            line = format_event(event, names)
            if line is not None:
                if event.run != run:
                    line = Text.assemble(f"[run {event.run}] ", line)
                # Stepping chunk by chunk pauses before every chunk: one line per call, updated;
                # settings changed in a row (+ + +, breakpoints dropped at start) read as one.
                key: object = (("paused", event.run, event.session, event.call_index)
                               if isinstance(event, ev.CallPaused) else
                               ("settings", event.run)
                               if isinstance(event, ev.SettingsChanged) else None)
                lines.append((line, key))
        if lines:
            self.log_lines(lines)
        try:
            self.paint(names, events)
        except NoMatches:
            return  # the screen's widgets only go away while the app shuts down
        waiters, self._flushed = self._flushed, asyncio.Event()
        waiters.set()

    def log_in_order(self, line: str | Text) -> None:
        """Log a line after the engine events still buffered, so the event log reads in order."""
        if self._pending:
            self.flush()
        self.log_line(line)

    async def next_flush(self) -> None:
        """Wait for the next repaint (tests await this instead of sleeping)."""
        await self._flushed.wait()
