"""The ``dsh-replay`` dispatcher: parse the command line, run one subcommand, exit cleanly.

Errors are printed as one clear paragraph on stderr with exit status 1 (2 for usage); never
a traceback. Start-up imports only the module of the command given: the others are listed by
their help line alone, so ``--help`` loads neither the models, the engine nor the server.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import CannotListenError, ReplayError
from ..version import VersionAction

Handler = Callable[[argparse.Namespace], int]
Register = Callable[[Any], None]
"""Adds one subcommand to the subparsers (its module's ``register``, which sets ``handler``)."""


def _inspect(sub: Any) -> None:
    from . import inspect
    inspect.register(sub)


def _validate(sub: Any) -> None:
    from . import validate
    validate.register(sub)


def _serve(sub: Any) -> None:
    from . import serve
    serve.register(sub)


def _override(sub: Any) -> None:
    from . import override
    override.register(sub)


def _record(sub: Any) -> None:
    from . import record
    record.register(sub)


def _diff(sub: Any) -> None:
    from . import diff
    diff.register(sub)


def _demo_agent(sub: Any) -> None:
    from . import demo_agent
    demo_agent.register(sub)


SUBCOMMAND_MODULES: dict[str, tuple[Register, str]] = {
    "inspect": (_inspect, "show the derived scripts of a scenario"),
    "validate": (_validate, "check scenarios without serving; lists every problem"),
    "serve": (
        _serve,
        "serve a scenario to a live agent over HTTP (OpenAI chat and Responses, Anthropic, native)",
    ),
    "override": (_override, "patch one call of the primary script in replay.override.json"),
    "record": (
        _record,
        "record a live agent run against an upstream provider into a scenario directory",
    ),
    "diff": (_diff, "compare two scenarios call by call (a re-recording's review)"),
    "demo-agent": (
        _demo_agent,
        "drive every recorded call of a running replay server with a small client of one wire",
    ),
}
"""Each subcommand: what registers it (a plain import of its module inside a function, so the
import graph shows every arrow yet start-up imports only the command given) and its one-line
help, kept here so listing the commands imports none of them (a unit test keeps these lines
equal to the ones the modules register)."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand.

    With ``command``, only the module of that command is imported: the others are listed by
    their help line alone (what ``--help`` shows), which keeps start-up fast.
    """
    parser = argparse.ArgumentParser(
        prog="dsh-replay",
        description="Serve, inspect and validate recorded agent-session scenarios.",
    )
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (register, help_line) in SUBCOMMAND_MODULES.items():
        if command is not None and name != command:
            sub.add_parser(name, help=help_line, add_help=False)
            continue
        register(sub)
        chosen: argparse.ArgumentParser = sub.choices[name]
        chosen.set_defaults(subparser=chosen)  # the one whose usage an unknown option shows
    return parser


def _command_of(argv: Sequence[str]) -> str:
    """The subcommand named on the command line ("" when none is, e.g. for ``--help``)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dsh-replay``: Ctrl-C at any point, start-up imports included, is one
    line and exit 130, never a traceback (``serve`` and ``record`` stop on it cleanly)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("dsh-replay: interrupted", file=sys.stderr)
        from ..presentation import EXIT_INTERRUPTED  # only now: start-up stays light

        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    for stream in (sys.stdout, sys.stderr):
        # A lone surrogate from a scenario's JSON prints as its \u escape (the same JSON).
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    parser = build_parser(_command_of(argv))
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # Said by the subcommand's parser, so the usage shown is that command's, not the list
        # of commands.
        said_by: argparse.ArgumentParser = getattr(args, "subparser", parser)
        said_by.error(f"unrecognized arguments: {' '.join(unknown)}")
    handler: Handler = args.handler
    try:
        return handler(args)
    except ReplayError as exc:
        print(f"dsh-replay: error [{exc.code}]: {exc.message}", file=sys.stderr)
        if isinstance(exc, CannotListenError):
            from ..presentation import EXIT_NOT_SERVING  # only now: start-up stays light

            return EXIT_NOT_SERVING
        return 1
    except OSError as exc:
        print(f"dsh-replay: error [IO]: {exc}", file=sys.stderr)
        return 1


def run() -> None:
    """The ``dsh-replay`` process: ``main``, then for ``validate`` an exit that skips freeing
    what the process holds (output flushed first), which is most of a short run's teardown."""
    code = main()
    if _command_of(sys.argv[1:]) == "validate":
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # the reader went away (a closed pipe): nothing left to tell
            code = code or 1
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
