"""The files of a scenario directory (SPEC section 1), free of the models.

``dsh-replay validate`` lists a scenario's logs through this without importing pydantic.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from ..errors import ScenarioNotFoundError

PRIMARY_NAME = "session.jsonl"
SIDECAR_NAME = "replay.override.json"
CHILD_RE = re.compile(r"^session\.([0-9]+)\.jsonl$")


def scenario_files(path: str | Path) -> tuple[Path, Path, list[Path]]:
    """The primary log, the sidecar and the child logs (by N) a scenario directory holds."""
    root = Path(path)
    kind = not_a_file(root)
    if kind is not None and kind.startswith(("a symbolic link", "not readable")):
        raise ScenarioNotFoundError(
            f"{root}: the scenario path is {kind}; pass a directory holding session.jsonl.",
            file=str(root),
        )
    if not root.exists():
        raise ScenarioNotFoundError(
            f"{root}: no such scenario directory; pass a directory holding session.jsonl.",
            file=str(root),
        )
    if not root.is_dir():
        raise ScenarioNotFoundError(
            f"{root}: not a directory; pass the scenario directory that holds session.jsonl.",
            file=str(root),
        )
    children: list[tuple[int, str]] = []
    try:
        entries = list(os.scandir(root))
    except OSError as exc:
        raise ScenarioNotFoundError(
            f"{root}: cannot list the scenario directory ({exc.strerror or exc}); make it "
            "readable (and searchable) by this user.",
            file=str(root),
        ) from None
    for entry in entries:
        # Whatever holds a child's name is one (a directory, FIFO or dangling link fails to
        # load later, naming it): skipping it would replay fewer sessions than were recorded.
        match = CHILD_RE.match(entry.name)
        if match:
            children.append((int(match.group(1)), entry.path))
    children.sort()
    return root / PRIMARY_NAME, root / SIDECAR_NAME, [Path(p) for _, p in children]


def missing_primary_error(file: str | None, where: str) -> ScenarioNotFoundError:
    """The primary log is absent and no bare-list sidecar replaces its script."""
    return ScenarioNotFoundError(
        f"{where}: the primary session log is missing; record the scenario "
        f"({PRIMARY_NAME}) or supply a bare-list {SIDECAR_NAME} that replaces its script.",
        file=file,
    )


def not_a_file(path: str | Path) -> str | None:
    """Why ``path`` cannot be read as a file (a directory, FIFO, device, symlink loop, dangling
    link), or None when it is a regular file or absent. Stats only: a FIFO is never opened."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            return f"a symbolic link to {os.readlink(path)!r}, which does not exist"
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop"
        return f"not readable ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory, not a file"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a file"
    return "not a regular file"


def child_log_name(ordinal: int) -> str:
    """The file name of child log ``ordinal`` (1, 2, ...)."""
    return f"session.{ordinal}.jsonl"


def is_scenario_file(name: str) -> bool:
    """Whether a file of this name is part of a scenario (a log or the sidecar)."""
    return name in (PRIMARY_NAME, SIDECAR_NAME) or CHILD_RE.match(name) is not None
