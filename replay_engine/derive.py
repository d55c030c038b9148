"""Derive one session's script of model calls from its events (SPEC section 3).

``Deriver`` holds the grouping rules once; both the public
``derive_replay_script`` (events as dicts) and the streaming file loader feed it.
"""

from __future__ import annotations

import gc
import io
import math
import struct
from array import array
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import setitem
from pathlib import Path
from typing import Annotated, Any

import msgspec

from .errors import DerivationError
from .logs import (
    PACKED_CHUNK_TYPES,
    decode_line,
    expand_packed_row,
    header_from_value,
    null_event_error,
    unreadable_log_error,
)
from .models import ChunksEntry, ScriptEntry, SessionHeader

_FINISH_STOP = {"kind": "stop"}


class _UndefinedType:
    def __repr__(self) -> str:
        return "undefined"


_Undefined: Any = _UndefinedType()
"""A key absent from an event (JavaScript's ``undefined``)."""

_NO_TIME: Any = msgspec.UNSET
"""The ``time`` of an event that leaves it out (a projected log): recorded as 0 and counted."""


def js_string(value: Any) -> str:
    """Render a JSON value the way JavaScript's ``String()`` does, for call keys."""
    if value is _Undefined:
        return "undefined"
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)
    return "[object Object]"


def call_key(turn: Any, step: Any) -> str:
    """``turn/step`` compared as text (``1``, ``1.0`` and ``"1"`` are one key)."""
    return f"{js_string(turn)}/{js_string(step)}"


