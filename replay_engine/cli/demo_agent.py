"""``dsh-replay demo-agent URL``: drive every recorded call of a running replay server.

The agent itself is ``replay_engine.testing.demo_agent``; this module only parses the command
line and turns the result into an exit status (0 consumed, 3 not, 1 server unreachable).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from ..errors import ServerUnreachableError
from ..server.guard import id_problem
from ..testing.demo_agent import DEMO_DIALECTS, run_demo_agent


def _server_url(value: str) -> str:
    """``URL``: an http(s) address (``host:port`` is taken as http), else a usage error."""
    from urllib.parse import urlsplit

    from ..testing.demo_wires import server_root

    parts = urlsplit(server_root(value))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a server URL; pass the URL `dsh-replay serve` or the debugger "
            "prints, e.g. http://127.0.0.1:8765")
    return value


def _run_name(value: str) -> str:
    """``--run``: a run id the server takes (its one id rule), else a usage error."""
    problem = id_problem("run", value)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return value


def _delay_ms(value: str) -> int:
    """``--delay-ms``: a non-negative integer, else a usage error."""
    from ..server.options import whole_number

    return whole_number(value, 0, "must be a non-negative integer", " of ms")


def _cmd_demo_agent(args: argparse.Namespace) -> int:
    def out(line: str) -> None:
        print(line, flush=True)

    try:
        result = asyncio.run(run_demo_agent(args.url, delay_ms=args.delay_ms,
                                            ready_dir=args.ready_dir, run=args.run, out=out,
                                            dialect=args.dialect))
    except ServerUnreachableError as exc:
        print(f"dsh-replay demo-agent: {exc.message}", file=sys.stderr)
        return 1
    return 0 if result.consumed else 3


def register(subparsers: Any) -> None:
    """Add ``dsh-replay demo-agent URL``."""
    p = subparsers.add_parser(
        "demo-agent",
        help="drive every recorded call of a running replay server with a small client of one wire",
        description="Play every session script of a running replay server, one session after "
                    "another through a client of one dialect (--dialect), cancelling hang "
                    "calls once they are in place. Exits 0 when the run "
                    "ends consumed, 3 when it does not, 1 when the server cannot be reached.",
    )
    p.add_argument("url", type=_server_url, help="server URL, e.g. http://127.0.0.1:8765")
    p.add_argument("--delay-ms", type=_delay_ms, default=0, metavar="N",
                   help="wait N ms between calls so the debugger's cursors can be watched")
    p.add_argument("--ready-dir", default=None, metavar="DIR",
                   help="directory the server creates hang readyFiles in (default: the path the "
                        "server reports for each hang)")
    p.add_argument("--run", type=_run_name, default=None, metavar="NAME",
                   help="use the run NAME (the /runs/NAME/ routes) instead of the default run")
    p.add_argument("--dialect", choices=DEMO_DIALECTS, default="openai",
                   help="the wire to drive: openai (chat completions, the openai SDK), "
                        "anthropic (Messages, streamed with httpx), responses (the openai SDK's "
                        "responses.stream) or gemini (streamGenerateContent with httpx); "
                        "default openai. Each works on a plain install, no extras needed")
    p.set_defaults(handler=_cmd_demo_agent)
