"""Stands in for ``dsh-replay-tui`` under ``--dsh-replay-debug`` where no terminal is.

It takes the debugger's arguments (``SCENARIO --port 0 --url-file F --verdict-file V`` and
the ``--mode``, ``--break``, ``--strict``, ``--bind`` and ``--ready-dir`` the plugin passes),
writes them to ``$STANDIN_ARGV``, serves the scenario with the same engine settings, and on SIGINT (the
user's quit) writes the verdict file and prints the verdict, as the debugger does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from replay_engine import (
    DEFAULT_RUN,
    ReplayEngine,
    ReplayServer,
    atomic_write,
    load_scenario,
    parse_breakpoint,
    run_verdict,
)


def main(argv: list[str]) -> int:
    if os.environ.get("STANDIN_ARGV"):
        Path(os.environ["STANDIN_ARGV"]).write_text(json.dumps(argv))
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--url-file")
    parser.add_argument("--verdict-file")
    parser.add_argument("--mode", default="run")
    parser.add_argument("--break", dest="breaks", action="append", default=[],
                        type=parse_breakpoint)
    parser.add_argument("--strict", action="store_true")
    parser.add_argument("--bind", default="content")
    parser.add_argument("--ready-dir", default=None)
    return asyncio.run(serve(parser.parse_args(argv)))


async def serve(args: argparse.Namespace) -> int:
    engine = ReplayEngine(load_scenario(args.scenario).scripts, strict=args.strict,
                          bind=args.bind, ready_dir=args.ready_dir)
    engine.set_mode(args.mode)
    for script, call in args.breaks:
        engine.toggle_breakpoint(script, call)
    quit_asked = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, quit_asked.set)
    async with ReplayServer(engine, port=args.port) as server:
        atomic_write(args.url_file, f"{server.url}\n".encode())
        await quit_asked.wait()
        document = run_verdict(engine, DEFAULT_RUN)
    atomic_write(args.verdict_file, json.dumps(document).encode())
    problems = document["problems"]
    print("run default: " + ("consumed" if not problems else "; ".join(problems)))
    return 3 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
