"""What a session log keeps must fit a sidecar: numbers a double holds, nesting a sidecar
entry can hold (``jsonlimits``), each refusal naming the file, line and JSON path.

``dsh-replay override`` writes recorded chunks into a sidecar, so a chunk a log accepts must
load there too. Readers ask ``kept_may_fail`` of a line (counting bytes, cheap) before
``check_kept`` walks a value.
"""

from __future__ import annotations

from typing import Any

from ..errors import LogParseError
from ..jsonlimits import (
    CHUNK_DEPTH_PROBLEM,
    MAX_CHUNK_DEPTH,
    huge_integer_at,
    may_hold_huge_integer,
    nested_deeper,
    non_finite_problem,
)
from ..jsonnumbers import overflows_double


def number_error(file: str | None, line: int, where: str | None, literal: str
                 ) -> LogParseError:
    """A number no double holds (``1e999``, an integer of 309 digits and more): refused in a
    log line as in a sidecar or a request; ``where`` is its JSON path in the line, if known."""
    at = f"{where}: " if where else ""
    return LogParseError(f"{file or '<log>'}:{line}: {at}{non_finite_problem(literal)}.",
                         file=file, line=line)


def check_envelope(seq: Any, time: Any, file: str | None, line: int) -> None:
    """A line's ``seq`` and ``time`` that are integers must be finite doubles (docs/format.md#edge-cases)."""
    for name, value in (("seq", seq), ("time", time)):
        if type(value) is int and overflows_double(value):
            raise number_error(file, line, f"$.{name}", str(value))


_DEPTH_GATE = 2 * MAX_CHUNK_DEPTH
"""A line this short cannot nest a chunk too deep (each level takes two brackets)."""
KEPT_GATE = min(_DEPTH_GATE, 308)
"""A line this short can hold neither a chunk nested too deep nor an integer beyond a double
(309 digits): no value of it needs ``check_kept``."""


def kept_may_fail(raw: bytes) -> bool:
    """Whether a line longer than ``KEPT_GATE`` may hold a value ``check_kept`` refuses (False
    is certain; counting bytes, not reading the value)."""
    return (len(raw) > _DEPTH_GATE and raw.count(b"[") + raw.count(b"{") > MAX_CHUNK_DEPTH
            or may_hold_huge_integer(raw))


def check_kept(value: Any, file: str | None, line: int, where: str) -> None:
    """A value a log keeps (a chunk, a packed row) must fit a sidecar: nested at most
    ``MAX_CHUNK_DEPTH`` deep, its numbers finite (readers ask ``kept_may_fail`` first)."""
    if nested_deeper(value, MAX_CHUNK_DEPTH):
        raise LogParseError(f"{file or '<log>'}:{line}: {where} is {CHUNK_DEPTH_PROBLEM}; fix or "
                            "remove this line.", file=file, line=line)
    found = huge_integer_at(value, where)
    if found is not None:
        raise number_error(file, line, found[0], str(found[1]))
