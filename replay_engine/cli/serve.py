"""``dsh-replay serve``: serve a scenario over HTTP until Ctrl-C / SIGTERM, then give the verdict.

The first stdout line is the base URL; one line per call goes to stderr; on
shutdown the assert-consumed verdict is printed and the exit status is 0 when
every script was consumed, 3 when not.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..engine import DEFAULT_RUN, ReplayEngine
from ..engine import events as ev
from ..presentation import EXIT_NOT_CONSUMED, verdict
from ..safe_text import printable
from ..scenario.loading import Scenario, load_scenario
from ..server import ReplayServer
from ..server.listen import loopback_warning
from ..server.options import ServeOptions, add_serve_arguments, serve_options
from ..server.runner import reload_scenario
from .listening import announce, stop_on_signals

RETRY_MARK = " [SDK retry]"
"""Appended to the log line of a request a client library sent again on its own."""


def register(subparsers: Any) -> None:
    """Add the ``serve`` subcommand."""
    p = subparsers.add_parser(
        "serve",
        help="serve a scenario to a live agent over HTTP (OpenAI chat and Responses, Anthropic, native)",
        description="Serve SCENARIO until Ctrl-C / SIGTERM. Prints the base URL first, one line "
        "per call on stderr, and the assert-consumed verdict at the end (exit 0 consumed, 3 not).",
    )
    p.add_argument("scenario", metavar="SCENARIO", help="scenario directory (holds session.jsonl)")
    add_serve_arguments(p)
    p.set_defaults(handler=run_serve, parser=p)


def call_logger(engine: ReplayEngine) -> Callable[[ev.EngineEvent], None]:
    """An observer printing one stderr line per call outcome."""

    def where(run: str, session: str | None, script: int, call: int) -> str:
        prefix = f"[run {run}] " if run != DEFAULT_RUN else ""
        scripts = engine.scripts
        total = len(scripts[script].entries) if script < len(scripts) else 0
        name = "anonymous" if session is None else session
        # numbered from 0, as the debugger and the verdict number calls
        return printable(f"{prefix}session {name} script {script} call #{call} of {total}")

    retries: set[int] = set()

    def log(event: ev.EngineEvent) -> None:
        line: str | None = None
        if isinstance(event, ev.CallStarted):
            if event.retry:
                retries.add(event.call_id)
            return
        if isinstance(event, ev.CallFinished):
            line = f"{where(event.run, event.session, event.script_index, event.call_index)}: " \
                   f"finished ({event.chunks} chunks)"
        elif isinstance(event, ev.CallFailed):
            line = f"{where(event.run, event.session, event.script_index, event.call_index)}: " \
                   f"failed {event.code}: {event.message}"
        elif isinstance(event, ev.CallCancelled):
            line = f"{where(event.run, event.session, event.script_index, event.call_index)}: " \
                   "cancelled"
        elif isinstance(event, ev.HangWaiting):
            line = f"{where(event.run, event.session, event.script_index, event.call_index)}: " \
                   "hanging until cancelled" + (f" (readyFile {event.ready_file})"
                                                if event.ready_file else "")
        elif isinstance(event, ev.BindingFailed):
            prefix = f"[run {event.run}] " if event.run != DEFAULT_RUN else ""
            line = f"{prefix}refused {event.code}: {event.message}"
            if event.retry:
                line += RETRY_MARK
        if line is not None:
            call_id = getattr(event, "call_id", None)
            if call_id in retries:
                line += RETRY_MARK
                if not isinstance(event, ev.HangWaiting):
                    retries.discard(call_id)
            print(printable(line), file=sys.stderr, flush=True)

    return log


async def _serve(args: argparse.Namespace, options: ServeOptions, scenario: Scenario) -> int:
    ready_dir = options.ready_dir
    own_ready_dir: Path | None = None
    if ready_dir is None:
        # Hang markers of a serve without --ready-dir go to a directory of its own, removed at
        # exit, never the current directory (the hang's log line names each marker).
        own_ready_dir = ready_dir = Path(tempfile.mkdtemp(prefix="dsh-replay-ready-"))
    try:
        return await _serve_from(args, options, scenario, ready_dir)
    finally:
        if own_ready_dir is not None:
            shutil.rmtree(own_ready_dir, ignore_errors=True)


async def _serve_from(args: argparse.Namespace, options: ServeOptions, scenario: Scenario,
                      ready_dir: Path) -> int:
    engine = options.new_engine(scenario.scripts, ready_dir=ready_dir)
    engine.subscribe(call_logger(engine), chunks=False)
    path = args.scenario

    async def reload() -> Scenario:
        fresh = await reload_scenario(path, engine)
        print_warnings(fresh)
        gc.freeze()  # as after the first load: keep the new scripts out of full collections
        return fresh

    server = ReplayServer.serving(engine, options, scenario=scenario, reload=reload)
    url = await server.start()  # CannotListenError: exit 4
    with stop_on_signals() as stop:
        try:
            announce(url, options.url_file)
            await stop.wait()
        finally:
            await server.stop()
    ok, lines = verdict(engine)
    print("\n".join(lines), flush=True)
    return 0 if ok else EXIT_NOT_CONSUMED


def run_serve(args: argparse.Namespace) -> int:
    """Handler of ``dsh-replay serve``."""
    try:
        options = serve_options(args)
    except argparse.ArgumentTypeError as exc:
        args.parser.error(str(exc))
    scenario = load_scenario(args.scenario)
    print_warnings(scenario)
    # The loaded scripts live as long as the process: keep the collector from rescanning
    # them, which would stall every stream of a large scenario for tens of milliseconds.
    gc.freeze()
    warning = loopback_warning(options.host)
    if warning is not None:
        print(f"dsh-replay: {warning}", file=sys.stderr, flush=True)
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(_serve(args, options, scenario))


def print_warnings(scenario: Scenario) -> None:
    """What was wrong but could be read (a torn last zstd frame: file and byte), one
    ``warning:`` line each on stderr, as ``validate``, ``inspect`` and the debugger say it."""
    for warning in scenario.warnings:
        print(printable(f"warning: {warning}"), file=sys.stderr, flush=True)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop when installed (it roughly doubles uvicorn's throughput), else asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory
