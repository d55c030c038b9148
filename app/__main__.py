"""Entry point of ``dsh-replay-tui SCENARIO``: parse arguments, run the debugger, print the verdict."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

# The library is imported inside the functions: Ctrl+C while it loads (a second or more on a
# busy machine) is then caught by ``main`` rather than printed as a traceback.

if TYPE_CHECKING:
    from .app import AppOptions


class OutputFileError(ValueError):
    """A file the debugger writes cannot be written where it is asked to (exit 2, one line)."""


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one clear line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"dsh-replay-tui: error: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    from replay_engine import VersionAction, add_serve_arguments

    p = _Parser(prog="dsh-replay-tui",
                description="Serve a recorded scenario to a live agent and debug the replay.",
                epilog="On quit (q) the assert-consumed verdict is printed, one line per run that "
                "bound a session. Exit status: 0 consumed, 3 not consumed, 1 the scenario never "
                "loaded (nothing was served), 4 the server could not listen on its port (wins "
                "over 1; both are printed), 2 bad arguments.")
    p.add_argument("--version", action=VersionAction)
    p.add_argument("scenario", help="scenario directory (holds session.jsonl; with --record, "
                   "where the recording goes)")
    add_serve_arguments(p)
    p.add_argument("--mode", choices=("run", "call", "chunk"), default="run",
                   help="start held: call pauses every call before its first chunk, chunk before "
                   "every chunk (step with the debugger's keys); run (the default) serves freely")
    p.add_argument("--break", dest="breaks", action="append", default=[], metavar="SCRIPT:CALL",
                   type=_breakpoint, help="start with a breakpoint on that call, numbered from 0 "
                   "as the scripts pane shows (0:0 is the primary's first call); repeatable")
    p.add_argument("--verdict-file", default=None, metavar="FILE",
                   help="on quit, also write the default run's verdict as JSON to FILE "
                   "(atomically): its problems, the unconsumed ones (docs/format.md#binding) apart, "
                   "and its journal; pytest --dsh-replay-debug reads it")
    p.add_argument("--record", action="store_true",
                   help="record first: proxy the agent's calls to --upstream into SCENARIO (as "
                   "dsh-replay record does), show them as they are recorded, and on s load the "
                   "recording and serve it to replay")
    p.add_argument("--upstream", default=None, metavar="URL",
                   help="the provider's base URL, e.g. https://api.deepseek.com: with --record, "
                   "record from it first; without, serve the scenario and go live to it from a "
                   "call (L on the selected call, or --from-divergence), review, then keep or "
                   "discard")
    p.add_argument("--from-divergence", action="store_true",
                   help="with --upstream URL (no --record): each session goes live at its first "
                   "diverged call by itself")
    p.add_argument("--force", action="store_true",
                   help="with --record: record into a directory that already holds a scenario, "
                   "keeping its files as .bak.N")
    return p


def _breakpoint(text: str) -> tuple[int, int]:
    from replay_engine import parse_breakpoint

    try:
        return parse_breakpoint(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def output_file_problem(flag: str, path: Path) -> str | None:
    """Why a file the debugger writes on quit cannot be written there (checked at start, so a
    session does not end in a failed write), or None."""
    from replay_engine import output_file_problem as problem_of

    problem = problem_of(path, "verdict.json")
    return None if problem is None else f"{flag} {problem}"


def options_from_args(args: argparse.Namespace) -> AppOptions:
    """Validate the arguments into AppOptions: ``argparse.ArgumentTypeError`` for flags that
    cannot be used (exit 2), ReplayError for a file or upstream that does not work (exit 1)."""
    from replay_engine import serve_fields, serve_options

    from .app import AppOptions

    if args.record and args.upstream is None:
        raise argparse.ArgumentTypeError("--record and --upstream URL go together: --record "
                                         "--upstream URL DIR records into DIR from URL, then "
                                         "replays it")
    if args.from_divergence and (args.upstream is None or args.record):
        raise argparse.ArgumentTypeError("--from-divergence goes with --upstream URL (without "
                                         "--record): it replays DIR and goes live at each "
                                         "session's first divergence")
    if args.force and not args.record:
        raise argparse.ArgumentTypeError("--force only applies to --record")
    if args.verdict_file is not None:
        problem = output_file_problem("--verdict-file", Path(args.verdict_file))
        if problem is not None:
            raise OutputFileError(problem)
    serve = serve_options(args)
    if args.upstream is not None:
        from replay_engine import check_upstream

        check_upstream(args.upstream)
    return AppOptions(**serve_fields(serve), scenario=args.scenario_path,
                      upstream=args.upstream, force=args.force,
                      live_from=args.upstream is not None and not args.record,
                      from_divergence=args.from_divergence, mode=args.mode,
                      breaks=tuple(args.breaks))


def main(argv: Sequence[str] | None = None) -> int:
    """Start the debugger on a scenario directory; print the assert-consumed verdict on quit.
    Ctrl+C before the screen is up (the key of a running debugger) is one line, not a
    traceback."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("dsh-replay-tui: interrupted while starting; nothing was served", file=sys.stderr)
        from replay_engine import EXIT_INTERRUPTED  # the one exit status of Ctrl+C

        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    from replay_engine import (
        DEFAULT_RUN,
        EXIT_FAILED,
        EXIT_USAGE,
        ReplayError,
        atomic_write,
        run_verdict,
    )

    parser = build_parser()
    args = parser.parse_args(argv)
    args.scenario_path = Path(args.scenario)
    try:
        options = options_from_args(args)
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    except OutputFileError as exc:
        print(f"dsh-replay-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ReplayError as exc:
        print(f"dsh-replay-tui: error [{exc.code}]: {exc.message}", file=sys.stderr)
        return EXIT_FAILED
    from .app import ReplayApp

    app = ReplayApp(options)
    verdict = app.run()
    if verdict:
        print(verdict)
    if args.verdict_file:
        document = app.verdict_document or run_verdict(app.engine, DEFAULT_RUN)
        try:
            atomic_write(args.verdict_file, json.dumps(document).encode("utf-8"))
        except OSError as exc:
            print(f"dsh-replay-tui: cannot write the verdict file {args.verdict_file} "
                  f"({exc.strerror or exc})", file=sys.stderr)
            return EXIT_FAILED
    return app.return_code or 0


if __name__ == "__main__":
    sys.exit(main())
