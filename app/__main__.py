"""Entry point of ``dsh-replay-tui SCENARIO``: parse arguments, run the debugger, print the verdict."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from replay_engine import (
    Pace,
    ReplayError,
    VersionAction,
    host_arg,
    load_serve_config,
    port_arg,
)

if TYPE_CHECKING:
    from .app import AppOptions


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one clear line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"dsh-replay-tui: error: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = _Parser(prog="dsh-replay-tui",
                description="Serve a recorded scenario to a live agent and debug the replay.",
                epilog="On quit (q) the assert-consumed verdict is printed, one line per run that "
                "bound a session. Exit status: 0 consumed, 3 not consumed, 1 the scenario never "
                "loaded (nothing was served), 4 the server could not listen on its port (wins "
                "over 1; both are printed), 2 bad arguments.")
    p.add_argument("--version", action=VersionAction)
    p.add_argument("scenario", help="scenario directory (holds session.jsonl; with --record, "
                   "where the recording goes)")
    p.add_argument("--port", type=port_arg, default=8765,
                   help="port to listen on (default 8765; 0 picks a free port)")
    p.add_argument("--host", default="127.0.0.1", type=host_arg,
                   help="address to listen on (default loopback)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="also answer requests whose Host or Origin names NAME (repeatable; '*' "
                   "for any); by default only loopback names and the --host address are served")
    p.add_argument("--pace-ms", type=int, default=None, metavar="N",
                   help="fixed delay before every chunk, in milliseconds")
    p.add_argument("--pace", default=None, metavar="recorded[:SPEED]",
                   help="replay the recorded gaps between chunks, optionally sped up")
    p.add_argument("--config", type=Path, default=None, metavar="FILE",
                   help="replay config, TOML or .json (providers, paceMs), as for dsh-replay serve")
    p.add_argument("--ready-dir", type=Path, default=None, metavar="DIR",
                   help="where relative hang readyFiles are created (default: a temporary "
                   "directory of the session, shown in Live and removed on quit)")
    p.add_argument("--url-file", type=Path, default=None, metavar="FILE",
                   help="write the base URL to FILE (atomically) once the server is up")
    p.add_argument("--sdk-retries", action="store_true",
                   help="let client SDKs retry error answers as with a real provider (by default "
                   "errors carry x-should-retry: false)")
    p.add_argument("--record", action="store_true",
                   help="record first: proxy the agent's calls to --upstream into SCENARIO (as "
                   "dsh-replay record does), show them as they are recorded, and on s load the "
                   "recording and serve it to replay")
    p.add_argument("--upstream", default=None, metavar="URL",
                   help="with --record: the provider's base URL, e.g. https://api.deepseek.com")
    p.add_argument("--force", action="store_true",
                   help="with --record: record into a directory that already holds a scenario, "
                   "keeping its files as .bak")
    return p


def options_from_args(args: argparse.Namespace) -> AppOptions:
    """Validate the arguments into AppOptions (raises ReplayError with the fix)."""
    from .app import AppOptions

    if not 0 <= args.port <= 65535:
        raise ReplayError(f"--port {args.port}: must be 0..65535 (0 picks a free port)", code="CONFIG")
    config = load_serve_config(args.config) if args.config is not None else None
    ms = args.pace_ms if args.pace_ms is not None else (config.paceMs if config else 0)
    if ms < 0:
        raise ReplayError(f"--pace-ms {ms}: must be a non-negative integer", code="CONFIG")
    pace = Pace.parse(args.pace, ms) if args.pace is not None else Pace("fixed", ms)
    if args.record != (args.upstream is not None):
        raise ReplayError("--record and --upstream URL go together: --record --upstream URL DIR "
                          "records into DIR from URL, then replays it", code="CONFIG")
    if args.force and not args.record:
        raise ReplayError("--force only applies to --record", code="CONFIG")
    if args.record:
        from replay_engine import check_upstream

        check_upstream(args.upstream)
    return AppOptions(
        scenario=args.scenario_path, host=args.host, port=args.port, pace=pace,
        providers=config.providers if config else None, ready_dir=args.ready_dir,
        url_file=args.url_file, sdk_retries=args.sdk_retries,
        upstream=args.upstream, force=args.force,
        allow_hosts=tuple(args.allow_host),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Start the debugger on a scenario directory; print the assert-consumed verdict on quit."""
    args = build_parser().parse_args(argv)
    args.scenario_path = Path(args.scenario)
    try:
        options = options_from_args(args)
    except ReplayError as exc:
        print(f"dsh-replay-tui: error [{exc.code}]: {exc.message}", file=sys.stderr)
        return 2
    from .app import ReplayApp

    app = ReplayApp(options)
    verdict = app.run()
    if verdict:
        print(verdict)
    return app.return_code or 0


if __name__ == "__main__":
    sys.exit(main())
