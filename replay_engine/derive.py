"""Derive one session's script of model calls from its events (SPEC section 3).

``Deriver`` holds the grouping rules once; both the public
``derive_replay_script`` (events as dicts) and the streaming file loader feed it.
"""

from __future__ import annotations

import io
import math
import struct
from array import array
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import setitem
from pathlib import Path
from typing import Any

import msgspec

from .logs import PACKED_CHUNK_TYPES, decode_line, header_from_value, unreadable_log_error
from .logscan import (
    _NO_TIME,
    PackedFields,
    Sink,
    _Undefined,
    call_key,
    compaction_chunks,
    gc_paused,
    js_string,
    line_decoder,
    missing_chunk_error,
    packed_fields,
    seed_start,
    slow_line,
    unfinished_call_error,
)
from .models import ChunksEntry, ScriptEntry, SessionHeader

__all__ = [
    "Deriver",
    "LoadedLog",
    "call_key",
    "derive_log_bytes",
    "derive_replay_script",
    "js_string",
    "load_log",
]

# The names the lenient authoring reader shares with the loader (and ``_Sink`` below).
_gc_paused = gc_paused
_slow_line = slow_line


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
            raise unfinished_call_error(
                self.file, key, position, self._first_line, self._last_line
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
            raise missing_chunk_error(self.file, key, line)
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
        chunks = compaction_chunks(data, self.file, line)
        if chunks is None:
            return
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
# The line Structs and the slow path are in ``logscan`` (shared with the check-only reader);
# here the chunks of packed rows are built a whole row at a time.

_SAFE_RUN = 1000
"""Packed rows up to this many members cannot reach the int64 limits (1000 * 2^53 < 2^63)."""
_INT64_MIN = -(2**63)
_SHARED_TEXTS = 4096
"""Distinct member texts shared per log (the most frequent tokens come early); a bigger table
no longer fits the CPU caches and costs more time than the memory it saves."""
_pack = struct.pack


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


class _Sink(Sink):
    """The sink of a deriver that keeps the chunks: finishing returns the script."""

    __slots__ = ()
    deriver: Deriver

    def finish(self, count: int) -> list[ScriptEntry]:
        """Apply what a negative seed held back, then finish the script."""
        self.flush(count)
        return self.deriver.finish()


def _packed_run(
    raw: bytes, kind: str, texts_seen: dict[str, str], deriver: Deriver
) -> tuple[str, list[dict[str, Any]], array[int]] | None:
    """A well-formed, ordinary packed row as (key, chunks, times); None sends it the slow way.

    Member texts repeat (they are model tokens): equal ones share one string object, through a
    table of the first texts seen, kept small so that looking texts up stays cheap.
    """
    share = texts_seen.setdefault if len(texts_seen) < _SHARED_TEXTS else texts_seen.get
    fields: PackedFields | None = packed_fields(raw, kind)
    if fields is None:
        return None
    row, payload, ident, name = fields
    data = row.data
    turn, step, index, dt = data.turn, data.step, data.index, data.dt
    count = len(payload)
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
    ev_decode = line_decoder.decode
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
                start = sink.start = seed_start(seed)
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
