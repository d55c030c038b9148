"""Reading a log of format generation 2 or later (SPEC 2b): one loop, whatever is fed.

Every model call of such a log is one settlement event (``assistant/message`` or
``assistant/attempt``) whose ``data.stream`` holds the call's chunks as compact records; a
forked child's inherited history ends at its last ``session/end-seed {inherited: true}``
marker. ``read_generation`` checks every line and feeds each call whole to a ``CallFeed``:
the loader's ``Deriver`` (keeping the chunks, strict or lenient) or the validator's
``Checker`` (counting them), so loading, ``validate`` and authoring read one way.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from ..errors import LogParseError
from ..jsonnumbers import MAX_SAFE_INTEGER, as_safe_integer, is_number
from .callkeys import Undefined, call_key
from .logs import decode_line, too_deep_line_error

SETTLEMENTS = frozenset({"assistant/message", "assistant/attempt"})
END_SEED = "session/end-seed"
COMPACTION = "compaction/summary"
_RUNS = {"text-chunks": "text-delta", "reasoning-chunks": "reasoning-delta",
         "tool-call-chunks": "tool-call-delta"}
_CHUNK_KEYS = frozenset({"type", "time", "chunk"})
_TEXT_KEYS = frozenset({"type", "time0", "index", "dt", "texts"})
_TOOL_KEYS = frozenset({"type", "time0", "index", "dt", "id", "args"})
_NEGATIVE_ZERO_INDEX = re.compile(rb'"index"\s*:\s*-0(?![0-9.eE])')


class CallFeed(Protocol):
    """What a generation reader feeds: whole calls and compaction events."""

    file: str | None

    def call(self, key: str, chunks: list[dict[str, Any]], times: array[int],
             first_line: int, last_line: int) -> None: ...
    def compaction(self, data: Any, time: Any, line: int) -> None: ...


@dataclass(slots=True)
class GenerationLog:
    """What a v2+ log's reading found besides its calls."""

    header: dict[str, Any]
    """The header line as decoded (an object)."""
    inherited: int
    """The inherited-event count (SPEC 2b.3): reported as the log's ``seedLength``."""
    event_count: int
    warnings: list[str] = field(default_factory=list)


class _Data(msgspec.Struct, gc=False):
    turn: Any = Undefined
    step: Any = Undefined
    stream: Any = msgspec.UNSET
    inherited: Any = None


class _Event(msgspec.Struct, gc=False):
    """What the reader needs of an event line; other payloads are skipped, never built."""

    type: Any = None
    seq: Any = msgspec.UNSET
    time: Any = msgspec.UNSET
    data: _Data | None = None


_event_decoder = msgspec.json.Decoder(_Event)


def _where(file: str | None, line: int) -> str:
    return f"{file or '<log>'}:{line}"


def log_error(file: str | None, line: int, what: str, fix: str) -> LogParseError:
    """An error of a v2+ log line, naming the file and line."""
    return LogParseError(f"{_where(file, line)}: {what}; {fix}", file=file, line=line)


def _record_error(file: str | None, line: int, index: int, what: str) -> LogParseError:
    return log_error(file, line, f"settlement stream record {index}: {what}",
                     "each record must be chunk, text-chunks, reasoning-chunks or "
                     "tool-call-chunks exactly as SPEC 2b.4 describes; re-record the call or "
                     "fix the record")


def expand_stream(stream: list[Any], file: str | None, line: int,
                  raw: bytes = b"") -> tuple[list[dict[str, Any]], array[int]]:
    """The chunks of one settlement's ``data.stream`` and their times (SPEC 2b.4)."""
    chunks: list[dict[str, Any]] = []
    times = array("q")
    for k, record in enumerate(stream):
        if not isinstance(record, dict):
            raise _record_error(file, line, k, "not an object")
        kind = record.get("type")
        if kind == "chunk":
            if record.keys() != _CHUNK_KEYS:
                raise _record_error(file, line, k, f"keys must be type, time, chunk (got "
                                    f"{', '.join(sorted(map(str, record)))})")
            t = as_safe_integer(record["time"])
            if t is None:
                raise _record_error(file, line, k, f"time must be a safe integer (got "
                                    f"{record['time']!r:.60})")
            chunk = record["chunk"]
            if not isinstance(chunk, dict):
                raise _record_error(file, line, k, "chunk must be a JSON object")
            chunks.append(chunk)
            times.append(t)
            continue
        target = _RUNS.get(kind) if isinstance(kind, str) else None
        if target is None or not isinstance(kind, str):
            raise _record_error(file, line, k, f"unsupported record (type {kind!r:.60})")
        _expand_run(record, kind, target, file, line, k, raw, chunks, times)
    return chunks, times