class Deriver:
    """Groups chunk events into calls; ``finish()`` returns the script."""

    __slots__ = ("file", "entries", "lenient", "unfinished", "untimed", "_key", "_chunks",
                 "_times", "_first_line", "_last_line")

    def __init__(self, file: str | None = None, *, lenient: bool = False) -> None:
        self.file = file
        self.entries: list[ScriptEntry] = []
        self.lenient = lenient
        """Keep a call without a finish chunk as a chunks entry instead of raising (authoring)."""
        self.unfinished: list[int] = []
        """Indices in ``entries`` of the calls kept that way (lenient mode only)."""
        self.untimed = 0
        """Chunk events and packed rows that left their time out (projected log): they pace
        with no gap."""
        self._key: str | None = None
        self._chunks: list[dict[str, Any]] = []
        self._times: array[int] = array("q")
        self._first_line = 0
        self._last_line = 0

    def _close(self) -> None:
        key = self._key
        if key is None:
            return
        chunks = self._chunks
        if not chunks or not isinstance(chunks[-1], dict) or chunks[-1].get("type") != "finish":
            position = len(self.entries)
            if self.lenient:
                self.unfinished.append(position)
                self._add(key, chunks, self._times)
                return
            where = f"{self.file or '<log>'}:{self._first_line}-{self._last_line}"
            raise DerivationError(
                f"{where}: model call {key} (call #{position} of the script) ended "
                "without a finish chunk: the stream threw while it was recorded, so the call "
                "cannot be derived. This scenario needs a replay.override.json sidecar holding "
                "a bare list of entries that replaces the derived script, with a throw or hang "
                "entry for that call (a patches sidecar cannot help: derivation fails first). "
                f"Quickest fix: dsh-replay override SCENARIO --at {position} --throw MESSAGE "
                "--code CODE (or --hang) writes it, every other call as recorded.",
                call_key=key,
                file=self.file,
                line=self._last_line,
                code="UNFINISHED_CALL",
            )
        self._add(key, chunks, self._times)

    def _add(self, key: str, chunks: list[dict[str, Any]], times: array[int]) -> None:
        entry = ChunksEntry.model_construct(kind="chunks", chunks=chunks)
        self.entries.append(
            ScriptEntry(
                entry=entry,
                origin="derived",
                call_key=key,
                lines=(self._first_line, self._last_line),
                times=times,
            )
        )
        self._key = None
        self._chunks = []
        self._times = array("q")

    def chunk(self, key: str, chunk: Any, time: Any, line: int) -> None:
        """One ``assistant/chunk``: open or continue the group under ``key``."""
        if chunk is None:
            raise DerivationError(
                f"{self.file or '<log>'}:{line}: assistant/chunk event of call {key} has no "
                "data.chunk; restore the chunk or remove the event.",
                call_key=key,
                file=self.file,
                line=line,
            )
        if self._key != key:
            if self._key is not None:
                self._close()
            self._key = key
            self._first_line = line
        self._last_line = line
        self._chunks.append(chunk)
        self._times.append(time if type(time) is int and -(2**63) < time < 2**63 else self._time(time))
        if isinstance(chunk, dict) and chunk.get("type") == "finish":
            self._add(key, self._chunks, self._times)

    def _time(self, value: Any) -> int:
        """A time that is not a plain int64: a missing one is 0 and counted, others as SPEC says."""
        if value is _NO_TIME:
            self.untimed += 1
            return 0
        return _as_time(value)

    def run(self, key: str, chunks: list[dict[str, Any]], times: array[int], line: int) -> None:
        """The delta chunks of one packed row at once (same as ``chunk`` per member; never a finish)."""
        if self._key != key:
            if self._key is not None:
                self._close()
            self._key = key
            self._first_line = line
        self._last_line = line
        if self._chunks:
            self._chunks.extend(chunks)
            self._times.extend(times)
        else:
            self._chunks = chunks
            self._times = times

    def compaction(self, data: Any, time: Any, line: int) -> None:
        """A ``compaction/summary`` event; a model call when ``llmStreamCall`` is true."""
        self._close()
        where = f"{self.file or '<log>'}:{line}"
        if not isinstance(data, dict):
            raise DerivationError(
                f"{where}: compaction/summary event has no data object; restore it or remove "
                "the event.",
                file=self.file,
                line=line,
            )
        if data.get("llmStreamCall") is not True:
            return
        raw = data.get("rawOutput")
        if not isinstance(raw, list):
            raise DerivationError(
                f"{where}: compaction/summary with llmStreamCall true needs data.rawOutput "
                "(a list of content blocks); restore it or set llmStreamCall to false.",
                file=self.file,
                line=line,
            )
        chunks: list[dict[str, Any]] = []
        for i, block in enumerate(raw):
            if block is None:
                raise DerivationError(
                    f"{where}: compaction/summary rawOutput[{i}] is null; every block must be "
                    "an object.",
                    file=self.file,
                    line=line,
                )
            start: dict[str, Any] = {"type": "block-start", "index": i}
            if isinstance(block, dict) and "type" in block:
                start["blockType"] = block["type"]
            chunks.append(start)
            chunks.append({"type": "block-end", "index": i, "block": block})
        if "usage" in data:
            chunks.append({"type": "usage", "usage": data["usage"]})
        chunks.append({"type": "finish", "reason": dict(_FINISH_STOP)})
        self._first_line = self._last_line = line
        t = _as_time(time)
        self._add("compaction", chunks, array("q", [t] * len(chunks)))

    def finish(self) -> list[ScriptEntry]:
        """Close the last group and return the derived entries."""
        self._close()
        return self.entries


def _as_time(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) < value < 2**63:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return 0


def _feed_event(deriver: Deriver, event: Any, line: int) -> None:
    if not isinstance(event, dict):
        return
    kind = event.get("type")
    if kind == "assistant/chunk":
        data = event.get("data")
        if not isinstance(data, dict):
            data = {}
        deriver.chunk(
            call_key(data.get("turn", _Undefined), data.get("step", _Undefined)),
            data.get("chunk"),
            event.get("time"),
            line,
        )
    elif kind == "compaction/summary":
        deriver.compaction(event.get("data"), event.get("time"), line)


def derive_replay_script(events: list[Any], file: str | None = None) -> list[ScriptEntry]:
    """Derive the calls of one session from its events (header excluded, rows expanded)."""
    deriver = Deriver(file)
    for index, event in enumerate(events):
        _feed_event(deriver, event, index + 1)
    return deriver.finish()


