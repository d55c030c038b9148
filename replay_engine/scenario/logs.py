"""Session log parsing: lines, the header, events, and packed chunk rows (docs/format.md#session-logs).

The public helpers take text and return plain dicts (``parse_session_log`` is the reference
reading of a v0/v1 log, event by event). The streaming reader the loader, ``validate`` and
authoring share is ``reader.read_log``; it decodes lines with the helpers and errors here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import LogParseError
from ..jsonlimits import (
    DEPTH_PROBLEM,
    MAX_JSON_DEPTH,
    SURROGATE_ESCAPE,
    NonFiniteNumber,
    huge_integer_at,
    loads_strict,
    nested_deeper,
    non_finite_at,
    too_deep,
)
from ..jsonnumbers import as_safe_integer, is_number
from .kept import number_error
from .layout import not_a_file

if TYPE_CHECKING:
    from ..models import SessionHeader

# JavaScript's String.prototype.trim() set: what counts as blank (docs/format.md#edge-cases).
WHITESPACE = (
    " \t\n\r\v\f\xa0\ufeff\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_ASCII_WS = b" \t\n\r\v\f"

PACKED_CHUNK_TYPES: dict[str, str] = {
    "text-chunks": "text-delta",
    "reasoning-chunks": "reasoning-delta",
    "tool-call-chunks": "tool-call-delta",
}
_TEXT_KEYS = frozenset({"turn", "step", "index", "dt", "texts"})
_TOOL_KEYS = frozenset({"turn", "step", "index", "id", "dt", "args"})
_ENVELOPE_KEYS = frozenset({"type", "seq0", "time0", "data"})
_REQUIRED_ENVELOPE = frozenset({"type", "data"})

_any_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder()


READ_BUFFER = 1 << 20
"""Bytes a log is read from disk at a time. With the default 8 KiB buffer, a line longer than it
(a tool result, a request's headers) was read in pieces and joined: reading a 100 MB log line
by line took about twice as long (0.07 s against 0.03 s of CPU for 100 MB)."""


def _where(file: str | None, line: int) -> str:
    return f"{file or '<log>'}:{line}"


def decode_line(raw: bytes, file: str | None, line: int) -> tuple[bool, Any]:
    """Decode one physical line; returns (blank, value). Raises LogParseError when malformed."""
    try:
        return False, _any_decoder.decode(raw)
    except RecursionError:
        raise too_deep_line_error(file, line) from None
    except msgspec.DecodeError as exc:
        stripped = raw.strip(_ASCII_WS)
        if not stripped:
            return True, None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise LogParseError(
                f"{_where(file, line)}: the line is not valid UTF-8; session logs are UTF-8 "
                "JSONL. Re-save the file as UTF-8.",
                file=file,
                line=line,
            ) from None
        text = text.strip(WHITESPACE)
        if not text:
            return True, None
        try:
            return False, _any_decoder.decode(text.encode("utf-8", "surrogatepass"))
        except RecursionError:
            raise too_deep_line_error(file, line) from None
        except msgspec.DecodeError:
            if SURROGATE_ESCAPE.search(raw) or "out of range" in str(exc):
                return False, _decode_strictly(text, file, line)
            raise _invalid_json_error(file, line, str(exc)) from None


def _invalid_json_error(file: str | None, line: int, problem: str) -> LogParseError:
    return LogParseError(
        f"{_where(file, line)}: not valid JSON ({problem}). Every non-blank line of a "
        "session log must be one JSON value; fix or remove this line.",
        file=file,
        line=line,
    )


def _decode_strictly(text: str, file: str | None, line: int) -> Any:
    """A line msgspec refused that holds a lone surrogate escape (which ``JSON.parse``
    accepts), or a number beyond a double: decoded by the standard library under the same
    rules (finite numbers, no constants), so the number is named when it is the problem."""
    if too_deep(text):
        raise too_deep_line_error(file, line)
    try:
        return loads_strict(text)
    except RecursionError:
        raise too_deep_line_error(file, line) from None
    except NonFiniteNumber as exc:
        found = non_finite_at(text)
        raise number_error(file, line, found[0] if found else None, exc.literal) from None
    except ValueError as exc:  # JSONDecodeError
        raise _invalid_json_error(file, line, str(exc)) from None


def too_deep_line_error(file: str | None, line: int) -> LogParseError:
    """The error for a line nested deeper than the JSON depth limit."""
    return LogParseError(
        f"{_where(file, line)}: the line is {DEPTH_PROBLEM}; fix or remove this line.",
        file=file,
        line=line,
    )


def header_fields(value: Any, file: str | None, line: int) -> dict[str, Any]:
    """The header's fields from a decoded first line (the defaults of docs/format.md#session-logs),
    as keywords of ``SessionHeader``; kept apart so that checking a log needs no models."""
    if value is None:
        raise LogParseError(
            f"{_where(file, line)}: the header line is null; the first line of a session log "
            'must be the session header {"type":"session","id":…,"createdAt":…}.',
            file=file,
            line=line,
        )
    if not isinstance(value, dict):
        return {}
    if nested_deeper(value, MAX_JSON_DEPTH):
        raise too_deep_line_error(file, line)
    found = huge_integer_at(value)
    if found is not None:
        raise number_error(file, line, found[0], str(found[1]))
    ident = value.get("id")
    created = value.get("createdAt")
    seed = value.get("seedLength")
    extra = {k: v for k, v in value.items() if k not in ("id", "createdAt", "seedLength")}
    return {
        "id": ident if isinstance(ident, str) else "",
        "createdAt": created if is_number(created) else 0,
        "seedLength": seed if is_number(seed) else 0,
        "extra": extra,
    }


def header_from_value(value: Any, file: str | None, line: int) -> SessionHeader:
    """Build the header from a decoded first line (the defaults of docs/format.md#session-logs)."""
    from ..models import SessionHeader

    return SessionHeader(**header_fields(value, file, line))


def _packed_error(file: str | None, line: int, what: str) -> LogParseError:
    return LogParseError(
        f"{_where(file, line)}: malformed packed chunk row: {what}. Packed rows must be "
        '{"type","seq0","time0","data"} exactly as docs/format.md#packed-rows describes (a projected log '
        "may leave seq0 and time0 out); re-record or unpack this row.",
        file=file,
        line=line,
    )


def fill_row_envelope(row: dict[str, Any], index: int) -> tuple[Any, Any]:
    """A packed row's ``(seq0, time0)``, a projected log's missing ones filled (docs/format.md#session-logs).

    A missing ``seq0`` is ``index`` (the events before the row, rows expanded); a missing
    ``time0`` is 0. A present value is returned as given, to be checked like any other.
    """
    return row.get("seq0", index), row.get("time0", 0)


def expand_packed_row(
    row: dict[str, Any], file: str | None, line: int, index: int
) -> list[tuple[Any, Any, int, dict[str, Any]]]:
    """Expand a packed row into (turn, step, time, chunk) per member; validates the row fully.

    ``index`` is the number of events before the row in its log: a projected row without
    ``seq0`` starts there.
    """
    kind = str(row.get("type"))
    chunk_type = PACKED_CHUNK_TYPES[kind]
    envelope = row.keys()
    if not (_REQUIRED_ENVELOPE <= envelope <= _ENVELOPE_KEYS):
        got = ", ".join(sorted(row))
        raise _packed_error(
            file,
            line,
            f"envelope keys must be type, seq0?, time0?, data (got {got})",
        )
    raw_seq0, raw_time0 = fill_row_envelope(row, index)
    seq0 = as_safe_integer(raw_seq0)
    if seq0 is None or seq0 < 0:
        raise _packed_error(file, line, f"seq0 must be a non-negative integer (got {raw_seq0!r})")
    time0 = as_safe_integer(raw_time0)
    if time0 is None:
        raise _packed_error(file, line, f"time0 must be an integer (got {raw_time0!r})")
    data = row["data"]
    if not isinstance(data, dict):
        raise _packed_error(file, line, "data must be an object")
    keys = set(data)
    if kind == "tool-call-chunks":
        if keys != _TOOL_KEYS and keys != _TOOL_KEYS | {"name"}:
            got = ", ".join(sorted(keys))
            raise _packed_error(
                file, line, f"data keys must be turn, step, index, id, name?, dt, args (got {got})"
            )
        payload_key = "args"
    else:
        if keys != _TEXT_KEYS:
            got = ", ".join(sorted(keys))
            raise _packed_error(file, line, f"data keys must be turn, step, index, dt, texts (got {got})")
        payload_key = "texts"
    for key in ("turn", "step", "index"):
        if not is_number(data[key]):
            raise _packed_error(file, line, f"data.{key} must be a number (got {data[key]!r})")
    payload = data[payload_key]
    if (
        not isinstance(payload, list)
        or not payload
        or not all(isinstance(p, str) for p in payload)
    ):
        raise _packed_error(file, line, f"data.{payload_key} must be a non-empty list of strings")
    dt = data["dt"]
    if not isinstance(dt, list) or len(dt) != len(payload) - 1:
        got = f"a list of {len(dt)}" if isinstance(dt, list) else repr(dt)
        raise _packed_error(
            file,
            line,
            f"data.dt must be a list of {len(payload) - 1} integer(s), one per gap between the "
            f"{len(payload)} member(s) of data.{payload_key} (got {got})",
        )
    gaps: list[int] = []
    for gap in dt:
        as_int = as_safe_integer(gap)
        if as_int is None:
            raise _packed_error(file, line, f"data.dt holds {gap!r}, not an integer")
        gaps.append(as_int)
    index = data["index"]
    turn, step = data["turn"], data["step"]
    out: list[tuple[Any, Any, int, dict[str, Any]]] = []
    t = time0
    if payload_key == "texts":
        for k, text in enumerate(payload):
            if k:
                t += gaps[k - 1]
            out.append((turn, step, t, {"type": chunk_type, "index": index, "text": text}))
    else:
        ident = data["id"]
        if not isinstance(ident, str):
            raise _packed_error(file, line, "data.id must be a string")
        has_name = "name" in data
        name = data.get("name")
        if has_name and not isinstance(name, str):
            raise _packed_error(file, line, "data.name must be a string when present")
        for k, args in enumerate(payload):
            if k:
                t += gaps[k - 1]
            chunk: dict[str, Any] = {"type": chunk_type, "index": index, "id": ident}
            if has_name:
                chunk["name"] = name
            chunk["argumentsDelta"] = args
            out.append((turn, step, t, chunk))
    return out


def _expand_to_events(
    row: dict[str, Any], file: str | None, line: int, index: int
) -> list[dict[str, Any]]:
    members = expand_packed_row(row, file, line, index)
    seq0 = as_safe_integer(fill_row_envelope(row, index)[0])
    assert seq0 is not None
    return [
        {
            "type": "assistant/chunk",
            "seq": seq0 + k,
            "time": t,
            "data": {"turn": turn, "step": step, "chunk": chunk},
        }
        for k, (turn, step, t, chunk) in enumerate(members)
    ]


def _lines(text: str | bytes) -> Iterator[tuple[int, bytes]]:
    data = text.encode("utf-8") if isinstance(text, str) else text
    yield from enumerate(data.split(b"\n"), 1)


def iter_values(
    lines: Iterable[tuple[int, bytes]], file: str | None = None
) -> Iterator[tuple[int, Any]]:
    """Yield (line number, decoded value) for every non-blank line."""
    for number, raw in lines:
        blank, value = decode_line(raw, file, number)
        if not blank:
            yield number, value


def parse_session_header(text: str | bytes, file: str | None = None) -> SessionHeader:
    """Read the header (first non-blank line); an empty log has the default header."""
    for number, value in iter_values(_lines(text), file):
        return header_from_value(value, file, number)
    from ..models import SessionHeader

    return SessionHeader()


def fill_event_envelope(event: dict[str, Any], index: int) -> dict[str, Any]:
    """The event with a projected log's missing ``seq`` (``index``) and ``time`` (0) filled.

    The event itself is returned when both are present; a present value is kept as given.
    """
    if "seq" in event and "time" in event:
        return event
    filled = dict(event)
    filled.setdefault("seq", index)
    filled.setdefault("time", 0)
    return filled


def parse_session_log(text: str | bytes, file: str | None = None) -> list[Any]:
    """Every event after the header, packed rows expanded to their original chunk events.

    Projected envelopes are filled in (docs/format.md#session-logs): an event without ``seq`` gets the number
    of events before it, one without ``time`` gets 0.
    """
    events: list[Any] = []
    first = True
    for number, value in iter_values(_lines(text), file):
        if first:
            header_from_value(value, file, number)
            first = False
            continue
        if value is None:
            raise null_event_error(file, number)
        kind = value.get("type") if isinstance(value, dict) else None
        if isinstance(kind, str) and kind in PACKED_CHUNK_TYPES:  # a list "type" is no row
            events.extend(_expand_to_events(value, file, number, len(events)))
        elif isinstance(value, dict):
            events.append(fill_event_envelope(value, len(events)))
        else:
            events.append(value)
    return events


def null_event_error(file: str | None, line: int) -> LogParseError:
    """The error for a ``null`` event line."""
    return LogParseError(
        f"{_where(file, line)}: the event is null; every event line must be a JSON object "
        "such as {\"type\":…,\"data\":…}. Remove the line or restore the event.",
        file=file,
        line=line,
    )


def unreadable_log_error(path: str | Path, file: str, exc: OSError | None = None) -> LogParseError:
    """The error for a log that is named but cannot be read: what is there instead, and the fix.

    A scenario loads every ``session.N.jsonl`` it holds, so skipping one would silently replay
    fewer sessions than were recorded.
    """
    fix = "restore the log, or remove or rename it if that session should not be replayed."
    kind = not_a_file(path)
    if kind is not None:
        what = f"the session log is {kind}"
    else:
        reason = (exc.strerror or str(exc)) if exc is not None else "unknown error"
        what = f"cannot read the session log ({reason})"
    return LogParseError(
        f"{file}: {what}; {fix}",
        file=file,
        code="LOG_UNREADABLE",
    )



def ensure_log_file(path: str | Path, file: str) -> None:
    """Refuse, before opening it, a log that is not a regular file (a FIFO would block)."""
    if not_a_file(path) is not None:
        raise unreadable_log_error(path, file)
