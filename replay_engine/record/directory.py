"""The directory a recording goes into: one recorder at a time, and room made for it.

A recorder holds ``.dsh-replay-record.lock`` (its pid inside) while it runs, so a second one
pointed at the same directory fails at once, saying who holds it, instead of the two
overwriting each other's logs. An existing scenario is refused, or with ``force`` kept as
``NAME.bak``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..errors import RECORDING_LOCKED, SCENARIO_EXISTS, InputError
from ..files import HeldLock, try_lock
from ..scenario.layout import is_scenario_file

BACKUP_SUFFIX = ".bak"
LOCK_NAME = ".dsh-replay-record.lock"
"""The lock file a running recorder holds in its directory."""


def existing_scenario_files(directory: Path) -> list[Path]:
    """The files of ``directory`` that make it a scenario (logs and the sidecar), by the
    scenario layout's own names."""
    if not directory.is_dir():
        return []
    return [item for item in sorted(directory.iterdir()) if is_scenario_file(item.name)]


def lock_directory(directory: Path) -> HeldLock:
    """Create ``directory`` if needed and take its recording lock; InputError
    ``RECORDING_LOCKED`` naming the holder when another recorder has it."""
    if directory.exists() and not directory.is_dir():
        raise InputError(f"{directory}: not a directory; give record a directory to write the "
                         "scenario into.", file=str(directory))
    try:
        directory.mkdir(parents=True, exist_ok=True)
        owner = f"pid {os.getpid()}, recording since {time.strftime('%Y-%m-%d %H:%M:%S')}"
        held = try_lock(directory / LOCK_NAME, owner)
    except OSError as exc:
        raise InputError(f"{directory}: cannot record into it ({exc.strerror}); check the "
                         "directory's permissions or pick another.", file=str(directory)) from None
    if isinstance(held, str):
        raise InputError(f"{directory}: another recorder is recording into it ({held}); stop "
                         "it first, or record into another directory.", file=str(directory),
                         code=RECORDING_LOCKED)
    return held


def prepare_directory(directory: Path, *, force: bool) -> list[Path]:
    """Make room in ``directory`` (locked by the caller): refuses an existing scenario unless
    ``force``, which moves each of its files to ``NAME.bak``; returns the backups made."""
    existing = existing_scenario_files(directory)
    if existing and not force:
        names = ", ".join(p.name for p in existing)
        raise InputError(f"{directory}: already holds a scenario ({names}); record into an empty "
                         "directory, or pass --force to keep those files as .bak and record anew.",
                         file=str(directory), code=SCENARIO_EXISTS)
    backups = []
    for path in existing:
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        os.replace(path, backup)
        backups.append(backup)
    return backups