def _expand_run(record: dict[str, Any], kind: str, target: str, file: str | None, line: int,
                k: int, raw: bytes, chunks: list[dict[str, Any]], times: array[int]) -> None:
    keys = record.keys()
    tool = kind == "tool-call-chunks"
    if tool:
        if keys != _TOOL_KEYS and keys != _TOOL_KEYS | {"name"}:
            raise _record_error(file, line, k, "keys must be type, time0, index, dt, id, "
                                f"name?, args (got {', '.join(sorted(map(str, record)))})")
        payload_key = "args"
    else:
        if keys != _TEXT_KEYS:
            raise _record_error(file, line, k, "keys must be type, time0, index, dt, texts "
                                f"(got {', '.join(sorted(map(str, record)))})")
        payload_key = "texts"
    payload = record[payload_key]
    if not isinstance(payload, list) or not payload or not all(type(p) is str for p in payload):
        raise _record_error(file, line, k, f"{payload_key} must be a non-empty list of strings")
    time0 = as_safe_integer(record["time0"])
    if time0 is None:
        raise _record_error(file, line, k, f"time0 must be a safe integer (got "
                            f"{record['time0']!r:.60})")
    index = as_safe_integer(record["index"])
    if (index is None or index < 0 or isinstance(record["index"], float) and
            str(record["index"]).startswith("-")) or (index == 0 and raw and
                                                      _NEGATIVE_ZERO_INDEX.search(raw)):
        raise _record_error(file, line, k, f"index must be a non-negative safe integer (got "
                            f"{record['index']!r:.60})")
    dt = record["dt"]
    if not isinstance(dt, list) or len(dt) != len(payload) - 1:
        raise _record_error(file, line, k, f"dt must be a list of {len(payload) - 1} safe "
                            f"integer(s), one per gap between the members of {payload_key}")
    t = time0
    stamps = [t]
    for gap in dt:
        step = as_safe_integer(gap)
        if step is None:
            raise _record_error(file, line, k, f"dt holds {gap!r:.60}, not a safe integer")
        t += step
        if abs(t) > MAX_SAFE_INTEGER:
            raise _record_error(file, line, k, "a member's time is beyond the safe integers")
        stamps.append(t)
    if tool:
        ident = record["id"]
        if type(ident) is not str or not ident:
            raise _record_error(file, line, k, "id must be a non-empty string")
        template: dict[str, Any] = {"type": target, "index": index, "id": ident}
        if "name" in record:
            name = record["name"]
            if type(name) is not str or not name:
                raise _record_error(file, line, k, "name, when present, must be a non-empty "
                                    "string")
            template["name"] = name
        for member in payload:
            chunk = dict(template)
            chunk["argumentsDelta"] = member
            chunks.append(chunk)
    else:
        chunks.extend({"type": target, "index": index, "text": member} for member in payload)
    times.extend(stamps)


