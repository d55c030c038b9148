"""The files of a scenario directory (docs/format.md#scenario-directory), free of the models.

``dsh-replay validate`` lists a scenario's logs through this without importing pydantic.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LogParseError, ScenarioNotFoundError
from ..jsonnumbers import as_safe_integer, is_number

PRIMARY_NAME = "session.jsonl"
SIDECAR_NAME = "replay.override.json"


LOG_NAME_RE = re.compile(r"^session(?:\.([0-9]+))?(?:\.v([1-9][0-9]*))?\.jsonl$")
"""A log name of any generation (docs/format.md#generation-selection): ``session[.N][.vK].jsonl``."""


@dataclass(frozen=True, slots=True)
class LogName:
    """What a log's file name says: its role (None = primary, else the child ordinal) and its
    format generation (0 = a legacy v0/v1 log named without ``.vK``)."""

    ordinal: int | None
    generation: int


def log_name(name: str) -> LogName | None:
    """The role and generation a file name gives, or None when it is no log name."""
    match = LOG_NAME_RE.match(name)
    if match is None:
        return None
    ordinal, generation = match.groups()
    return LogName(int(ordinal) if ordinal is not None else None,
                   int(generation) if generation is not None else 0)


def generation_of(path: str | Path) -> int:
    """The format generation a log's file name gives (0 for a legacy name or any other; a
    persisted ``.jsonl.zstd`` session's name counts as its log's)."""
    found = log_name(Path(path).name.removesuffix(".zstd"))
    return found.generation if found is not None else 0


@dataclass(slots=True)
class ScenarioLayout:
    """The logs a scenario directory holds, selected as docs/format.md#scenario-directory and
    docs/format.md#generation-selection say."""

    root: Path
    primary: Path
    """The primary log (it may not exist: then only a bare-list sidecar can stand for it)."""
    sidecar: Path
    children: list[Path]
    """Child logs by ordinal (numeric, then by name)."""
    by_generation: bool = False
    """Some log name carries ``.vK``: each role's highest generation is its log."""
    ignored: list[Path] = field(default_factory=list)
    """Older generations of a role, present and never read."""


def scenario_layout(path: str | Path) -> ScenarioLayout:
    """The primary log, the sidecar and the child logs a scenario directory holds."""
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
    try:
        entries = list(os.scandir(root))
    except OSError as exc:
        raise ScenarioNotFoundError(
            f"{root}: cannot list the scenario directory ({exc.strerror or exc}); make it "
            "readable (and searchable) by this user.",
            file=str(root),
        ) from None
    # Whatever holds a log's name is one (a directory, FIFO or dangling link fails to load
    # later, naming it): skipping it would replay fewer sessions than were recorded.
    names = {entry.name: log_name(entry.name) for entry in entries}
    logs = {name: found for name, found in names.items() if found is not None}
    if not any(found.generation for found in logs.values()):
        children = sorted((found.ordinal, name) for name, found in logs.items()
                          if found.ordinal is not None)
        return ScenarioLayout(root, root / PRIMARY_NAME, root / SIDECAR_NAME,
                              [root / name for _, name in children])
    best: dict[int | None, tuple[int, str]] = {}
    for name, found in logs.items():
        held = best.get(found.ordinal)
        if held is None or found.generation > held[0]:
            best[found.ordinal] = (found.generation, name)
    chosen = {name for _, name in best.values()}
    ignored = sorted(root / name for name in logs if name not in chosen)
    primary = root / best[None][1] if None in best else root / PRIMARY_NAME
    children = sorted((ordinal, name) for ordinal, (_, name) in best.items() if ordinal is not None)
    return ScenarioLayout(root, primary, root / SIDECAR_NAME,
                          [root / name for _, name in children], True, ignored)


def generation_label(path: str | Path) -> str:
    """How a log's generation reads (``v4``; ``v0/v1`` for a legacy name)."""
    generation = generation_of(path)
    return f"v{generation}" if generation else "v0/v1"


def selection_notes(layout: ScenarioLayout) -> list[str]:
    """What a directory read by generation was read from, and what it ignored (for
    ``validate``, ``inspect`` and the debugger)."""
    if not layout.by_generation:
        return []
    read = [p for p in (layout.primary, *layout.children) if os.path.lexists(p)]
    notes = ["read " + ", ".join(f"{p.name} ({generation_label(p)})" for p in read)]
    if layout.ignored:
        notes.append("ignored older generations: " + ", ".join(
            f"{p.name} ({generation_label(p)})" for p in layout.ignored))
    return notes


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


def log_file_name(ordinal: int | None, generation: int = 0) -> str:
    """The file name of a role's log (None = primary) in ``generation`` (0: no ``.vK``)."""
    role = "" if ordinal is None else f".{ordinal}"
    return f"session{role}{f'.v{generation}' if generation else ''}.jsonl"


def is_scenario_file(name: str) -> bool:
    """Whether a file of this name is part of a scenario (a log of any generation, or the
    sidecar)."""
    return name == SIDECAR_NAME or LOG_NAME_RE.match(name) is not None


def log_error(file: str | None, line: int, what: str, fix: str) -> LogParseError:
    """An error of a log line (of a v2+ log, or its header), naming the file and line."""
    return LogParseError(f"{file or '<log>'}:{line}: {what}; {fix}", file=file, line=line)


def check_generation(value: Any, file: str | None, generation: int, line: int = 1) -> None:
    """The file name's generation must be the header's ``version`` (docs/format.md#generation-selection)."""
    version = value.get("version") if isinstance(value, dict) else None
    if generation >= 1:
        if as_safe_integer(version) != generation or not is_number(version):
            raise log_error(file, line, f"the file name says generation {generation} but the "
                            f"header's version is {version!r:.60}", "name the log "
                            "session[.N].vK.jsonl after its header's version K, or fix the "
                            "header")
    elif isinstance(version, int | float) and not isinstance(version, bool) and version >= 2:
        raise log_error(file, line, f"the header's version is {version!r} but the file name "
                        "carries no generation", f"a version {version!r} log must be named "
                        f"session[.N].v{version!r}.jsonl")
