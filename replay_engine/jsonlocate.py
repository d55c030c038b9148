"""Where things are in JSON text: the offset of every value by its path, line and column of an
offset, and where a document first nests too deep. The one rule every place that points a
user at a JSON problem (the sidecar load, ``validate``, the editor's entry and raw checks)
uses to name its line and column.
"""

from __future__ import annotations

import bisect
import json
import json.decoder
import re
from collections.abc import Callable

__all__ = ["JsonPath", "TextLocator", "deep_at", "line_column", "parse_location",
           "render_path", "value_offsets"]

scanstring: Callable[[str, int], tuple[str, int]] = vars(json.decoder)["scanstring"]

_WS = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null")
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},:]', re.DOTALL)

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


def render_path(path: JsonPath, most: int = 12) -> str:
    """A path as a location: ``("chunks", 3, "type")`` is ``chunks[3].type``; a path of more
    than ``most`` segments keeps its first and last ones around ``…`` (a path 300 deep is
    named, not quoted)."""
    out = ""
    for number, segment in enumerate(path):
        if len(path) > most and most // 2 <= number < len(path) - most // 2:
            if not out.endswith("…"):
                out += "…"
            continue
        out += f"[{segment}]" if isinstance(segment, int) else (f".{segment}" if out else segment)
    return out


def line_column(text: str | bytes, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` (characters of a str, bytes of bytes)."""
    newline = "\n" if isinstance(text, str) else b"\n"
    line = text.count(newline, 0, offset) + 1  # type: ignore[arg-type]
    return line, offset - (text.rfind(newline, 0, offset) + 1) + 1  # type: ignore[arg-type]


def deep_at(text: str, limit: int) -> tuple[int, JsonPath] | None:
    """Offset and path of the first array or object nested deeper than ``limit`` (None: none
    is). Reads brackets, commas and keys only, so it works on text too deep to parse."""
    stack: list[list[int | str | None]] = []  # per open container: [kind, index or key]
    last_string = ""
    for token in _TOKENS.finditer(text):
        char = token.group()[0]
        if char == '"':
            last_string = token.group()
        elif char in "[{":
            if len(stack) >= limit:
                path = tuple(frame[1] for frame in stack if frame[1] is not None)
                return token.start(), path
            stack.append(["list", 0] if char == "[" else ["object", None])
        elif char in "]}":
            if stack:
                stack.pop()
        elif char == ":" and stack and stack[-1][0] == "object":
            try:
                stack[-1][1] = json.loads(last_string)
            except ValueError:
                stack[-1][1] = last_string.strip('"')
        elif char == "," and stack and stack[-1][0] == "list":
            index = stack[-1][1]
            stack[-1][1] = index + 1 if isinstance(index, int) else 0
    return None


class TextLocator:
    """Locates many paths in one text: its values and line starts are scanned once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offsets: dict[JsonPath, int] | None = None
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def locate(self, path: JsonPath) -> tuple[int, int] | None:
        """Line and column of the deepest existing value along ``path`` (None: not JSON)."""
        if self.offsets is None:
            try:
                self.offsets = value_offsets(self.text)
            except (ValueError, IndexError, RecursionError):
                self.offsets = {}
        while True:
            if path in self.offsets:
                offset = self.offsets[path]
                line = bisect.bisect_right(self.line_starts, offset)
                return line, offset - self.line_starts[line - 1] + 1
            if not path:
                return None
            path = path[:-1]
