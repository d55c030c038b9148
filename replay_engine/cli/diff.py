"""``dsh-replay diff OLD NEW`` / ``dsh-replay diff DIR --git REV``: review a re-recording.

Compares two scenarios script by script and call by call (``replay_engine.review``): exit 0
when every call is the same, 1 when any differs, 2 when a scenario does not load (named).
``--git REV`` compares the scenario as committed at REV with the working tree.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..errors import InputError, ReplayError

HELP = "compare two scenarios call by call (a re-recording's review)"
EXIT_SAME, EXIT_DIFFERS, EXIT_ERROR = 0, 1, 2


def register(subparsers: Any) -> None:
    """Add the ``diff`` subcommand."""
    p = subparsers.add_parser(
        "diff", help=HELP,
        description="Compare two scenarios script by script (in bind order) and call by call: "
        "same, changed (saying what: text, reasoning, tool calls, finish, usage, kind, the "
        "recorded request before the call; usage-only and timing-only changes marked), added, "
        "removed. Scenarios compare by their loaded calls, never by bytes. Exit 0 when every "
        "call is the same, 1 when any differs, 2 when a scenario does not load.")
    p.add_argument("old", metavar="OLD", help="the scenario before (or DIR with --git)")
    p.add_argument("new", metavar="NEW", nargs="?", default=None, help="the scenario after")
    p.add_argument("--git", metavar="REV", default=None,
                   help="compare DIR as committed at REV (e.g. HEAD) with the working tree")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(handler=run_diff)


def _load(path: Path, shown: str) -> Any:
    from ..scenario.loading import load_scenario

    if not path.is_dir():
        raise InputError(f"{shown}: not a scenario directory")
    try:
        return load_scenario(path)
    except ReplayError as exc:
        raise InputError(f"{shown} does not load: [{exc.code}] {exc.message}",
                        code=exc.code) from None


def _git(cwd: Path, rev: str, *args: str) -> bytes:
    """The output of ``git ARGS`` run in ``cwd``; a failure names the directory, REV and what
    git said, and the fix."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"{cwd}: cannot run git to read it at {rev} ({exc}); install git "
                         "or compare two directories (OLD NEW)") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise InputError(f"{cwd}: cannot read it as committed at {rev} (git: "
                         f"{said[0] if said else f'exit {done.returncode}'}); give a revision "
                         "that exists (e.g. HEAD) of the git work tree that holds it")
    return done.stdout


def committed_copy(directory: Path, rev: str, into: Path) -> Path:
    """Write the scenario files of ``directory`` as committed at ``rev`` into ``into``."""
    from ..scenario.layout import is_scenario_file

    if not directory.is_dir():
        raise InputError(f"{directory}: not a scenario directory")
    if not rev or rev.startswith("-"):  # never an option of git's
        raise InputError(f"--git {rev!r}: not a revision; give a commit, branch or tag "
                         "(e.g. HEAD)")
    listed = _git(directory, rev, "ls-tree", "--name-only", "--full-name", rev, "--", ".")
    names = [line for line in listed.decode("utf-8").splitlines() if line]
    wanted = [n for n in names if is_scenario_file(n.rsplit("/", 1)[-1])]
    if not wanted:
        raise InputError(f"{directory} holds no scenario file at {rev}")
    for name in wanted:
        (into / name.rsplit("/", 1)[-1]).write_bytes(_git(directory, rev, "show", f"{rev}:{name}"))
    return into


def run_diff(args: argparse.Namespace) -> int:
    """Handler of ``dsh-replay diff``."""
    from ..review import diff_scenarios

    try:
        with tempfile.TemporaryDirectory(prefix="dsh-replay-diff-") as tmp:
            if args.git is not None:
                if args.new is not None:
                    raise InputError("give one scenario directory with --git (it is compared "
                                    "with itself as committed at REV)")
                directory = Path(args.old)
                old = _load(committed_copy(directory, args.git, Path(tmp)),
                            f"{args.old} at {args.git}")
                new = _load(directory, args.old)
            else:
                if args.new is None:
                    raise InputError("give two scenario directories (OLD NEW), or one with "
                                    "--git REV")
                old, new = _load(Path(args.old), args.old), _load(Path(args.new), args.new)
            result = diff_scenarios(old, new)
    except ReplayError as exc:
        if args.json:  # as ``inspect --json``: the error is JSON on stdout too
            print(json.dumps(exc.to_json()))
        else:
            print(f"dsh-replay: diff: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
    else:
        print("\n".join(result.lines()))
    return EXIT_SAME if result.same else EXIT_DIFFERS
