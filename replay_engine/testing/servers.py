"""The replay servers of one pytest process: an event loop on its own thread, one server per
scenario directory (started on first use, shared by every test through per-test runs), and
the two other ways a test can be served: a recorder, or a debugger in its own process.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from starlette.types import ASGIApp

from ..engine import BindMode, StepMode
from ..models import HangEntry
from ..scenario.layout import PRIMARY_NAME, SIDECAR_NAME, log_name
from ..server import ReplayServer, serve_scenario
from ..server.options import ServeOptions, serve_flags

if TYPE_CHECKING:
    from ..record import Recording, Scrubber

T = TypeVar("T")


def _nothing() -> None:
    """What wakes the loop for work queued with ``post_later`` alone."""

DEBUGGER_ENV = "DSH_REPLAY_DEBUGGER"
"""Overrides the debugger command (split like a shell would; the scenario, ``--port 0
--url-file F --verdict-file V`` and the test's flags are appended)."""


class LoopThread:
    """An asyncio event loop on a daemon thread, so sync and async tests share its servers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._later: collections.deque[Callable[[], object]] = collections.deque()
        self._thread = threading.Thread(target=self._main, name="dsh-replay-servers", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:  # the thread closes its own loop: an interrupted close() cannot leave it open
            self.loop.close()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result (its exception is raised here)."""
        if self._later:
            self.post(_nothing)
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def call(self, fn: Callable[[], T]) -> T:
        """Call ``fn`` on the loop's thread, where the engines live, and return its result
        (one wake of the loop and one wait: no task, no coroutine)."""
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def inside() -> None:
            try:
                done.set_result(fn())
            except BaseException as exc:  # raised on the caller's thread
                done.set_exception(exc)

        self.post(inside)
        return done.result()

    def post(self, fn: Callable[[], object]) -> None:
        """Queue ``fn`` on the loop's thread without waiting for it: it runs after whatever
        was queued before it, and before anything queued later (requests included)."""
        if self._later:
            self.loop.call_soon_threadsafe(self._after_later, fn)
        else:
            self.loop.call_soon_threadsafe(fn)

    def post_later(self, fn: Callable[[], object]) -> None:
        """Queue ``fn`` without waking the loop for it: it runs just before the next thing
        ``post``, ``call`` or ``run`` hand the loop (clean-up nothing waits for)."""
        self._later.append(fn)

    def _after_later(self, fn: Callable[[], object]) -> None:
        later = self._later
        while later:
            later.popleft()()
        fn()

    def close(self) -> None:
        """Stop the loop and join its thread."""
        if self.loop.is_closed() or not self._thread.is_alive():
            return
        self.post(self.loop.stop)  # after what was queued later
        self._thread.join()  # the thread closes the loop once it stops


class Hosted:
    """An async context manager held open by a task of its own until ``stop`` (anyio-safe:
    it is entered and exited by the same task)."""

    def __init__(self) -> None:
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self, manager: contextlib.AbstractAsyncContextManager[T]) -> T:
        """Enter ``manager`` in the hosting task; returns what it yields."""
        ready: asyncio.Future[T] = asyncio.get_running_loop().create_future()

        async def host() -> None:
            try:
                async with manager as value:
                    ready.set_result(value)
                    await self._stop.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                    return
                raise

        self._task = asyncio.create_task(host())
        return await ready

    async def stop(self) -> None:
        """Leave the context manager; its exit's exception is raised here."""
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        await task


def holds_scenario(directory: Path) -> bool:
    """The directory already holds a recorded scenario (a primary log of any generation, or a
    sidecar)."""
    if os.path.lexists(directory / PRIMARY_NAME) or os.path.lexists(directory / SIDECAR_NAME):
        return True
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    return any((found := log_name(name)) is not None and found.ordinal is None for name in names)


@contextlib.asynccontextmanager
async def record_into(directory: Path, upstream: str, *,
                      scrub: Scrubber | None = None) -> AsyncIterator[Recording]:
    """Record what the test's agent sends into ``directory`` (an empty attempt directory)
    through the recorder proxy; yields the recording and finishes its logs on exit."""
    from ..record import record_scenario  # loaded only by tests that record

    async with record_scenario(directory, upstream, port=0, scrub=scrub) as recording:
        yield recording


