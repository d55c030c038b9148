"""``check_log``: validate a session log as the loader reads it, without keeping its chunks.

``dsh-replay validate`` uses it: it imports no pydantic and keeps no chunk, raises exactly the
error ``load_log`` would (same message, same line: both are the one reading loop,
``reader.read_log``, with another feed) and counts the calls it would derive.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .feeds import Checker
from .layout import generation_of
from .logs import READ_BUFFER, ensure_log_file, unreadable_log_error
from .logscan import gc_paused
from .reader import read_log

__all__ = ["CheckedLog", "Checker", "check_any", "check_log", "check_log_bytes"]


@dataclass(slots=True)
class CheckedLog:
    """What checking a log found: it derives ``calls`` calls; ``warnings`` are not errors."""

    calls: int
    event_count: int
    seed_length: float = 0
    warnings: list[str] = field(default_factory=list)
    unfinished: list[int] = field(default_factory=list)
    """Positions of the calls without a finish chunk (lenient checking only)."""


def check_log(
    path: str | Path,
    *,
    seed_length: bool = False,
    name: str | None = None,
    warnings: list[str] | None = None,
    lenient: bool = False,
) -> CheckedLog:
    """Check a log file as ``load_log`` loads it (the same error, or the same call count),
    keeping no chunk, and list what a newer harness would refuse as warnings.

    The warnings go to ``warnings`` when given, so those found before an error are kept.
    ``lenient`` counts a call that never finished instead of raising (a bare-list sidecar
    replaces the script then).
    """
    file = name or str(path)
    ensure_log_file(path, file)
    try:
        with open(path, "rb", buffering=READ_BUFFER) as handle, gc_paused():
            return check_any(handle, file, seed_length, generation_of(file),
                             [] if warnings is None else warnings, lenient=lenient)
    except OSError as exc:  # cannot open, or a read fails midway (EIO)
        raise unreadable_log_error(path, file, exc) from None


def check_log_bytes(data: bytes, file: str | None = None, *, seed_length: bool = False,
                    generation: int | None = None,
                    warnings: list[str] | None = None) -> CheckedLog:
    """Check a log held in memory (same rules as ``check_log``)."""
    if generation is None:
        generation = generation_of(file or "")
    with gc_paused():
        return check_any(io.BytesIO(data), file, seed_length, generation,
                         [] if warnings is None else warnings)


def check_any(lines: Iterable[bytes], file: str | None, use_seed: bool, generation: int,
              warnings: list[str], *, lenient: bool = False) -> CheckedLog:
    """Check a log of any generation as ``derive_any`` reads it."""
    checker = Checker(file, lenient=lenient)
    found = read_log(lines, file, checker, child=use_seed, generation=generation,
                     warnings=warnings)
    calls = checker.finish()
    return CheckedLog(calls, found.event_count, float(found.fields.get("seedLength", 0)),
                      warnings, checker.unfinished)