def read_generation(lines: Iterable[bytes], file: str | None, feed: CallFeed, *,
                    child: bool, generation: int) -> GenerationLog:
    """Read a v2+ log, feeding its calls (a child's from its inherited cut on) to ``feed``;
    its header's ``version`` must be the file name's ``generation``."""
    header: dict[str, Any] | None = None
    index = 0
    number = 0
    projected: bool | None = None
    first_of_kind = 0
    markers: list[tuple[int, int]] = []  # (event index, line) of inherited end-seed markers
    pending: list[tuple[int, Any]] = []  # a child's calls until its cut is known
    decode = _event_decoder.decode
    try:
        for raw in lines:
            number += 1
            if header is None:
                blank, value = decode_line(raw, file, number)
                if blank:
                    continue
                if not isinstance(value, dict):
                    raise log_error(file, number, "the header is not a JSON object",
                                    'the first line must be the session header {"type":'
                                    '"session","version":K,"id":…,"createdAt":…}')
                check_generation(value, file, generation, number)
                header = value
                continue
            try:
                event = decode(raw)
            except (msgspec.DecodeError, RecursionError):
                blank, value = decode_line(raw, file, number)
                if blank:
                    continue
                if not isinstance(value, dict):
                    raise log_error(file, number, "the line is not a JSON object",
                                    "every line of a v2+ session log is one event object; fix "
                                    "or remove the line") from None
                event = _loose_event(value)
            has_seq = event.seq is not msgspec.UNSET
            has_time = event.time is not msgspec.UNSET
            if has_seq != has_time:
                missing = "time" if has_seq else "seq"
                raise log_error(file, number, f"the event has {'seq' if has_seq else 'time'} "
                                f"but no {missing}", "an event carries both seq and time, or "
                                "(in a projected log) neither")
            if projected is None:
                projected, first_of_kind = not has_seq, number
            elif projected == has_seq:
                kinds = ("projected", "complete") if projected else ("complete", "projected")
                raise log_error(file, number, f"a {kinds[1]} event in a {kinds[0]} log (its "
                                f"first event, line {first_of_kind}, is {kinds[0]})",
                                "write every event with seq and time, or every event without")
            kind = event.type
            if kind in SETTLEMENTS:
                item = _settlement(event, raw, file, number)
                if item is not None:
                    if child:
                        pending.append((index, item))
                    else:
                        feed.call(*item)
            elif kind == COMPACTION:
                data = _full_data(raw, file, number)
                time = 0 if projected else event.time
                if child:
                    pending.append((index, (data, time, number)))
                else:
                    feed.compaction(data, time, number)
            elif kind == END_SEED and event.data is not None and event.data.inherited is True:
                markers.append((index, number))
            index += 1
    except RecursionError:
        raise too_deep_line_error(file, number) from None
    if header is None:
        raise log_error(file, max(number, 1), "the log is empty", "a v2+ session log starts "
                        "with its session header line")
    seeded = header.get("isSeeded") is True
    if seeded and not markers:
        raise log_error(file, 1, "the header says isSeeded but the log has no "
                        "session/end-seed {inherited: true} marker", "restore the marker that "
                        "ends the inherited history, or set isSeeded to false")
    if markers and not seeded:
        raise log_error(file, markers[0][1], "a session/end-seed {inherited: true} marker in a "
                        "log whose header is not seeded", "set isSeeded to true in the header, "
                        "or remove the marker")
    inherited = markers[-1][0] if markers else 0
    for at, item in pending:
        if at >= inherited:
            if len(item) == 5:
                feed.call(*item)
            else:
                feed.compaction(*item)
    return GenerationLog(header, inherited, index)


def _loose_event(value: dict[str, Any]) -> _Event:
    """An event object whose ``data`` the fast decoder could not take (kept as read)."""
    data = value.get("data")
    fields = _Data()
    if isinstance(data, dict):
        fields = _Data(data.get("turn", Undefined), data.get("step", Undefined),
                       data.get("stream", msgspec.UNSET), data.get("inherited"))
    event = _Event(value.get("type"), value.get("seq", msgspec.UNSET),
                   value.get("time", msgspec.UNSET), fields if isinstance(data, dict) else None)
    return event


def _full_data(raw: bytes, file: str | None, line: int) -> Any:
    """The whole ``data`` of an event (compaction reads its raw output)."""
    _, value = decode_line(raw, file, line)
    return value.get("data") if isinstance(value, dict) else None


def _settlement(event: _Event, raw: bytes, file: str | None,
                line: int) -> tuple[str, list[dict[str, Any]], array[int], int, int] | None:
    """A settlement's call (key, chunks, times, lines), or None for an empty stream."""
    data = event.data
    if data is None:
        raise log_error(file, line, f"the {event.type} settlement has no data object",
                        "restore its data (turn, step, stream)")
    if data.stream is msgspec.UNSET or not isinstance(data.stream, list):
        raise log_error(file, line, f"the {event.type} settlement's data.stream is not a list",
                        "restore the call's stream records (SPEC 2b.4)")
    chunks, times = expand_stream(data.stream, file, line, raw)
    if not chunks:
        return None
    return call_key(data.turn, data.step), chunks, times, line, line


def check_generation(value: Any, file: str | None, generation: int, line: int = 1) -> None:
    """The file name's generation must be the header's ``version`` (SPEC 2b.1)."""
    version = value.get("version") if isinstance(value, dict) else None
    if generation >= 1:
        if as_safe_integer(version) != generation or not is_number(version):
            raise log_error(file, line, f"the file name says generation {generation} but the "
                            f"header's version is {version!r:.60}", "name the log "
                            "session[.N].vK.jsonl after its header's version K, or fix the "
                            "header")
    elif isinstance(version, int | float) and not isinstance(version, bool) and version >= 2:
        raise log_error(file, line, f"the header's version is {version!r} but the file name "
                        "carries no generation", f"a version {version!r} log must be named "
                        f"session[.N].v{version!r}.jsonl")
