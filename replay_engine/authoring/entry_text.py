"""Entry JSON typed by a user (editor pane, ``--chunks-file``): parse, validate, and point every
problem at its line and column.

``value_offsets`` maps a path such as ``("chunks", 3, "type")`` in text that
already parsed as JSON to where that value starts.
"""

from __future__ import annotations

import bisect
import json
import json.decoder
import re
from collections.abc import Callable
from typing import Any

from ..errors import EntryProblem, EntryTextError, SidecarError
from ..jsonlimits import (
    DEPTH_PROBLEM,
    NonFiniteNumber,
    finite_float,
    finite_int,
    line_of,
    non_finite_problem,
    too_deep,
)
from ..models import AnyEntry
from ..scenario.sidecar import validate_entry

scanstring: Callable[[str, int], tuple[str, int]] = vars(json.decoder)["scanstring"]

_WS = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null")

JsonPath = tuple[int | str, ...]


def value_offsets(text: str) -> dict[JsonPath, int]:
    """Offset of every value in ``text`` keyed by its path (the root is ``()``)."""
    out: dict[JsonPath, int] = {}
    _value(text, _WS.match(text, 0).end(), (), out)  # type: ignore[union-attr]
    return out


def _skip(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()  # type: ignore[union-attr]


def _value(text: str, pos: int, path: JsonPath, out: dict[JsonPath, int]) -> int:
    out[path] = pos
    char = text[pos : pos + 1]
    if char == "{":
        pos = _skip(text, pos + 1)
        if text[pos : pos + 1] == "}":
            return pos + 1
        while True:
            key, pos = scanstring(text, pos + 1)
            pos = _skip(text, pos)  # at ':'
            pos = _value(text, _skip(text, pos + 1), (*path, key), out)
            pos = _skip(text, pos)
            if text[pos : pos + 1] == ",":
                pos = _skip(text, pos + 1)
                continue
            return pos + 1
    if char == "[":
        pos = _skip(text, pos + 1)
        if text[pos : pos + 1] == "]":
            return pos + 1
        index = 0
        while True:
            pos = _skip(text, _value(text, pos, (*path, index), out))
            index += 1
            if text[pos : pos + 1] == ",":
                pos = _skip(text, pos + 1)
                continue
            return pos + 1
    if char == '"':
        return scanstring(text, pos + 1)[1]
    match = _SCALAR.match(text, pos)
    return match.end() if match else pos + 1


_SEGMENT = re.compile(r"\.?([^.\[\]]+)|\[([0-9]+)\]")


def parse_location(location: str) -> JsonPath:
    """``entry.chunks[3].type`` (a sidecar error location, minus its first word) as a path."""
    path: list[int | str] = []
    for match in _SEGMENT.finditer(location):
        if match.group(2) is not None:
            path.append(int(match.group(2)))
        else:
            path.append(match.group(1))
    return tuple(path)


def locate(text: str, path: JsonPath) -> tuple[int, int] | None:
    """Line and column of the deepest existing value along ``path``."""
    return TextLocator(text).locate(path)


class TextLocator:
    """Locates many paths in one text: its values and line starts are scanned once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offsets: dict[JsonPath, int] | None = None
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def locate(self, path: JsonPath) -> tuple[int, int] | None:
        if self.offsets is None:
            try:
                self.offsets = value_offsets(self.text)
            except (ValueError, IndexError):
                self.offsets = {}
        while True:
            if path in self.offsets:
                offset = self.offsets[path]
                line = bisect.bisect_right(self.line_starts, offset)
                return line, offset - self.line_starts[line - 1] + 1
            if not path:
                return None
            path = path[:-1]


def _reject_constant(name: str) -> Any:
    raise NonFiniteNumber(name)


def parse_entry_text(text: str, source: str = "entry") -> AnyEntry:
    """An entry from JSON text: a list of chunks (a ``chunks`` entry) or a whole entry object."""
    if too_deep(text):
        raise EntryTextError(source, [EntryProblem("", 1, 1, DEPTH_PROBLEM)])
    try:
        doc = json.loads(text, parse_constant=_reject_constant, parse_float=finite_float,
                         parse_int=finite_int)
    except json.JSONDecodeError as exc:
        raise EntryTextError(
            source, [EntryProblem("", exc.lineno, exc.colno, f"not valid JSON ({exc.msg})")]
        ) from None
    except RecursionError:
        raise EntryTextError(source, [EntryProblem("", 1, 1, DEPTH_PROBLEM)]) from None
    except NonFiniteNumber as exc:
        line = line_of(text, exc.literal)
        raise EntryTextError(source, [EntryProblem(
            "", line, 1, non_finite_problem(exc.literal)
        )]) from None
    except ValueError as exc:
        raise EntryTextError(source, [EntryProblem("", 1, 1, f"not valid JSON ({exc})")]) from None
    bare = isinstance(doc, list)
    candidate = {"kind": "chunks", "chunks": doc} if bare else doc
    try:
        return validate_entry(candidate, "entry")
    except SidecarError as exc:
        raw: list[str] = getattr(exc, "problems", None) or [exc.message]
        problems: list[EntryProblem] = []
        locator = TextLocator(text)
        for item in raw:
            where, _, message = item.partition(": ")
            location = where.removeprefix("entry").lstrip(".")
            path = parse_location(location)
            if bare:
                path = path[1:] if path[:1] == ("chunks",) else ()
                location = location.removeprefix("chunks")
            line, column = locator.locate(path) or (1, 1)
            problems.append(EntryProblem(location, line, column, message))
        raise EntryTextError(source, problems) from None
