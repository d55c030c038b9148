"""Fix a sidecar that does not load, as text: every problem with its line and column, checked
exactly as a load would check it, and a save that writes only a valid document.

The override editor's form needs a sidecar that loads; this is the way back from one that does
not (invalid JSON, or JSON with problems), without leaving the debugger.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import EntryProblem, ReplayError, SidecarError
from ..files import Rename
from ..jsonlocate import line_column
from ..models import ReplayConfig
from ..scenario.derive_fast import load_log
from ..scenario.loading import Scenario, config_from_directory, reads_by_generation
from ..scenario.sidecar import located_problems, parse_sidecar_text
from ..scenario.sidecar import sidecar_path as sidecar_path
from .compare import SavedSidecar, write_sidecar

__all__ = ["RawSidecar", "open_raw_sidecar", "sidecar_path"]

@dataclass(slots=True)
class RawSidecar:
    """A sidecar file as text, with what its checks need: the derived primary script's length
    (``at`` past its end is a problem) and whether the scenario is read by generation."""

    path: Path
    text: str
    """The file's text as read (newlines normalised, undecodable bytes replaced)."""
    base_digest: str | None
    """SHA-256 of the bytes read (None: no file), so a save never clobbers a later write."""
    derived_length: int | None
    generations: bool = False
    read_problem: str | None = None
    """Why the bytes could not be read as UTF-8, if so (the text then shows replacements)."""

    def problems(self, text: str) -> list[EntryProblem]:
        """Every problem of ``text`` as this sidecar, in document order (empty: it loads)."""
        try:
            parse_sidecar_text(text, str(self.path), derived_length=self._length(text),
                               generations=self.generations)
        except SidecarError as exc:
            return _problems_of(exc, text, str(self.path))
        return []

    def _length(self, text: str) -> int | None:
        return None if text.lstrip().startswith("[") else self.derived_length

    def save(self, text: str, *, rename: Rename | None = None) -> SavedSidecar:
        """Write ``text`` as it is (atomically, under the sidecar's lock, the old file kept as
        ``.bak``) once it has no problem; raises SidecarError otherwise and writes nothing."""
        problems = self.problems(text)
        if problems:
            first = problems[0]
            where = f"{first.location}: " if first.location else ""
            raise SidecarError(
                f"{self.path}: not saved: {len(problems)} problem(s), the first at line "
                f"{first.line}, column {first.column}: {where}{first.message}",
                file=str(self.path), line=first.line, location=first.location or None)
        saved = write_sidecar(self.path, text, self.base_digest, rename=rename)
        self.base_digest = saved.sha256
        self.text = text
        return saved


def _problems_of(exc: SidecarError, text: str, file: str) -> list[EntryProblem]:
    located: list[EntryProblem] | None = getattr(exc, "located", None)
    if located:
        return located
    listed: list[str] | None = getattr(exc, "problems", None)
    if listed:
        return located_problems(listed, text)
    try:
        json.loads(text)
    except json.JSONDecodeError as bad:
        return [EntryProblem("", bad.lineno, bad.colno, f"not valid JSON ({bad.msg})")]
    except (ValueError, RecursionError):
        pass
    message = exc.message.removeprefix(file).lstrip(":0123456789 ")
    location = exc.location or ""
    message = message.removeprefix(f"{location}: ") if location else message
    return [EntryProblem(location, exc.line or 1, _column(exc.message, file), message)]


def _column(message: str, file: str) -> int:
    """The column a ``file:line:column:`` message names (1 when it names none)."""
    found = re.match(r":\d+:(\d+):", message.removeprefix(file))
    return int(found.group(1)) if found else 1


def open_raw_sidecar(source: Scenario | Path) -> RawSidecar:
    """The sidecar of a loaded scenario or of a scenario directory, read as text; raises
    ReplayError when there is no sidecar path or the file cannot be read."""
    config = source.config if isinstance(source, Scenario) else config_from_directory(source)
    if not config.overrideFile:
        raise ReplayError("this scenario has no sidecar path (loaded from DSH_SNAPSHOT_FILE "
                          "without DSH_SNAPSHOT_OVERRIDE).")
    path = Path(config.overrideFile)
    try:
        data: bytes | None = path.read_bytes()
    except FileNotFoundError:
        data = None
    except OSError as exc:
        raise SidecarError(f"{path}: cannot read the sidecar ({exc.strerror or exc}).",
                           file=str(path)) from None
    text, problem = "", None
    if data is not None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as bad:
            text = data.decode("utf-8", errors="replace")
            line, column = line_column(data, bad.start)
            problem = (f"line {line}, column {column} (byte offset {bad.start}): not UTF-8 text: "
                       "undecodable bytes show as \ufffd; saving writes UTF-8")
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    derived = source.derived_primary if isinstance(source, Scenario) else None
    return RawSidecar(path, text, hashlib.sha256(data).hexdigest() if data is not None else None,
                      len(derived) if derived is not None else _derived_length(config),
                      reads_by_generation(config), problem)


def _derived_length(config: ReplayConfig) -> int | None:
    """How many calls the primary log derives to (None when it does not derive)."""
    if not config.file or not Path(config.file).is_file():
        return None
    try:
        return len(load_log(Path(config.file)).entries)
    except (ReplayError, OSError):
        return None
