"""A settlement's ``data.stream`` (docs/format.md#settlement-streams): compact records back to the call's
chunks.

Two readings, one result. ``fast_stream`` takes the records as typed Structs that already
hold every key and type rule, builds the delta chunks of a run a whole run at a time and
checks only what it did not build (the ``chunk`` records); anything it is not sure of sends
the line to ``expand_stream``, the exact rules on decoded JSON, which names the error.
"""

from __future__ import annotations

from array import array
from collections import deque
from itertools import accumulate, repeat
from operator import setitem
from typing import Annotated, Any

import msgspec

from ..chunkshape import TEXT_FIELDS
from ..errors import LogParseError
from ..jsonlimits import ShallowJson
from ..jsonnumbers import MAX_SAFE_INTEGER, as_safe_integer
from .callkeys import bad_chunk_error, chunk_shape_problem
from .kept import check_kept
from .layout import log_error
from .logscan import ChunkShape

RUNS = {"text-chunks": "text-delta", "reasoning-chunks": "reasoning-delta",
        "tool-call-chunks": "tool-call-delta"}
_CHUNK_RECORD_KEYS = frozenset({"type", "time", "chunk"})
_TEXT_KEYS = frozenset({"type", "time0", "index", "dt", "texts"})
_TOOL_KEYS = frozenset({"type", "time0", "index", "dt", "id", "args"})


def _record_error(file: str | None, line: int, index: int, what: str) -> LogParseError:
    return log_error(file, line, f"settlement stream record {index}: {what}",
                     "each record must be chunk, text-chunks, reasoning-chunks or "
                     "tool-call-chunks exactly as docs/format.md#settlement-streams describes; re-record "
                     "the call or fix the record")


# --- the exact rules -------------------------------------------------------------------------


class _WrittenIndex(msgspec.Struct, gc=False):
    index: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class _RawStream(msgspec.Struct, gc=False):
    stream: list[msgspec.Raw] | msgspec.UnsetType = msgspec.UNSET


class _RawLine(msgspec.Struct, gc=False):
    data: _RawStream | None = None


def _written_indexes(raw: bytes) -> list[bytes | None]:
    """Each record's ``index`` as written in the line (``-0`` and ``0`` decode alike)."""
    try:
        line = msgspec.json.decode(raw, type=_RawLine)
    except (msgspec.DecodeError, RecursionError):
        return []
    records = line.data.stream if line.data is not None else msgspec.UNSET
    if isinstance(records, msgspec.UnsetType):
        return []
    out: list[bytes | None] = []
    for record in records:
        try:
            index = msgspec.json.decode(record, type=_WrittenIndex).index
        except (msgspec.DecodeError, RecursionError):
            index = msgspec.UNSET
        out.append(None if isinstance(index, msgspec.UnsetType) else bytes(index))
    return out


def expand_stream(stream: list[Any], file: str | None, line: int, key: str = "",
                  raw: bytes = b"", suspect: bool = True
                  ) -> tuple[list[dict[str, Any]], array[int]]:
    """The chunks of one settlement's ``data.stream`` and their times, every record checked
    in order, then every recorded chunk's shape (``raw``: the line, to tell ``-0``;
    ``suspect``: it may hold a chunk a sidecar refuses, ``logs.kept_may_fail``)."""
    chunks: list[dict[str, Any]] = []
    times = array("q")
    recorded: list[tuple[int, dict[str, Any]]] = []
    written = _written_indexes(raw) if raw else []
    for k, record in enumerate(stream):
        if not isinstance(record, dict):
            raise _record_error(file, line, k, "not an object")
        kind = record.get("type")
        if kind == "chunk":
            if record.keys() != _CHUNK_RECORD_KEYS:
                raise _record_error(file, line, k, f"keys must be type, time, chunk (got "
                                    f"{', '.join(sorted(map(str, record)))})")
            t = as_safe_integer(record["time"])
            if t is None:
                raise _record_error(file, line, k, f"time must be a safe integer (got "
                                    f"{record['time']!r:.60})")
            chunk = record["chunk"]
            if not isinstance(chunk, dict):
                raise _record_error(file, line, k, "chunk must be a JSON object")
            if suspect:
                check_kept(chunk, file, line, f"$.data.stream[{k}].chunk")
            recorded.append((len(chunks), chunk))
            chunks.append(chunk)
            times.append(t)
            continue
        target = RUNS.get(kind) if isinstance(kind, str) else None
        if target is None or not isinstance(kind, str):
            raise _record_error(file, line, k, f"unsupported record (type {kind!r:.60})")
        _expand_run(record, kind, target, file, line, k, written[k] if k < len(written) else None,
                    chunks, times)
    for _, chunk in recorded:
        problem = chunk_shape_problem(chunk)
        if problem is not None:
            raise bad_chunk_error(file, key, line, problem)
    return chunks, times


def _expand_run(record: dict[str, Any], kind: str, target: str, file: str | None, line: int,
                k: int, written: bytes | None, chunks: list[dict[str, Any]],
                times: array[int]) -> None:
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
    if index is None or index < 0 or (index == 0 and (
            written is not None and written.lstrip().startswith(b"-")
            or isinstance(record["index"], float) and str(record["index"]).startswith("-"))):
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
        name = record.get("name")
        if "name" in record and (type(name) is not str or not name):
            raise _record_error(file, line, k, "name, when present, must be a non-empty string")
    _add_members(chunks, target, index, payload, record["id"] if tool else None,
                 record["name"] if tool and "name" in record else msgspec.UNSET)
    times.extend(stamps)


