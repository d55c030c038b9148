"""The debugger's record mode (``dsh-replay-tui --record --upstream URL DIR``): the recording
proxy runs where the replay server will, each recorded call appears in Live as it ends
(grouped by session: its log, call number, key, chunks and finish), and stopping finishes the
logs so the app can load the directory as a scenario and serve it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from rich.text import Text

from replay_engine import (
    CallReport,
    InputError,
    Recording,
    ReplayError,
    record_scenario,
    recording_summary,
    report_warnings,
    shown_url,
)

from .headless.state import AppOptions

Log = Callable[[str | Text], None]


def session_label(report: CallReport) -> str:
    """How Live names the session of a recorded call."""
    return report.session if report.session is not None else "anonymous session"


def report_text(report: CallReport) -> Text:
    """One Live line per recorded call: session and log, call number, key, chunks, finish."""
    line = Text("● rec ", style="bold red")
    line.append(f"{session_label(report)} ", style="bold")
    line.append(f"{report.file} #{report.index} {report.key}: {report.chunks} chunks, ")
    if report.failed:
        line.append(f"failed upstream {report.code}: {report.message}", style="bold yellow")
    else:
        line.append(f"finish {report.finish}", style="green")
    return line


class RecordMode:
    """One recording of the debugger: started on mount, stopped by a key or by quitting."""

    def __init__(self, options: AppOptions, log: Log,
                 changed: Callable[[], None] = lambda: None) -> None:
        if options.upstream is None:
            raise ValueError("record mode needs an upstream")
        self.options = options
        self.upstream = options.upstream
        self.shown_upstream = shown_url(options.upstream)
        """The upstream as the screens show it (no credentials)."""
        self.log = log
        self.changed = changed
        """Called when what the header shows changed (a call recorded, the recording ended)."""
        self.recording: Recording | None = None
        """The recording while it runs (and after, for its summary)."""
        self.reports: dict[str, list[CallReport]] = {}
        """Recorded calls by session label, in request order."""
        self.started = asyncio.Event()
        """Set once the proxy listens (or failed to: see ``error``)."""
        self.finished = asyncio.Event()
        """Set once the logs are finished."""
        self.error: ReplayError | None = None
        """Why the recording could not start (``CannotListenError`` for a busy port)."""
        self._stop = asyncio.Event()

    @property
    def active(self) -> bool:
        """True while calls are being recorded."""
        return self.recording is not None and not self.finished.is_set()

    title: str | None = None
    """The header says ``● RECORDING → upstream``."""

    def counts(self) -> list[tuple[str, int]]:
        """Calls recorded per session, in the order sessions first called."""
        return [(label, len(reports)) for label, reports in self.reports.items()]

    @property
    def port(self) -> int | None:
        """The port the recorder listened on (the replay server takes it over)."""
        if self.recording is None:
            return None
        return self.recording.port

    def _recorded(self, report: CallReport) -> None:
        self.reports.setdefault(session_label(report), []).append(report)
        self.log(report_text(report))
        if report.problem:
            self.log(Text(f"warning: {report.problem}", style="bold yellow"))
        for warning in report_warnings(report):
            self.log(Text(f"warning: {warning}", style="bold yellow"))
        if not report.reached:
            self.log(Text(f"warning: nothing reached {self.shown_upstream}: it did not answer "
                          "(check the --upstream URL and that it is up); the call is recorded as the "
                          "502 the agent got", style="bold yellow"))
        self.changed()

    def _failed(self, error: ReplayError) -> None:
        self.log(Text(f"recording failed [{error.code}]: {error.message}", style="bold red"))

    def _file_error(self, exc: OSError) -> InputError:
        """A file of the directory that failed (e.g. keeping backups), named."""
        where = str(exc.filename or self.options.scenario)
        return InputError(f"{where}: cannot record into it ({exc.strerror or exc}); check its "
                          "permissions or pick another directory.", file=where)

    async def run(self) -> bool:
        """Record until stopped; False when the recording could not start."""
        try:
            context = record_scenario(self.options.scenario, self.upstream, host=self.options.host,
                                      port=self.options.port, force=self.options.force,
                                      listener=self._recorded, on_failure=self._failed)
            self.recording = await context.__aenter__()
        except (ReplayError, OSError) as exc:  # CannotListenError for a busy port
            self.error = exc if isinstance(exc, ReplayError) else self._file_error(exc)
            self.started.set()
            self.finished.set()
            return False
        try:
            url = self.options.url_label or self.recording.url  # a fixed label in snapshots
            self.log(Text(f"recording into {self.options.scenario} from {self.shown_upstream}",
                          style="bold red"))
            self.log(f"point the agent at {url}/v1 (Anthropic SDKs: {url}), or press d for the "
                     "demo agent; press s to stop recording and replay")
            self.started.set()
            self.changed()
            await self._stop.wait()
        finally:
            with contextlib.suppress(Exception):
                await context.__aexit__(None, None, None)
            self.finished.set()
            self.changed()
        for line in recording_summary(self.recording):
            self.log(line)
        return True

    async def stop(self) -> None:
        """Stop recording and wait until the logs are finished."""
        self._stop.set()
        if self.started.is_set():
            await self.finished.wait()

    def summary(self) -> str:
        """What quitting during a recording prints."""
        return "\n".join(recording_summary(self.recording)) if self.recording is not None else ""
