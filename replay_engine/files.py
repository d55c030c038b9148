"""Atomic writes of files the user owns, and content fingerprints for file watchers."""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path

Rename = Callable[[str, str], None]
"""Moves a temp file over its target (``os.replace``); injectable to simulate a failure."""


def fingerprint(path: str | Path) -> str | None:
    """SHA-256 hex digest of a file's bytes, or None when it does not exist."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    return hashlib.sha256(data).hexdigest()


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # platforms without directory handles
    try:
        with contextlib.suppress(OSError):  # some filesystems refuse fsync on directories
            os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | Path, data: bytes, *, rename: Rename | None = None) -> None:
    """Write ``data`` to a temp file beside ``path``, fsync, rename over ``path``, fsync the dir.

    On any failure the temp file is removed and ``path`` keeps its old content.
    """
    target = Path(path)
    directory = target.parent
    temp = directory / f".{target.name}.{secrets.token_hex(6)}.tmp"
    existing: int | None = None
    with contextlib.suppress(FileNotFoundError):
        existing = os.stat(target).st_mode & 0o7777
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            if existing is not None:
                os.fchmod(fd, existing)  # keep the permissions the user gave the file
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        (rename or os.replace)(str(temp), str(target))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    _fsync_dir(directory)