def _add_members(chunks: list[dict[str, Any]], target: str, index: int, payload: list[str],
                 ident: str | None, name: Any) -> None:
    """One delta chunk per member of a run (``name`` only when the record has it)."""
    template: dict[str, Any] = {"type": target, "index": index}
    if ident is None:
        text = "text"
    else:
        template["id"] = ident
        if name is not msgspec.UNSET:
            template["name"] = name
        text = "argumentsDelta"
    template[text] = None
    start = len(chunks)
    chunks.extend(map(dict.copy, repeat(template, len(payload))))
    deque(map(setitem, chunks[start:], repeat(text), payload), maxlen=0)


# --- the fast reading: typed records ---------------------------------------------------------

_SafeInt = Annotated[int, msgspec.Meta(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
_GAP = 2**32
"""The largest gap between two members' times the fast reading takes (about 50 days): any
member time of a run is then a safe integer unless the run starts near the limit. A bigger
gap goes the exact way."""
_Gap = Annotated[int, msgspec.Meta(ge=-_GAP, le=_GAP)]
_Payload = Annotated[list[str], msgspec.Meta(min_length=1)]
_Name = Annotated[str, msgspec.Meta(min_length=1)]


class ChunkRecord(msgspec.Struct, tag="chunk", tag_field="type", forbid_unknown_fields=True,
                  gc=False):
    time: _SafeInt
    chunk: dict[str, ShallowJson]
    """Needs no further check (``jsonlimits.ShallowJson``): any other chunk reads the line by
    the exact rules."""


class ShapeRecord(msgspec.Struct, tag="chunk", tag_field="type", forbid_unknown_fields=True,
                  gc=False):
    """``ChunkRecord`` for a reader that keeps no chunk: the chunk read as its shape."""

    time: _SafeInt
    chunk: ChunkShape
    """Fits by decoding (``logscan.ChunkShape``); any other chunk reads the line the exact
    way."""


class TextRun(msgspec.Struct, tag="text-chunks", tag_field="type", forbid_unknown_fields=True,
              gc=False):
    time0: _SafeInt
    index: msgspec.Raw
    """As written: ``-0`` is refused, which the integer would hide."""
    dt: list[_Gap]
    texts: _Payload


class ReasoningRun(TextRun, tag="reasoning-chunks"):
    pass


class ToolRun(msgspec.Struct, tag="tool-call-chunks", tag_field="type",
              forbid_unknown_fields=True, gc=False):
    time0: _SafeInt
    index: msgspec.Raw
    dt: list[_Gap]
    id: _Name
    args: _Payload
    name: _Name | msgspec.UnsetType = msgspec.UNSET


Record = ChunkRecord | TextRun | ReasoningRun | ToolRun
"""A record as the loader reads it (chunks kept whole)."""
CheckedRecord = ShapeRecord | TextRun | ReasoningRun | ToolRun
"""A record as ``validate`` reads it (chunks as their shape)."""
_text_field = TEXT_FIELDS.get
_TARGETS = {TextRun: "text-delta", ReasoningRun: "reasoning-delta"}


def fast_stream(records: list[Any], keeps: bool
                ) -> tuple[list[Any] | None, array[int] | None, int, bool] | None:
    """The chunks and times (when ``keeps``), the chunk count and whether the last chunk is a
    finish, of typed records; None when a record needs the exact rules (they name the
    problem, if any)."""
    if not keeps:
        return _counted_stream(records)
    chunks: list[Any] = []
    times = array("q")
    finished = False
    for record in records:
        kind = type(record)
        if kind is ChunkRecord:
            last = record.chunk
            if type(ctype := last.get("type")) is str and (field := _text_field(ctype)) \
                    is not None and type(last.get(field, "")) is not str:
                return None
            chunks.append(last)
            times.append(record.time)
            finished = ctype == "finish"
            continue
        if not _run_fits(record):
            return None
        stamps = list(accumulate(record.dt, initial=record.time0))
        index = int(bytes(record.index))
        if kind is ToolRun:
            _add_members(chunks, "tool-call-delta", index, record.args, record.id, record.name)
        else:
            _add_members(chunks, _TARGETS[kind], index, record.texts, None, None)
        times.extend(stamps)
        finished = False
    return chunks, times, len(chunks), finished


def _counted_stream(records: list[Any]) -> tuple[None, None, int, bool] | None:
    """``fast_stream`` for a feed that keeps no chunk: a chunk record fits by decoding
    (``ChunkShape``), so only the runs are looked at."""
    count = len(records)
    shape = ShapeRecord
    for record in records:
        if type(record) is shape:
            continue
        if not _run_fits(record):
            return None
        count += len(record.dt)
    last = records[-1] if records else None
    return None, None, count, type(last) is shape and last.chunk.type == "finish"


def _run_fits(record: Any) -> bool:
    """Whether a typed run record holds to the run rules the types do not (an index written
    as plain digits, ``dt`` one shorter than the payload, every member time a safe integer);
    if not, the exact rules look at it."""
    written = bytes(record.index)
    if not written.isdigit() or len(written) > 15 and int(written) > MAX_SAFE_INTEGER:
        return False
    dt = record.dt
    if len(dt) != len(record.args if type(record) is ToolRun else record.texts) - 1:
        return False
    if abs(record.time0) + len(dt) * _GAP <= MAX_SAFE_INTEGER:
        return True
    stamps: list[int] = list(accumulate(dt, initial=record.time0))
    return max(stamps) <= MAX_SAFE_INTEGER and min(stamps) >= -MAX_SAFE_INTEGER
