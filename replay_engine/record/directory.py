"""The directory a recording goes into: one recorder at a time, and room made for it.

A recorder holds ``.dsh-replay-record.lock`` (its pid inside) while it runs, so a second one
pointed at the same directory fails at once, saying who holds it, instead of the two
overwriting each other's logs. An existing scenario is refused, or with ``force`` kept as
numbered backups (``NAME.bak.N``, one N for the whole set): a backup never replaces another.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Sequence
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


def backup_path(path: Path, number: int) -> Path:
    """Backup ``number`` of ``path``: ``NAME.bak.N`` beside it."""
    return path.with_name(f"{path.name}{BACKUP_SUFFIX}.{number}")


def _copy_new(path: Path, backup: Path) -> None:
    """``backup`` as a new file with ``path``'s bytes (FileExistsError when it exists): a
    hard link where the file system has them, else a copy."""
    try:
        os.link(path, backup)
        return
    except FileExistsError:
        raise
    except OSError:
        pass
    with open(path, "rb") as source, open(backup, "xb") as target:
        shutil.copyfileobj(source, target)
        target.flush()
        os.fsync(target.fileno())


def keep_backups(paths: Sequence[Path]) -> list[Path]:
    """Copy each file to ``NAME.bak.N`` with the lowest N free for all of them, never
    replacing a backup (also one another process makes meanwhile); returns the backups.
    The files themselves are left in place."""
    if not paths:
        return []
    number = 1
    while True:
        made: list[Path] = []
        try:
            for path in paths:
                backup = backup_path(path, number)
                _copy_new(path, backup)
                made.append(backup)
            return made
        except FileExistsError:
            for backup in made:
                with contextlib.suppress(FileNotFoundError):
                    backup.unlink()
            number += 1


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


def ensure_not_recording(directory: Path) -> None:
    """InputError ``RECORDING_LOCKED`` naming the holder when a recorder is recording into
    ``directory`` now (checked, not held: nothing of the check stays in the directory)."""
    if directory.is_dir():
        lock_directory(directory).release()


def prepare_directory(directory: Path, *, force: bool) -> list[Path]:
    """Make room in ``directory`` (locked by the caller): refuses an existing scenario unless
    ``force``, which moves its files to numbered backups ``NAME.bak.N``; returns them."""
    existing = existing_scenario_files(directory)
    if existing and not force:
        names = ", ".join(p.name for p in existing)
        raise InputError(f"{directory}: already holds a scenario ({names}); record into an empty "
                         "directory, or pass --force to keep those files as .bak.N and record "
                         "anew.", file=str(directory), code=SCENARIO_EXISTS)
    backups = keep_backups(existing)
    for path in existing:
        path.unlink()
    return backups