class ServerPool:
    """The servers of this process, one per scenario directory, on one background loop."""

    def __init__(self) -> None:
        self._loop: LoopThread | None = None
        self._servers: dict[tuple[Path, BindMode], tuple[ReplayServer, Hosted]] = {}
        self._hosted: list[Hosted] = []
        self._ready_files: dict[Path, bool] = {}
        self._ready_root: Path | None = None
        self.recorded: set[Path] = set()
        """Scenario directories recorded during this pytest session."""

    @property
    def loop(self) -> LoopThread:
        """The background loop (started on first use). The pool is closed at interpreter exit
        if nothing closed it before (an interrupted session, a worker stopped early), so no
        server task or loop is left for the garbage collector to complain about."""
        if self._loop is None:
            self._loop = LoopThread()
            atexit.register(self.close)
        return self._loop

    def server(self, directory: Path, bind: BindMode = "content") -> ReplayServer:
        """The started server of ``directory`` (loaded and started on first use)."""
        known = self._servers.get((directory, bind))
        if known is None:
            if self._ready_root is None:
                self._ready_root = Path(tempfile.mkdtemp(prefix="dsh-replay-ready-"))
            hosted = Hosted()
            options = ServeOptions(port=0, bind=bind, ready_dir=self._ready_root)
            server = self.loop.run(hosted.start(serve_scenario(directory, options)))
            self._hosted.append(hosted)
            known = self._servers[(directory, bind)] = (server, hosted)
            self._ready_files[directory] = any(
                isinstance(item.entry, HangEntry) and item.entry.readyFile is not None
                for script in server.engine.scripts for item in script.entries)
        return known[0]

    def has_ready_files(self, directory: Path) -> bool:
        """Whether the scenario served from ``directory`` has hang readyFiles (tests of one
        that has none need no ready directory of their own; a reload that adds some puts
        their markers in a directory of this session)."""
        return self._ready_files.get(directory, True)

    def app_at(self, host: str, port: int) -> ASGIApp | None:
        """The app of the replay server listening on ``host``:``port`` (None: none of ours)."""
        for server, _ in list(self._servers.values()):  # a client may ask from any thread
            if server.port == port and server.host == host:
                return server.app
        return None

    def start_recording(self, directory: Path, upstream: str, *,
                        scrub: Scrubber | None = None) -> tuple[Recording, Hosted]:
        """Start a recorder into ``directory``; returns the recording and the handle to stop it."""
        hosted = Hosted()
        recording = self.loop.run(hosted.start(record_into(directory, upstream, scrub=scrub)))
        return recording, hosted

    def stop_recording(self, hosted: Hosted) -> None:
        """Finish a recording's logs (its failure, if it had one, is raised here)."""
        self.loop.run(hosted.stop())

    def changed(self, directory: Path) -> None:
        """The scenario in ``directory`` was (re)written: later tests load it anew."""
        for key in [key for key in self._servers if key[0] == directory]:
            _, hosted = self._servers.pop(key)
            self._hosted.remove(hosted)
            with contextlib.suppress(Exception):
                self.loop.run(hosted.stop())

    def close(self) -> None:
        """Stop every server and the loop."""
        if self._loop is None:
            return
        hosted, self._hosted = self._hosted, []

        async def stop_all() -> None:
            for item in reversed(hosted):
                with contextlib.suppress(Exception):
                    await item.stop()

        atexit.unregister(self.close)
        try:
            self._loop.run(stop_all())
        finally:
            self._servers.clear()
            self._loop.close()
            self._loop = None
            if self._ready_root is not None:
                shutil.rmtree(self._ready_root, ignore_errors=True)
                self._ready_root = None


def open_terminal() -> IO[bytes] | None:
    """This process's controlling terminal, where the debugger runs (None: it has none, as
    under CI or a service)."""
    try:
        return open("/dev/tty", "r+b", buffering=0)
    except OSError:
        return None


def debugger_replacement() -> str:
    """The command ``$DSH_REPLAY_DEBUGGER`` puts in the debugger's place ("": none)."""
    return os.environ.get(DEBUGGER_ENV, "").strip()


