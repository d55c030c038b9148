"""``dsh-replay serve``: serve a scenario over HTTP until Ctrl-C / SIGTERM, then give the verdict.

The first stdout line is the base URL; one line per call goes to stderr; on
shutdown the assert-consumed verdict is printed and the exit status is 0 when
every script was consumed, 3 when not.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import signal
import sys
from collections.abc import Callable
from typing import Any

from ..engine import DEFAULT_RUN, Pace, ReplayEngine
from ..engine import events as ev
from ..engine.state import DEFAULT_JOURNAL_LIMIT
from ..errors import ConfigError
from ..files import atomic_write
from ..models import ReplayConfig
from ..presentation import EXIT_NOT_CONSUMED, verdict
from ..safe_text import printable
from ..scenario.config import load_serve_config
from ..scenario.loading import Scenario, load_scenario
from ..server import ReplayServer, is_loopback
from ..server.listen import host_arg, port_arg

RETRY_MARK = " [SDK retry]"
"""Appended to the log line of a request a client library sent again on its own."""
DEFAULT_PORT = 8765


def register(subparsers: Any) -> None:
    """Add the ``serve`` subcommand."""
    p = subparsers.add_parser(
        "serve",
        help="serve a scenario to a live agent over HTTP (OpenAI chat and Responses, Anthropic, native)",
        description="Serve SCENARIO until Ctrl-C / SIGTERM. Prints the base URL first, one line "
        "per call on stderr, and the assert-consumed verdict at the end (exit 0 consumed, 3 not).",
    )
    p.add_argument("scenario", metavar="SCENARIO", help="scenario directory (holds session.jsonl)")
    p.add_argument("--host", default="127.0.0.1", type=host_arg,
                   help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=port_arg, default=DEFAULT_PORT,
                   help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="also answer requests whose Host or Origin names NAME (repeatable; '*' "
                   "for any); by default only loopback names and the --host address are served")
    p.add_argument("--pace-ms", type=int, default=None, metavar="N",
                   help="wait N ms before every chunk (default: the config's paceMs, else 0)")
    p.add_argument("--pace", default=None, metavar="recorded[:SPEED]",
                   help="replay the recorded gaps between chunks, scaled by SPEED (capped at 5 s)")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="TOML or JSON with the provider catalog (providers) and paceMs")
    p.add_argument("--ready-dir", default=None, metavar="DIR",
                   help="where relative readyFile paths of hang entries resolve (default: cwd)")
    p.add_argument("--url-file", default=None, metavar="FILE",
                   help="also write the base URL to FILE (atomically)")
    p.add_argument("--journal-limit", type=int, default=DEFAULT_JOURNAL_LIMIT, metavar="N",
                   help="calls each run's journal keeps; older ones are dropped (default "
                   f"{DEFAULT_JOURNAL_LIMIT})")
    p.add_argument("--sdk-retries", action="store_true",
                   help="let client SDKs retry error answers as with a real provider (by default "
                   "errors carry x-should-retry: false, so a retry cannot consume the next call)")
    p.set_defaults(handler=run_serve)


def call_logger(engine: ReplayEngine) -> Callable[[ev.EngineEvent], None]:
    """An observer printing one stderr line per call outcome."""

    def where(run: str, session: str | None, script: int, call: int) -> str:
        prefix = f"[run {run}] " if run != DEFAULT_RUN else ""
        scripts = engine.scripts
        total = len(scripts[script].entries) if script < len(scripts) else 0
        name = "anonymous" if session is None else session
        return printable(f"{prefix}session {name} script {script} call {call + 1}/{total}")

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


async def _serve(args: argparse.Namespace, scenario: Scenario, pace: Pace,
                 config: ReplayConfig | None) -> int:
    engine = ReplayEngine(scenario.scripts, pace.ms, pace=pace, ready_dir=args.ready_dir,
                          journal_limit=args.journal_limit)
    engine.subscribe(call_logger(engine), chunks=False)
    path = args.scenario

    def reload() -> Scenario:
        fresh = load_scenario(path)
        engine.reload(fresh.scripts)
        return fresh

    server = ReplayServer(engine, host=args.host, port=args.port,
                          providers=config.providers if config else None,
                          scenario=scenario, reload=reload, sdk_retries=args.sdk_retries,
                          allow_hosts=args.allow_host)
    try:
        url = await server.start()
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port} ({exc.strerror}); pick "
                          "another --port (0 picks a free one).") from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        if args.url_file:
            atomic_write(args.url_file, (url + "\n").encode("utf-8"))
        print(url, flush=True)
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await server.stop()
    ok, lines = verdict(engine)
    print("\n".join(lines), flush=True)
    return 0 if ok else EXIT_NOT_CONSUMED


def run_serve(args: argparse.Namespace) -> int:
    """Handler of ``dsh-replay serve``."""
    config = load_serve_config(args.config) if args.config else None
    pace_ms = args.pace_ms if args.pace_ms is not None else (config.paceMs if config else 0)
    if pace_ms < 0:
        raise ConfigError(f"--pace-ms {pace_ms}: must be a non-negative integer")
    pace = Pace.parse(args.pace, pace_ms) if args.pace else Pace("fixed", pace_ms)
    scenario = load_scenario(args.scenario)
    # The loaded scripts live as long as the process: keep the collector from rescanning
    # them, which would stall every stream of a large scenario for tens of milliseconds.
    gc.freeze()
    if not is_loopback(args.host):
        print(f"dsh-replay: warning: listening on {args.host}, not loopback: anyone who can reach "
              "this address can drive the replay and read the recorded sessions. Requests are "
              "answered only when their Host names a loopback address or this --host; add "
              "--allow-host NAME for the names clients use to reach it.",
              file=sys.stderr, flush=True)
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(_serve(args, scenario, pace, config))


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop when installed (it roughly doubles uvicorn's throughput), else asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory
