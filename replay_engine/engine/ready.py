"""Ready files: the empty marker a hang entry creates once its prefix is out (SPEC 6).

Harnesses wait for the file to know the call is in place before they cancel it.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import READY_FILE, InputError


def touch_ready_file(ready_dir: Path, name: str, *, created: list[Path] | None = None) -> Path:
    """Create the hang entry's readyFile (relative names under ``ready_dir``); returns its path.

    A file that did not exist before is appended to ``created``. Raises InputError when the
    file exists with content or cannot be created.
    """
    path = Path(name)
    if not path.is_absolute():
        path = ready_dir / path
    try:
        if path.exists() and path.stat().st_size > 0:
            raise InputError(
                f"{path}: the hang entry's readyFile already exists and is not empty; it "
                "is a marker the replay creates empty. Point readyFile at a new path.",
                file=str(path),
                code=READY_FILE,
            )
        existed = path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab"):
            pass
        if created is not None and not existed:
            created.append(path)
    except OSError as exc:
        raise InputError(
            f"{path}: cannot create the hang entry's readyFile ({exc.strerror}).",
            file=str(path),
            code=READY_FILE,
        ) from None
    return path