# --- the streaming loader ---------------------------------------------------------------
#
# Each line is decoded once into a small Struct holding only what derivation reads (type,
# time, data.turn/step/chunk): the payloads of the events it ignores are skipped, never
# built. Packed rows are checked by a strict Struct and expanded a whole row at a time.
# Anything unusual on a line (blank, not an object, malformed, an odd packed row, a
# compaction) goes through ``_slow_line``: the exact rules of ``parse_session_log`` and
# ``derive_replay_script``, so results and errors (naming the line) are the same. One
# difference: inside the payloads derivation ignores, only JSON syntax is checked, so invalid
# UTF-8 or a number beyond double range there is not an error (JavaScript reads both).

_MAX_SAFE = 2**53 - 1
_SAFE_RUN = 1000
"""Packed rows up to this many members cannot reach the int64 limits (1000 * 2^53 < 2^63)."""
_INT64_MIN = -(2**63)
_SHARED_TEXTS = 4096
"""Distinct member texts shared per log (the most frequent tokens come early); a bigger table
no longer fits the CPU caches and costs more time than the memory it saves."""


class _ChunkData(msgspec.Struct, gc=False):
    turn: Any = _Undefined
    step: Any = _Undefined
    chunk: Any = None


class _Event(msgspec.Struct, gc=False):
    """What derivation reads of a line; other keys (and other events' payloads) are skipped."""

    type: Any = None
    time: Any = _NO_TIME
    data: _ChunkData | None = None


_SafeInt = Annotated[int, msgspec.Meta(ge=-_MAX_SAFE, le=_MAX_SAFE)]


