"""The files of a scenario directory (SPEC section 1), free of the models.

``dsh-replay validate`` lists a scenario's logs through this without importing pydantic.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import ScenarioNotFoundError

PRIMARY_NAME = "session.jsonl"
SIDECAR_NAME = "replay.override.json"
CHILD_RE = re.compile(r"^session\.([0-9]+)\.jsonl$")


def scenario_files(path: str | Path) -> tuple[Path, Path, list[Path]]:
    """The primary log, the sidecar and the child logs (by N) a scenario directory holds."""
    root = Path(path)
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
    for entry in os.scandir(root):
        # Whatever holds a child's name is one (a directory or a dangling link fails to load
        # later, naming it): skipping it would replay fewer sessions than were recorded.
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
