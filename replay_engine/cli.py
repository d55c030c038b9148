"""The headless ``dsh-replay`` command: inspect, validate (and the subcommands other modules add).

Errors are printed as one clear paragraph on stderr with exit status 1 (2 for
usage); never a traceback. Start-up imports only what the command given needs: the
models, the engine and the server load when a command uses them, not for ``--help``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .errors import ReplayError

if TYPE_CHECKING:
    from .scenario import Scenario

Handler = Callable[[argparse.Namespace], int]

# Modules that add subcommands: each has ``register(subparsers) -> None`` and sets
# ``handler`` on its parser with ``set_defaults``. Missing modules are skipped. The one-line
# help of each command is here too, so listing the commands imports none of them (a unit test
# keeps these lines equal to the ones the modules register).
SUBCOMMAND_MODULES: dict[str, tuple[str, str]] = {
    "serve": (
        "replay_engine.cli_serve",
        "serve a scenario to a live agent over HTTP (OpenAI/DeepSeek, native, control)",
    ),
    "override": (
        "replay_engine.cli_override",
        "patch one call of the primary script in replay.override.json",
    ),
    "record": (
        "replay_engine.record.cli",
        "record a live agent run against an upstream provider into a scenario directory",
    ),
    "demo-agent": (
        "replay_engine.demo_agent",
        "drive every recorded call of a running replay server with a small openai-SDK client",
    ),
}


def _number(value: float) -> str:
    """A JSON number as people write it: integral values without a fraction or exponent."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def render_scenario(scenario: Scenario) -> str:
    """The human ``inspect`` view."""
    from .presentation import summarize_entry

    lines: list[str] = []
    root = scenario.root or scenario.config.file or "scenario"
    lines.append(f"scenario {root}: {len(scenario.scripts)} session script(s)"
                 + (f", sidecar ({scenario.sidecar_form})" if scenario.sidecar_form else ""))
    for i, script in enumerate(scenario.scripts):
        role = "primary" if script.primary else "child"
        seed = f", seedLength {_number(script.seed_length)}" if script.seed_length else ""
        lines.append(
            f"[{i}] {role} {script.recorded_id or '(no id)'}  createdAt "
            f"{_number(script.created_at)}{seed}  file {script.file or '-'}  "
            f"calls {len(script.entries)}"
        )
        summaries = [summarize_entry(item) for item in script.entries]
        key_width = max((len(s["callKey"] or "-") for s in summaries), default=1)
        for j, s in enumerate(summaries):
            key = s["callKey"] or "-"
            lines.append(
                f"    #{j:<3} {key:<{key_width}} {s['kind']:<6} {s['origin']:<8} {s['chunks']:>5} "
                f"chunks  finish={s['finish'] or '-'}  {s['summary']}"
            )
    return "\n".join(lines)


def _cmd_inspect(args: argparse.Namespace) -> int:
    import json

    from .scenario import load_scenario

    try:
        scenario = load_scenario(args.scenario)
    except ReplayError as exc:
        if args.json:
            print(json.dumps({"ok": False, "error": exc.message}))
            return 1
        raise
    if args.json:
        print(json.dumps(scenario.to_json(), ensure_ascii=False))
    else:
        print(render_scenario(scenario))
    return 0


def validate_scenario(path: str) -> list[str]:
    """Every problem found in a scenario (empty when it loads and is servable)."""
    return check_scenario(path)[0]


def check_scenario(path: str) -> tuple[list[str], list[str]]:
    """Every problem found in a scenario, and the warnings: what the SPEC accepts but a newer
    harness refuses (a non-object line, a non-number seq or time).

    Each file is checked on its own so one bad file does not hide the others. The logs are
    checked as the loader reads them (the same errors) without keeping their chunks, and
    without the models unless a sidecar is there to validate.
    """
    import os

    from .errors import DerivationError
    from .layout import missing_primary_error, scenario_files
    from .logscan import check_log, child_unfinished_error

    try:
        primary, sidecar, children = scenario_files(path)
    except ReplayError as exc:
        return [exc.message], []
    problems: list[str] = []
    warnings: list[str] = []
    has_sidecar = sidecar.is_file()
    replaces = False
    if has_sidecar:
        from .sidecar import sidecar_is_bare_list

        replaces = sidecar_is_bare_list(sidecar)
    derived_length: int | None = None
    if os.path.lexists(primary):
        try:
            if replaces:
                from .scenario import read_header

                read_header(primary)  # a replacement never reads the primary's events
            else:
                derived_length = check_log(primary, warnings=warnings).calls
        except ReplayError as exc:
            problems.append(exc.message)
    for child in children:
        try:
            check_log(child, seed_length=True, warnings=warnings)
        except DerivationError as exc:
            unfinished = exc.code == "UNFINISHED_CALL"
            problems.append((child_unfinished_error(exc) if unfinished else exc).message)
        except ReplayError as exc:
            problems.append(exc.message)
    if has_sidecar:
        from .sidecar import load_sidecar

        try:
            load_sidecar(sidecar, derived_length=derived_length)
        except ReplayError as exc:
            problems.append(exc.message)
    if not os.path.lexists(primary) and not replaces:
        problems.append(missing_primary_error(str(primary), str(primary)).message)
    return problems, warnings


def _cmd_validate(args: argparse.Namespace) -> int:
    failed = 0
    for path in args.scenarios:
        problems, warnings = check_scenario(path)
        if problems:
            failed += 1
            print(f"FAIL {path}: {len(problems)} problem(s)")
            for problem in problems:
                print("  - " + problem.replace("\n", "\n    "))
        else:
            print(f"ok   {path}" + (f" ({len(warnings)} warning(s))" if warnings else ""))
        for warning in warnings:
            print("  warning: " + warning)
    return 1 if failed else 0


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every available subcommand.

    With ``command``, only the module of that command is imported: the others are listed by
    their help line alone (what ``--help`` shows), which keeps start-up fast.
    """
    parser = argparse.ArgumentParser(
        prog="dsh-replay",
        description="Serve, inspect and validate recorded agent-session scenarios.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    p = sub.add_parser("inspect", help="show the derived scripts of a scenario")
    p.add_argument("scenario", help="scenario directory (holds session.jsonl)")
    p.add_argument("--json", action="store_true", help="print the conformance JSON shape")
    p.set_defaults(handler=_cmd_inspect)
    p = sub.add_parser("validate", help="check scenarios without serving; lists every problem")
    p.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    p.set_defaults(handler=_cmd_validate)
    for name, (module_name, help_line) in SUBCOMMAND_MODULES.items():
        if command is not None and name != command:
            sub.add_parser(name, help=help_line, add_help=False)
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        module.register(sub)
    return parser


def _command_of(argv: Sequence[str]) -> str:
    """The subcommand named on the command line ("" when none is, e.g. for ``--help``)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dsh-replay``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_of(argv))
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except ReplayError as exc:
        print(f"dsh-replay: error [{exc.code}]: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        print(f"dsh-replay: error: {exc}", file=sys.stderr)
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