class _PackedData(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    turn: int | float
    step: int | float
    index: int | float
    dt: list[_SafeInt]
    texts: list[str] | msgspec.UnsetType = msgspec.UNSET
    id: str | msgspec.UnsetType = msgspec.UNSET
    name: str | msgspec.UnsetType = msgspec.UNSET
    args: list[str] | msgspec.UnsetType = msgspec.UNSET


class _PackedRow(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A packed row as SPEC section 2 allows it (integers given as floats go the slow way).

    A projected row leaves ``seq0`` and/or ``time0`` out: ``seq0`` is never read here (only
    ``parse_session_log`` reports it) and a missing ``time0`` is 0. A present ``null`` or
    string fails to decode, so the row goes the slow way, which names the error.
    """

    type: str
    data: _PackedData
    seq0: Annotated[int, msgspec.Meta(ge=0, le=_MAX_SAFE)] = 0
    time0: _SafeInt | msgspec.UnsetType = msgspec.UNSET


_event_decoder = msgspec.json.Decoder(_Event)
_pack = struct.pack
_packed_decoder = msgspec.json.Decoder(_PackedRow)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Collecting while millions of kept objects are allocated is most of the cost."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass(slots=True)
class LoadedLog:
    """A parsed and derived session log."""

    header: SessionHeader
    entries: list[ScriptEntry]
    event_count: int
    untimed: int = 0
    """Chunk events and packed rows that left their time out (see ``Deriver.untimed``)."""


def load_log(path: str | Path, *, seed_length: bool = False, name: str | None = None) -> LoadedLog:
    """Stream a log file from disk, derive its script; slice by the header's seedLength if asked."""
    file = name or str(path)
    try:
        with open(path, "rb") as handle, _gc_paused():
            return _derive_lines(handle, file, seed_length)
    except OSError as exc:  # cannot open, or a read fails midway (EIO)
        raise unreadable_log_error(path, file, exc) from None


def derive_log_bytes(data: bytes, file: str | None = None, *, seed_length: bool = False) -> LoadedLog:
    """Derive a log held in memory (same rules as ``load_log``)."""
    with _gc_paused():
        return _derive_lines(io.BytesIO(data), file, seed_length)


_Item = tuple[int, int, Any, Any, Any, int]
"""(event index, what, ...): 0 = chunk (key, chunk, time), 1 = compaction (data, time, -),
2 = packed run (key, chunks, times); then the line."""


class _Sink:
    """Feeds the deriver the events at or after the seed index (SPEC section 3, children)."""

    __slots__ = ("deriver", "start", "pending")

    def __init__(self, deriver: Deriver) -> None:
        self.deriver = deriver
        self.start = 0
        self.pending: list[_Item] | None = None
        """Events kept until the end when a negative seed counts from the end."""

    def put(self, item: _Item) -> None:
        """Apply the item now, keep it for later, or drop it (before the seed index)."""
        if self.pending is not None:
            self.pending.append(item)
        elif item[0] + (len(item[3]) if item[1] == 2 else 1) > self.start:
            _apply(self.deriver, item, self.start)

    def finish(self, count: int) -> list[ScriptEntry]:
        """Apply what a negative seed held back (the last ``-seed`` events), then finish."""
        if self.pending is not None:
            first = max(0, count + self.start)
            for item in self.pending:
                if item[0] + (len(item[3]) if item[1] == 2 else 1) > first:
                    _apply(self.deriver, item, first)
        return self.deriver.finish()


def _apply(deriver: Deriver, item: _Item, first: int) -> None:
    """Feed one item, skipping the members of a packed run before index ``first``."""
    index, what, a, b, c, line = item
    if what == 0:
        deriver.chunk(a, b, c, line)
    elif what == 1:
        deriver.compaction(a, b, line)
    else:
        skip = first - index
        if skip > 0:
            b, c = b[skip:], c[skip:]
        deriver.run(a, b, c, line)


def _slow_line(raw: bytes, number: int, index: int, sink: _Sink, file: str | None) -> int:
    """One line by the exact generic rules; returns the next event index."""
    blank, value = decode_line(raw, file, number)
    if blank:
        return index
    if value is None:
        raise null_event_error(file, number)
    if not isinstance(value, dict):
        return index + 1
    kind = value.get("type")
    if isinstance(kind, str) and kind in PACKED_CHUNK_TYPES:
        for turn, step, t, chunk in expand_packed_row(value, file, number, index):
            sink.put((index, 0, call_key(turn, step), chunk, t, number))
            index += 1
        if "time0" not in value:
            sink.deriver.untimed += 1
        return index
    if kind == "assistant/chunk":
        data = value.get("data")
        if not isinstance(data, dict):
            data = {}
        key = call_key(data.get("turn", _Undefined), data.get("step", _Undefined))
        sink.put((index, 0, key, data.get("chunk"), value.get("time", _NO_TIME), number))
    elif kind == "compaction/summary":
        sink.put((index, 1, value.get("data"), value.get("time"), None, number))
    return index + 1


def _packed_run(
    raw: bytes, kind: str, texts_seen: dict[str, str], deriver: Deriver
) -> tuple[str, list[dict[str, Any]], array[int]] | None:
    """A well-formed, ordinary packed row as (key, chunks, times); None sends it the slow way.

    Member texts repeat (they are model tokens): equal ones share one string object, through a
    table of the first texts seen, kept small so that looking texts up stays cheap.
    """
    share = texts_seen.setdefault if len(texts_seen) < _SHARED_TEXTS else texts_seen.get
    try:
        row = _packed_decoder.decode(raw)
    except msgspec.DecodeError:
        return None
    if row.type != kind:  # a repeated "type" key: the last one counts
        return None
    data = row.data
    turn, step, index, dt = data.turn, data.step, data.index, data.dt
    if kind == "tool-call-chunks":
        payload, ident, name = data.args, data.id, data.name
        if (
            isinstance(payload, msgspec.UnsetType)
            or isinstance(ident, msgspec.UnsetType)
            or not isinstance(data.texts, msgspec.UnsetType)
        ):
            return None
    else:
        payload = data.texts
        if (
            isinstance(payload, msgspec.UnsetType)
            or not isinstance(data.args, msgspec.UnsetType)
            or not isinstance(data.id, msgspec.UnsetType)
            or not isinstance(data.name, msgspec.UnsetType)
        ):
            return None
    count = len(payload)
    if not count or len(dt) != count - 1:
        return None
    time0 = row.time0
    untimed = isinstance(time0, msgspec.UnsetType)  # a projected row: its members start at 0
    if untimed:
        time0 = 0
    try:  # struct packs faster than array() converts
        packed = _pack(f"{count}q", *accumulate(dt, initial=time0))
    except struct.error:  # a time beyond int64: the slow way records it as 0
        return None
    times = array("q")
    times.frombytes(packed)
    if count > _SAFE_RUN and min(times) == _INT64_MIN:  # also recorded as 0
        return None
    template: dict[str, Any] = {"type": PACKED_CHUNK_TYPES[kind], "index": index}
    if kind != "tool-call-chunks":
        field = "text"
    else:
        template["id"] = ident
        if not isinstance(name, msgspec.UnsetType):
            template["name"] = name
        field = "argumentsDelta"
    template[field] = None
    # One copy of the template per member, then its text set: C loops, no bytecode per member.
    chunks = list(map(dict.copy, repeat(template, count)))
    deque(map(setitem, chunks, repeat(field), map(share, payload, payload)), maxlen=0)
    key = f"{turn}/{step}" if type(turn) is int and type(step) is int else call_key(turn, step)
    if untimed:
        deriver.untimed += 1
    return key, chunks, times


def _derive_lines(lines: Iterable[bytes], file: str | None, use_seed: bool) -> LoadedLog:
    """Derive from the log's lines (split on b"\\n"); the header is the first non-blank line."""
    header: SessionHeader | None = None
    deriver = Deriver(file)
    sink = _Sink(deriver)
    put = sink.put
    add_chunk = deriver.chunk
    add_run = deriver.run
    start = 0
    direct = True  # no seed to honour (or it is passed): feed the deriver, not the sink
    index = 0
    number = 0
    ev_decode = _event_decoder.decode
    texts_seen: dict[str, str] = {}
    keys: dict[tuple[int, int], str] = {}  # call keys of integer turn/step, made once
    for raw in lines:
        number += 1
        if header is None:
            blank, value = decode_line(raw, file, number)
            if blank:
                continue
            header = header_from_value(value, file, number)
            if use_seed:
                seed = header.seedLength
                start = sink.start = int(seed) if math.isfinite(seed) else 0
                if start < 0:
                    sink.pending = []
                direct = start == 0
            continue
        try:
            event = ev_decode(raw)
        except msgspec.DecodeError:
            index = _slow_line(raw, number, index, sink, file)
            continue
        kind = event.type
        if kind == "assistant/chunk":
            data = event.data
            if data is None:
                turn = step = _Undefined
                chunk = None
            else:
                turn, step, chunk = data.turn, data.step, data.chunk
            if type(turn) is int and type(step) is int:
                key = keys.get((turn, step))
                if key is None:
                    key = keys[turn, step] = f"{turn}/{step}"
            else:
                key = call_key(turn, step)
            if direct:
                add_chunk(key, chunk, event.time, number)
            else:
                put((index, 0, key, chunk, event.time, number))
                direct = sink.pending is None and index + 1 >= start
            index += 1
        elif type(kind) is str and kind in PACKED_CHUNK_TYPES:
            run = _packed_run(raw, kind, texts_seen, deriver)
            if run is None:
                index = _slow_line(raw, number, index, sink, file)
                direct = sink.pending is None and index >= start
            else:
                key, chunks, times = run
                if direct:
                    add_run(key, chunks, times, number)
                else:
                    put((index, 2, key, chunks, times, number))
                index += len(chunks)
                direct = sink.pending is None and index >= start
        elif kind == "compaction/summary":
            index = _slow_line(raw, number, index, sink, file)
            direct = sink.pending is None and index >= start
        else:
            index += 1
    entries = sink.finish(index)
    return LoadedLog(header or SessionHeader(), entries, index, deriver.untimed)
