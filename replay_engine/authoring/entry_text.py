"""Entry JSON typed by a user (editor pane, ``--chunks-file``): parse, validate, and point every
problem at its line and column.

``value_offsets`` maps a path such as ``("chunks", 3, "type")`` in text that
already parsed as JSON to where that value starts.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import EntryProblem, EntryTextError, SidecarError
from ..jsonlimits import (
    DEPTH_PROBLEM,
    MAX_JSON_DEPTH,
    NonFiniteNumber,
    finite_float,
    finite_int,
    line_of,
    non_finite_problem,
    too_deep,
)
from ..jsonlocate import JsonPath as JsonPath
from ..jsonlocate import TextLocator as TextLocator
from ..jsonlocate import deep_at, line_column, render_path
from ..jsonlocate import parse_location as parse_location
from ..jsonlocate import value_offsets as value_offsets
from ..models import AnyEntry
from ..scenario.sidecar import validate_entry


def locate(text: str, path: JsonPath) -> tuple[int, int] | None:
    """Line and column of the deepest existing value along ``path``."""
    return TextLocator(text).locate(path)


def _reject_constant(name: str) -> Any:
    raise NonFiniteNumber(name)


def _too_deep(text: str) -> EntryProblem:
    """The depth problem, at the first array or object past the limit."""
    found = deep_at(text, MAX_JSON_DEPTH)
    if found is None:
        return EntryProblem("", 1, 1, DEPTH_PROBLEM)
    line, column = line_column(text, found[0])
    return EntryProblem(render_path(found[1]), line, column, DEPTH_PROBLEM)


def parse_entry_text(text: str, source: str = "entry") -> AnyEntry:
    """An entry from JSON text: a list of chunks (a ``chunks`` entry) or a whole entry object."""
    if too_deep(text):
        raise EntryTextError(source, [_too_deep(text)])
    try:
        doc = json.loads(text, parse_constant=_reject_constant, parse_float=finite_float,
                         parse_int=finite_int)
    except json.JSONDecodeError as exc:
        raise EntryTextError(
            source, [EntryProblem("", exc.lineno, exc.colno, f"not valid JSON ({exc.msg})")]
        ) from None
    except RecursionError:
        raise EntryTextError(source, [_too_deep(text)]) from None
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
