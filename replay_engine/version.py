"""``--version`` for both commands: the installed distribution's version, read only when asked."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

DISTRIBUTION = "dsh-replay-tui"
"""The distribution both console scripts come from (pyproject's project name)."""


def package_version() -> str:
    """The installed version of dsh-replay (``unknown`` when running from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown (not installed)"


class VersionAction(argparse.Action):
    """``--version``: print ``PROG VERSION`` and exit 0; the metadata is read only then."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(f"{parser.prog} {package_version()}", file=sys.stdout)
        parser.exit()
