"""``dsh-replay validate SCENARIO...``: check scenarios without serving; list every problem.

Exit 0 when all are valid, 1 otherwise. A path given that exists but is not a directory (a
README beside the scenarios, as ``sample_scenarios/*`` expands to) gets a ``skip`` line.
Imports nothing heavy up front: checking a log needs neither pydantic nor the engine.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

HELP = "check scenarios without serving; lists every problem"


def register(subparsers: Any) -> None:
    """Add the ``validate`` subcommand."""
    p = subparsers.add_parser(
        "validate", help=HELP,
        description="Check each SCENARIO as a load would, without serving it, and print every "
        "problem found (file, line or JSON location, and the fix) plus warning: lines for what "
        "newer harness versions refuse. Paths that are not directories are skipped with a note. "
        "Exit 0 when all are valid, 1 otherwise.")
    p.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    p.set_defaults(handler=_cmd_validate)


def _cmd_validate(args: argparse.Namespace) -> int:
    import os

    from ..errors import ReplayError
    from ..scenario.check import check_scenario
    from ..scenario.layout import scenario_layout, selection_notes
    from ..scenario.persisted import persisted_generation, persisted_notes

    failed = checked = 0
    for path in args.scenarios:
        persisted = persisted_generation(os.path.basename(path)) is not None
        if os.path.exists(path) and not os.path.isdir(path) and not persisted:
            print(f"skip {path}: not a directory")
            continue
        checked += 1
        problems, warnings = check_scenario(path)
        if problems:
            failed += 1
            print(f"FAIL {path}: {len(problems)} problem(s)")
            for problem in problems:
                print("  - " + problem.replace("\n", "\n    "))
        else:
            print(f"ok   {path}" + (f" ({len(warnings)} warning(s))" if warnings else ""))
        notes = persisted_notes(path)
        if not notes and os.path.isdir(path):
            try:
                notes = selection_notes(scenario_layout(path))
            except ReplayError:
                notes = []
        for note in notes:
            print("  " + note)
        for warning in warnings:
            print("  warning: " + warning)
    if not checked:
        print("dsh-replay: error: none of the paths given is a scenario directory",
              file=sys.stderr)
        return 1
    return 1 if failed else 0
