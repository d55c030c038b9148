"""Atomic writes of files the user owns, a lock for compare-and-write, and content fingerprints
for file watchers.

A temp file is named ``.NAME.PID.TOKEN.tmp`` beside its target. A write killed before its
rename leaves one behind; the next write of the same target removes those of processes that
are gone (and that are older than that write), never one a live writer may still rename.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

if sys.platform != "win32":
    import fcntl

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


LEGACY_TEMP_AGE = 3600.0
"""Seconds after which a temp file without a pid in its name (older versions) counts as stale."""


def _temp_pattern(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(f".{name}.") + r"(?:(\d+)\.)?[0-9a-f]{12}\.tmp")


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists but belongs to someone else (EPERM), or cannot tell: keep it
    return True


def remove_stale_temps(path: str | Path, *, before: float | None = None) -> list[Path]:
    """Remove temp files a killed write of ``path`` left beside it; returns what was removed.

    Only names of this module's pattern, last modified before ``before`` (default: now), whose
    writer process no longer exists (a name without a pid: older than an hour) are removed.
    """
    target = Path(path)
    pattern = _temp_pattern(target.name)
    cutoff = time.time() if before is None else before
    removed: list[Path] = []
    try:
        listing = list(os.scandir(target.parent))
    except OSError:
        return removed
    for item in listing:
        match = pattern.fullmatch(item.name)
        if match is None:
            continue
        try:
            info = item.stat(follow_symlinks=False)
        except OSError:
            continue
        if not item.is_file(follow_symlinks=False) or info.st_mtime >= cutoff:
            continue
        pid = match.group(1)
        if pid is None:
            if info.st_mtime >= cutoff - LEGACY_TEMP_AGE:
                continue
        elif _pid_alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            os.unlink(item.path)
            removed.append(Path(item.path))
    return removed


def lock_path(path: str | Path) -> Path:
    """The lock file :func:`exclusive_lock` holds for ``path`` (``.NAME.lock`` beside it)."""
    target = Path(path)
    return target.with_name(f".{target.name}.lock")


@contextlib.contextmanager
def exclusive_lock(path: str | Path) -> Iterator[None]:
    """Hold the lock of ``path`` so a compare-then-write on it is atomic across processes and
    threads; waits while another holder is inside. The lock file is removed on release.

    An advisory ``flock`` on ``.NAME.lock``: a killed holder releases it with its process.
    After locking, the file must still be the one at that path (a releasing holder unlinks it,
    and a waiter that locked the unlinked file tries again on the new one).
    """
    if sys.platform == "win32":  # no flock: writes stay atomic, concurrent saves are not excluded
        yield
        return
    lock = lock_path(path)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                now = os.stat(lock)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            break
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        os.close(fd)


class HeldLock:
    """A lock file held for as long as a process works in a place (see :func:`try_lock`)."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self._fd = fd

    def release(self) -> None:
        """Give the lock up and remove its file (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(fd)


def try_lock(path: str | Path, owner: str) -> HeldLock | str:
    """Take the lock file ``path`` without waiting, writing ``owner`` (who holds it) into it;
    returns the held lock, or what the current holder wrote when another process holds it.

    An advisory ``flock``: a killed holder releases it with its process, and the next one
    takes it over (rewriting the owner). Without ``flock`` (Windows) every caller gets it.
    """
    target = Path(path)
    if sys.platform == "win32":
        return HeldLock(target, None)
    while True:
        fd = os.open(target, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 4096).decode("utf-8", errors="replace").strip()
                os.close(fd)
                return holder or "another process"
            held = os.fstat(fd)
            try:
                now = os.stat(target)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                os.ftruncate(fd, 0)
                os.write(fd, owner.encode("utf-8"))
                return HeldLock(target, fd)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # a releasing holder unlinked it: lock the new file


def output_file_problem(path: Path, example: str) -> str | None:
    """Why a file a command writes later (``--url-file``, ``--verdict-file``) cannot be
    written at ``path``, checked at start (``example``: a file name to suggest), or None."""
    if path.is_dir():
        return f"{path}: is a directory; name a file in it, e.g. {path / example}"
    if not path.absolute().parent.is_dir():
        return (f"{path}: the directory {path.parent} does not exist; create it first or name "
                "a file in an existing directory")
    return None


def atomic_write(path: str | Path, data: bytes, *, rename: Rename | None = None) -> None:
    """Write ``data`` to a temp file beside ``path``, fsync, rename over ``path``, fsync the dir.

    On any failure the temp file is removed and ``path`` keeps its old content. Temp files
    earlier writes of ``path`` left behind when killed are removed first.
    """
    target = Path(path)
    directory = target.parent
    remove_stale_temps(target)
    temp = directory / f".{target.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
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


def create_with(path: str | Path, data: bytes) -> int:
    """Create ``path`` already holding ``data`` and return a descriptor writing at its end.

    The data goes to a temp file beside it first (written, fsynced), which is then linked to
    ``path``: a process killed at any moment leaves either no file or one holding all of
    ``data``, never an empty one. Like ``O_EXCL``, an existing ``path`` is an OSError (EEXIST);
    where hard links are refused, the temp file is renamed in place after a check instead.
    """
    target = Path(path)
    remove_stale_temps(target)
    temp = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        try:
            os.link(temp, target)
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            if os.path.lexists(target):
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target)) from None
            os.replace(temp, target)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)
    _fsync_dir(target.parent)
    return fd
