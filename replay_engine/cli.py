"""The headless ``dsh-replay`` command: inspect, validate (and the subcommands other modules add).

Errors are printed as one clear paragraph on stderr with exit status 1 (2 for
usage); never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .derive import load_log
from .errors import ReplayError
from .presentation import summarize_entry
from .scenario import (
    Scenario,
    config_from_directory,
    load_child_log,
    load_scenario,
    missing_primary_error,
    read_header,
)
from .sidecar import load_sidecar, sidecar_is_bare_list

Handler = Callable[[argparse.Namespace], int]

# Modules that add subcommands: each has ``register(subparsers) -> None`` and sets
# ``handler`` on its parser with ``set_defaults``. Missing modules are skipped.
SUBCOMMAND_MODULES = (
    "replay_engine.cli_serve",
    "replay_engine.cli_override",
    "replay_engine.demo_agent",
)


def _number(value: float) -> str:
    """A JSON number as people write it: integral values without a fraction or exponent."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def render_scenario(scenario: Scenario) -> str:
    """The human ``inspect`` view."""
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
    """Every problem found in a scenario (empty when it loads and is servable).

    Each file is checked on its own so one bad file does not hide the others.
    """
    try:
        config = config_from_directory(path)
    except ReplayError as exc:
        return [exc.message]
    problems: list[str] = []
    sidecar = Path(config.overrideFile) if config.overrideFile else None
    has_sidecar = sidecar is not None and sidecar.is_file()
    replaces = sidecar is not None and has_sidecar and sidecar_is_bare_list(sidecar)
    primary = Path(config.file) if config.file else None
    derived_length: int | None = None
    if primary is not None and primary.is_file():
        try:
            if replaces:
                read_header(primary)  # a replacement never reads the primary's events
            else:
                derived_length = len(load_log(primary).entries)
        except ReplayError as exc:
            problems.append(exc.message)
    for child in config.childFiles:
        try:
            load_child_log(Path(child))
        except ReplayError as exc:
            problems.append(exc.message)
    if sidecar is not None and has_sidecar:
        try:
            load_sidecar(sidecar, derived_length=derived_length)
        except ReplayError as exc:
            problems.append(exc.message)
    if (primary is None or not primary.is_file()) and not replaces:
        problems.append(missing_primary_error(config).message)
    return problems


def _cmd_validate(args: argparse.Namespace) -> int:
    failed = 0
    for path in args.scenarios:
        problems = validate_scenario(path)
        if problems:
            failed += 1
            print(f"FAIL {path}: {len(problems)} problem(s)")
            for problem in problems:
                print("  - " + problem.replace("\n", "\n    "))
        else:
            print(f"ok   {path}")
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every available subcommand."""
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
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dsh-replay``."""
    parser = build_parser()
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


if __name__ == "__main__":
    sys.exit(main())
