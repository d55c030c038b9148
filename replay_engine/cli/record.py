"""``dsh-replay record``: record a live agent run into a scenario until Ctrl-C / SIGTERM.

The first stdout line is the base URL; one line per recorded call goes to stderr; on stop
the logs are finished and a summary printed. Exit status 0; 1 when the scenario will not
load as recorded (a child session's call failed upstream; the message names it), the
recording failed (a write that failed stops it at once, the error named; the logs keep every
whole call) or another recorder holds the directory; 4 when it cannot listen on its port (as
``serve`` and the debugger). The listening flags and ``--url-file`` are the serving front
ends' own (``server/options.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from ..record import CallReport, Recording, load_scrub_file, record_scenario
from ..record.summary import recording_summary, report_line, report_warnings
from ..record.writer import DEFAULT_FORMAT, FORMATS
from ..server.listen import (
    RECORDING_EXPOSES,
    add_listen_arguments,
    loopback_warning,
)
from ..server.options import add_url_file_argument
from .listening import announce, stop_on_signals

HELP = "record a live agent run against an upstream provider into a scenario directory"


def register(subparsers: Any) -> None:
    """Add the ``record`` subcommand."""
    p = subparsers.add_parser(
        "record", help=HELP,
        description="Serve the model routes on loopback and forward every call to --upstream "
        "with the client's own headers (its API key is never written), streaming the answer "
        "back as it arrives; each live session becomes a log of SCENARIO_DIR. Stop with "
        "Ctrl-C / SIGTERM. An upstream failure of the primary session is decided in "
        "replay.override.json (a throw).",
    )
    p.add_argument("scenario", metavar="SCENARIO_DIR", help="directory to write the scenario into")
    p.add_argument("--upstream", required=True, metavar="BASE_URL",
                   help="the provider's base URL, e.g. https://api.deepseek.com")
    add_listen_arguments(p, allow_hosts=False)
    add_url_file_argument(p)
    p.add_argument("--pack", action="store_true",
                   help="write runs of deltas as packed rows (smaller logs; v1 only: v4 streams "
                   "are always compact)")
    p.add_argument("--format", dest="log_format", choices=sorted(FORMATS), default=DEFAULT_FORMAT,
                   help="log generation to write: v1 (session.jsonl, session.N.jsonl; the "
                   "default) or v4 (session.v4.jsonl, session.N.v4.jsonl: one settlement event "
                   "per call, its stream as compact records)")
    p.add_argument("--scrub", default=None, metavar="FILE",
                   help="scrub what is written: a .py file defining before_record_request, "
                   "before_record_chunk and/or filter_text, or a .json / .toml file of filter_text "
                   "rules; matches become stable {{scrubbed:NAME-HASH}} tokens")
    p.add_argument("--force", action="store_true",
                   help="record into a directory holding a scenario; its files are kept as .bak.N")
    p.add_argument("--from-divergence", action="store_true",
                   help="repair the scenario SCENARIO_DIR holds: serve it, and send each session "
                   "upstream from its first call that leaves the recording; the result replaces "
                   "the rest of that session (installed on stop when every upstream call "
                   "succeeded, the old files kept as .bak.N)")
    p.add_argument("--from", dest="cuts", action="append", default=None,
                   metavar="SCRIPT:CALL",
                   help="repair DIR as --from-divergence does (it implies it), also recording "
                   "anew from this call (numbered from 0 as the debugger numbers them) even "
                   "when its request matches; repeatable")
    p.add_argument("--keep-failures", action="store_true",
                   help="with --from-divergence: install the result even when an upstream call "
                   "failed")
    p.set_defaults(handler=run_record)


async def _record(args: argparse.Namespace) -> int:
    def show(report: CallReport) -> None:
        print(report_line(report), file=sys.stderr, flush=True)
        for warning in report_warnings(report):
            print(f"dsh-replay: warning: {warning}", file=sys.stderr, flush=True)
        if report.problem:
            print(f"dsh-replay: warning: {report.problem}", file=sys.stderr, flush=True)

    scrub = load_scrub_file(args.scrub) if args.scrub else None
    with stop_on_signals() as stop:
        context = record_scenario(args.scenario, args.upstream, host=args.host,
                                  port=args.port, pack=args.pack, force=args.force,
                                  log_format=args.log_format,
                                  listener=show, on_failure=lambda _: stop.set(),
                                  scrub=scrub)
        recording: Recording = await context.__aenter__()  # CannotListenError: exit 4
        try:
            announce(recording.url, args.url_file)
            await stop.wait()
        except BaseException as exc:
            await context.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        try:
            await context.__aexit__(None, None, None)
        finally:  # the summary says what was kept, also when the recording failed
            print("\n".join(recording_summary(recording)), flush=True)
    return 1 if recording.problems else 0


def run_record(args: argparse.Namespace) -> int:
    """Handler of ``dsh-replay record`` (``--from-divergence``: ``cli.repair``)."""
    if args.from_divergence or args.cuts:
        from .repair import run_repair

        if args.force or args.pack or args.log_format != DEFAULT_FORMAT:
            print("dsh-replay: error: --from-divergence keeps each log's own format and the "
                  "scenario's files; --force, --pack and --format do not apply to it",
                  file=sys.stderr)
            return 2
        return run_repair(args)
    if args.keep_failures:
        print("dsh-replay: error: --keep-failures goes with --from-divergence (a repair installs "
              "its result only when every upstream call succeeded); a plain record keeps every "
              "call it records anyway", file=sys.stderr)
        return 2
    warning = loopback_warning(args.host, RECORDING_EXPOSES, allow_hosts=False)
    if warning is not None:
        print(f"dsh-replay: {warning}", file=sys.stderr, flush=True)
    return asyncio.run(_record(args))