def debugger_base_command() -> list[str]:
    """How to start the debugger: ``$DSH_REPLAY_DEBUGGER``, else ``dsh-replay-tui``."""
    custom = debugger_replacement()
    if custom:
        return shlex.split(custom)
    beside = Path(sys.executable).parent / "dsh-replay-tui"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("dsh-replay-tui")
    return [found] if found else [sys.executable, "-m", "dsh_replay_tui"]


def debugger_flags(mode: StepMode, breaks: Sequence[tuple[int, int]],
                   options: ServeOptions) -> list[str]:
    """The debugger's flags for a test: its start mode and breakpoints (``run`` and none are
    the debugger's defaults, left out), and the serve options the test replays with, as
    ``serve_flags`` puts them (``--strict``, ``--bind``...)."""
    flags = [] if mode == "run" else ["--mode", mode]
    for script, call in breaks:
        flags += ["--break", f"{script}:{call}"]
    return flags + serve_flags(options)


class Debugger:
    """A debugger process serving one scenario to one test, on the user's terminal."""

    def __init__(self, scenario: Path, work: Path, flags: Sequence[str] = ()) -> None:
        self.url_file = work / "debugger.url"
        self.verdict_file = work / "verdict.json"
        """Where the debugger writes the run's verdict when it is quit."""
        self.command = [*debugger_base_command(), str(scenario), "--port", "0",
                        "--url-file", str(self.url_file), "--verdict-file",
                        str(self.verdict_file), *flags]
        self._tty: IO[bytes] | None = open_terminal()  # closed by wait() / close()
        io: Any = self._tty if self._tty is not None else subprocess.DEVNULL
        self.process = subprocess.Popen(self.command, stdin=io, stdout=io, stderr=io)
        self._on_sigterm: tuple[Any, Any] | None = None  # (ours, the one it replaced)
        self._stop_with_pytest()

    def _stop_with_pytest(self) -> None:
        """A pytest that is terminated (``timeout``, a cancelled CI job: SIGTERM, which pytest
        does not handle) stops its debugger first, instead of leaving it on the terminal."""
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)
        if previous is signal.SIG_IGN or previous is None:
            return  # SIGTERM does not end this pytest: nothing to follow

        def stop(signum: int, frame: Any) -> None:
            self._forget_sigterm()
            with contextlib.suppress(OSError):  # no wait here: this may interrupt one
                self.process.terminate()
            if callable(previous):
                previous(signum, frame)
            else:  # the default: end as SIGTERM ends a process
                os.kill(os.getpid(), signum)

        signal.signal(signal.SIGTERM, stop)
        self._on_sigterm = (stop, previous)

    def wait_for_url(self, timeout: float | None = None) -> str:
        """The debugger's base URL, once its URL file appears (it writes it atomically, once
        the scenario loaded: while the user fixes one that does not, this waits; None: as
        long as the debugger runs)."""
        deadline = time.monotonic() + (timeout if timeout is not None else float("inf"))
        while True:
            if self.url_file.is_file():
                text = self.url_file.read_text(encoding="utf-8").strip()
                if text:
                    return text.rstrip("/")
            code = self.process.poll()
            if code is not None:
                said = ("what it said is on the terminal above" if self._tty is not None
                        else "it had no terminal to say why on")
                self.close()
                raise RuntimeError(
                    f"the debugger exited (status {code}) before it served the scenario ({said}); "
                    f"its command was: {shlex.join(self.command)}")
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError(
                    f"the debugger wrote no URL to {self.url_file} within {timeout:.0f} s; its "
                    f"command was: {shlex.join(self.command)}")
            time.sleep(0.05)

    def wait(self) -> int:
        """Wait until the user quits the debugger; returns its exit status."""
        try:
            return self.process.wait()
        finally:
            self._close_tty()

    def close(self) -> None:
        """Stop the debugger if it still runs."""
        self._forget_sigterm()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._close_tty()

    def _forget_sigterm(self) -> None:
        """Put back the SIGTERM handler ``_stop_with_pytest`` replaced (if still ours)."""
        if self._on_sigterm is not None:
            ours, previous = self._on_sigterm
            self._on_sigterm = None
            if signal.getsignal(signal.SIGTERM) is ours:
                signal.signal(signal.SIGTERM, previous)

    def _close_tty(self) -> None:
        if self._tty is not None:
            self._tty.close()
            self._tty = None
