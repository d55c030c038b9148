"""Ready files: the empty marker a hang entry creates once its prefix is out (docs/format.md#serving-entries).

Harnesses wait for the file to know the call is in place before they cancel it. The marker
is created inside the ready directory only (no ``..``, no absolute path or symlink leading
out of it), as a regular file, and without ever blocking: a FIFO or device at that path is
refused instead of opened for writing until a reader comes.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePath

from ..errors import READY_FILE, InputError
from ..models import ready_file_problem
from ..safe_text import printable
from .placeholders import MARKER

_FLAGS = os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _refuse(path: Path | str, why: str) -> InputError:
    shown = printable(ascii(str(path))[1:-1]) if ready_file_problem(str(path)) else str(path)
    return InputError(f"{shown}: {why}", file=shown, code=READY_FILE)


def ready_path(ready_dir: Path, name: str) -> Path:
    """Where the readyFile ``name`` is created: inside ``ready_dir`` (InputError otherwise)."""
    problem = ready_file_problem(name)
    if problem is not None:
        raise _refuse(name, f"the readyFile {problem}.")
    if MARKER in name:
        raise _refuse(name, "a readyFile names where the replay creates a file, so "
                      "{{fromRequest:…}} is not resolved in it (the agent's request must not "
                      "choose paths); give a fixed name under the ready directory.")
    pure = PurePath(name)
    if ".." in pure.parts:
        raise _refuse(name, "a readyFile may not contain '..'; give a path inside the ready "
                      f"directory {ready_dir} (--ready-dir).")
    root = Path(os.path.realpath(ready_dir))
    path = Path(name) if pure.is_absolute() else root / pure
    parent = Path(os.path.realpath(path.parent))
    if parent != root and root not in parent.parents:
        raise _refuse(name, f"the readyFile is outside the ready directory {root} (symlinks "
                      "followed); give a relative path, or move --ready-dir to hold it.")
    return parent / path.name


def touch_ready_file(ready_dir: Path, name: str, *, created: list[Path] | None = None) -> Path:
    """Create the hang entry's readyFile (relative names under ``ready_dir``); returns its path.

    A file that did not exist before is appended to ``created``. Raises InputError when the
    path leaves the ready directory, exists with content or as anything but a regular file,
    or cannot be created. Never blocks (the engine calls it on the event loop).
    """
    path = ready_path(ready_dir, name)
    existed = False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, _FLAGS | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            existed = True
            fd = os.open(path, _FLAGS)
        try:
            info = os.fstat(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.ELOOP, errno.EISDIR):
            raise _refuse(path, "the readyFile exists and is not a regular file (a FIFO, "
                          "socket, directory or symlink); point readyFile at a new path.") from None
        raise _refuse(path, f"cannot create the hang entry's readyFile ({exc.strerror}).") from None
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(path, "the readyFile exists and is not a regular file (a FIFO or device); "
                      "point readyFile at a new path.")
    if info.st_size > 0:
        raise _refuse(path, "the hang entry's readyFile already exists and is not empty; it "
                      "is a marker the replay creates empty. Point readyFile at a new path.")
    if created is not None and not existed:
        created.append(path)
    return path
